"""A listener's Prometheus metrics and health endpoint (see docs/reference/metrics.md).

Each :class:`ListenerMetrics` has a registry of its own, so several listeners in one process (a
test, a broker embedding two) never clash over metric names. Everything but the latency
histogram is read from the listener when scraped (a collector, not gauges kept in step by hand),
so a scrape always shows the state the listener is in, even when its worker is stuck.

``/healthz`` answers 200 while the listener is connected and applying, 503 otherwise, with a
small JSON body saying why:

* ``starting``: the initial load has not finished;
* ``disconnected``: no ZooKeeper connection right now (kazoo is reconnecting);
* ``stalled``: work (a watch that fired, a reconnection, a reload) has waited undone for longer
  than the stall threshold, because the worker keeps failing, or the worker thread died. A
  listener with nothing to do is never stalled, however long it stays quiet;
* ``stopped``: the listener was stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from configctl.errors import EnvironmentProblem, one_line, printable
from configctl.handlers.base import KINDS

log = logging.getLogger("configctl.listener")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Seconds from a notification's creation (its ZooKeeper ctime) to the change being applied."""


class Observed(Protocol):
    """What the collector reads from a listener at scrape time."""

    def metrics_snapshot(self) -> Mapping[str, Any]: ...


class _Collector:
    """Turns the listener's counters and state into metric families, at scrape time."""

    def __init__(self, source: Observed) -> None:
        self.source = source

    def describe(self) -> Iterable[Metric]:
        return []  # collected lazily: describing would read the listener at registration

    def collect(self) -> Iterator[Metric]:
        s = self.source.metrics_snapshot()
        yield _gauge(
            "configctl_listener_last_applied_change",
            "The newest change number this broker has applied (-1: none seen yet).",
            s["last_applied_change"],
        )
        yield _counter(
            "configctl_listener_changes_applied",
            "Entity changes applied (coalesced notifications count once).",
            s["changes_applied"],
        )
        yield _counter(
            "configctl_listener_notifications_processed",
            "Change notifications processed.",
            s["notifications_processed"],
        )
        yield _gauge(
            "configctl_listener_notifications_pending",
            "Notifications seen in the last listing but not applied yet.",
            s["notifications_pending"],
        )
        problems = GaugeMetricFamily(
            "configctl_listener_problems",
            "Entries in the broker's problem list now, by kind.",
            labels=["kind"],
        )
        reported = CounterMetricFamily(
            "configctl_listener_problems_reported",
            "Problems reported (each distinct one once), by kind.",
            labels=["kind"],
        )
        for kind in KINDS:
            problems.add_metric([kind], s["problems"].get(kind, 0))
            reported.add_metric([kind], s["problems_reported"].get(kind, 0))
        yield problems
        yield reported
        yield _gauge(
            "configctl_listener_zookeeper_connected",
            "1 while the listener has a ZooKeeper connection.",
            1 if s["connected"] else 0,
        )
        yield _gauge("configctl_listener_healthy", "1 when /healthz answers 200.", 1 if s["healthy"] else 0)
        yield _counter(
            "configctl_listener_errors",
            "Worker steps that failed and were retried (lost connections, mostly).",
            s["errors"],
        )
        yield _counter("configctl_listener_full_loads", "Complete reloads of every config.", s["full_loads"])
        yield _counter(
            "configctl_listener_plugin_errors",
            "Plugins that failed to apply an accepted change.",
            s["plugin_errors"],
        )
        yield _gauge(
            "configctl_listener_applied_timestamp_seconds",
            "When the listener last finished a batch (Unix time; 0: never).",
            (s["applied_at_ms"] or 0) / 1000,
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


class ListenerMetrics:
    """One listener's registry: the scrape-time collector plus the apply-latency histogram."""

    def __init__(self, source: Observed) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.latency = Histogram(
            "configctl_listener_apply_latency_seconds",
            "From a change notification's creation in ZooKeeper (its ctime) to the change applied.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_Collector(source))  # type: ignore[arg-type]

    def observe(self, ctimes_ms: Sequence[int | None], applied_at: float | None = None) -> None:
        """Record the latency of each notification applied at ``applied_at`` (Unix seconds).

        ctime comes from the ZooKeeper leader's clock; a negative difference (clock skew) counts as 0.
        """
        now = time.time() if applied_at is None else applied_at
        for ctime in ctimes_ms:
            if ctime is not None:
                self.latency.observe(max(0.0, now - ctime / 1000))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


DEFAULT_ADDRESS = "127.0.0.1"
"""Where the metrics server listens unless told otherwise: loopback. The endpoint is plain,
unauthenticated HTTP that tells anyone who reaches it the broker's change numbers, problems and
health; what scrapes it beside the broker (a node agent, a sidecar proxy) reaches loopback, and a
wider address is one explicit ``--metrics-address 0.0.0.0`` (or ``::``) away."""

MAX_CONNECTIONS = 16
"""Connections served at once (one thread each). Scrapes are rare and answered in milliseconds, so
this is far above what Prometheus needs; a connection beyond it is closed at once, unread."""

IDLE_TIMEOUT_S = 5.0
"""The longest a connection may stay silent (no byte of its request, or a reader that stopped
reading our answer) before it is closed."""

CONNECTION_DEADLINE_S = 10.0
"""The longest any connection is held, however slowly it trickles bytes (Prometheus' own default
scrape timeout): past it the socket is shut down, which ends its thread's read or write."""


class _BoundedServer(ThreadingHTTPServer):
    """A threading HTTP server that holds at most :data:`MAX_CONNECTIONS` connections, none for
    longer than :data:`CONNECTION_DEADLINE_S`, and logs a client's misbehaviour as one debug line.

    Built from :mod:`socketserver`'s own hooks: ``process_request`` admits (or closes) a connection
    before its thread exists, ``service_actions`` (run by ``serve_forever`` every poll interval)
    shuts down the connections past their deadline, ``handle_error`` replaces the traceback that
    :mod:`socketserver` prints on stderr for every reset connection.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._open: dict[socket.socket, float] = {}
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug(
                "metrics endpoint: %s refused: %d connections open", _peer(client_address), MAX_CONNECTIONS
            )
            self.shutdown_request(request)
            return
        with self._open_lock:
            self._open[request] = time.monotonic() + CONNECTION_DEADLINE_S
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread could be started: give the slot back
            self._release(request)
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: socket.socket) -> None:
        with self._open_lock:
            if self._open.pop(request, None) is None:
                return
        self._slots.release()

    def service_actions(self) -> None:
        """Shut down every connection past its deadline; its thread then ends on its next read or write."""
        now = time.monotonic()
        with self._open_lock:
            late = [request for request, deadline in self._open.items() if deadline <= now]
        for request in late:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One escaped debug line per client error (a reset, a timeout), never a traceback."""
        error = sys.exc_info()[1]
        log.debug("metrics endpoint: %s: %s", _peer(client_address), printable(one_line(error or "error")))


def _peer(client_address: Any) -> str:
    """``host:port`` of a client, for a log line."""
    if isinstance(client_address, tuple) and len(client_address) >= 2:
        return f"{client_address[0]}:{client_address[1]}"
    return printable(str(client_address))


class MetricsServer:
    """``/metrics`` (Prometheus text) and ``/healthz`` (200 or 503, JSON) on one port.

    A threading HTTP server: scrapes are rare and cheap, and each is answered on its own thread,
    so a slow client never delays another (or the listener, which never waits for it). Bounded:
    at most :data:`MAX_CONNECTIONS` at once, each silent for at most :data:`IDLE_TIMEOUT_S` and
    held for at most :data:`CONNECTION_DEADLINE_S`, one request per connection (HTTP/1.0).
    ``address`` "" means :data:`DEFAULT_ADDRESS`.
    """

    def __init__(
        self,
        metrics: ListenerMetrics,
        health: Callable[[], tuple[bool, dict[str, Any]]],
        *,
        address: str = "",
        port: int = 0,
    ) -> None:
        self.metrics = metrics
        self.health = health
        address = address or DEFAULT_ADDRESS

        server_self = self

        class Handler(BaseHTTPRequestHandler):
            timeout = IDLE_TIMEOUT_S  # each read and write of the connection's socket

            def do_GET(self) -> None:
                server_self._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                # the request line is the client's text: escaped, so it cannot forge a log line
                log.debug("metrics endpoint: %s", printable(format % args))

        try:
            self.server = _BoundedServer((address, port), Handler)
        except (OSError, OverflowError) as exc:
            where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else one_line(exc)
            raise EnvironmentProblem(f"cannot serve metrics on {where}: {reason}") from None
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            name="configctl-metrics",
            kwargs={"poll_interval": 0.2},
            daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def address(self) -> str:
        return str(self.server.server_address[0])

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        try:
            if path == "/metrics":
                body, status, content_type = self.metrics.exposition(), 200, CONTENT_TYPE_LATEST
            elif path == "/healthz":
                ok, document = self.health()
                body = (json.dumps(document, separators=(",", ":")) + "\n").encode()
                status, content_type = (200 if ok else 503), "application/json"
            else:
                body, status, content_type = b"not found: try /metrics or /healthz\n", 404, "text/plain"
        except Exception as exc:  # never let a scrape kill the server thread
            log.debug("metrics endpoint failed: %s", printable(one_line(exc)))
            body, status, content_type = f"error: {one_line(exc)}\n".encode(), 500, "text/plain"
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(body)))
        request.send_header("Cache-Control", "no-store")
        request.end_headers()
        request.wfile.write(body)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


__all__ = [
    "CONNECTION_DEADLINE_S",
    "DEFAULT_ADDRESS",
    "IDLE_TIMEOUT_S",
    "LATENCY_BUCKETS",
    "MAX_CONNECTIONS",
    "ListenerMetrics",
    "MetricsServer",
]
