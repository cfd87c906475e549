"""A listener's Prometheus metrics and health endpoint (Contract 10).

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

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from configctl.errors import EnvironmentProblem, one_line
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
            "Entries in the broker's problem list now (Contract 7), by kind.",
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


class MetricsServer:
    """``/metrics`` (Prometheus text) and ``/healthz`` (200 or 503, JSON) on one port.

    A plain threading HTTP server: scrapes are rare and cheap, and each is answered on its own
    thread, so a slow client never delays another (or the listener, which never waits for it).
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

        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server_self._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("metrics endpoint: " + format, *args)

        try:
            self.server = ThreadingHTTPServer((address, port), Handler)
        except OSError as exc:
            where = f"{address or '0.0.0.0'}:{port}"
            raise EnvironmentProblem(
                f"cannot serve metrics on {where}: {exc.strerror or one_line(exc)}"
            ) from None
        self.server.daemon_threads = True
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
            log.debug("metrics endpoint failed", exc_info=True)
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


__all__ = ["LATENCY_BUCKETS", "ListenerMetrics", "MetricsServer"]
