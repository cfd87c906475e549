"""Safe by default: where the console may listen, who may ask it, and what every answer carries.

* It listens on loopback unless told otherwise; any other address needs a bearer token (a file or
  ``CONFIGCTL_SERVE_TOKEN``, never argv: argv is visible to every local user in ``ps``), and then
  every request must carry ``Authorization: Bearer <token>`` (401 otherwise; the scheme in any
  case, as RFC 7235 says).
* On loopback without a token, only requests naming a loopback host are answered: a web page
  elsewhere cannot reach the console through DNS rebinding.
* Actions (``serve --allow-actions``) need the token even on loopback, where the pages stay as
  they are without one (loopback host names only), so an operator behind an SSH tunnel reads
  freely and types the token to act. An action is refused (:class:`ActionGate`) unless it carries
  the token in its ``Authorization`` header (never a cookie or the query string, which a browser
  would send or leak by itself), is a JSON ``POST``, and comes from the console's own origin: a
  page elsewhere can make a browser send a form or a simple request, never these headers.
* Every response carries a strict Content-Security-Policy (scripts and styles from the console
  itself only, no inline script or style, nothing external), ``nosniff``, no framing, no referrer.
* Clients cannot starve it without the token (:class:`Limits`): a request's headers have a
  deadline, the connections a cap below the process's open-file limit (the one waiting longest
  for its request gives way to a new one), and the log lines a flood of them would write are
  let through once a minute, counted (:class:`Flooding`).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import resource
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from configctl.errors import one_line

log = logging.getLogger(__name__)

DEFAULT_BIND = "127.0.0.1:8642"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]

MIN_TOKEN = 16
"""A shorter token is refused: it could be guessed."""


class BadBind(ValueError):
    """``--bind`` is not ``HOST:PORT`` (the message says why)."""


@dataclass(frozen=True)
class Bind:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """Only this machine can reach it (``localhost``, 127.0.0.0/8, ``::1``)."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a host name: it may resolve anywhere

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/"


def parse_bind(text: str) -> Bind:
    """``HOST:PORT``, ``[IPv6]:PORT``; port 0 takes any free port."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise BadBind(f"--bind {text!r} must be HOST:PORT (like {DEFAULT_BIND} or [::1]:8642)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise BadBind(f"--bind {text!r}: write an IPv6 address in brackets, like [::1]:8642")
    if not port.isdigit() or int(port) > 65535:
        raise BadBind(f"--bind {text!r}: the port must be a number from 0 to 65535")
    return Bind(host, int(port))


def check_token(token: str, where: str) -> str:
    """A token as read from ``where``, stripped of surrounding whitespace; refused when too short."""
    token = token.strip()
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token) or not token.isprintable():
        raise BadBind(
            f"the token in {where} must be at least {MIN_TOKEN} printable characters without spaces"
        )
    return token


def bearer_matches(header: bytes, token: bytes) -> bool:
    """Whether an ``Authorization`` header is ``Bearer <token>``: the scheme in any case (RFC 7235
    makes auth-schemes case-insensitive), one or more spaces, the token compared in constant time."""
    scheme, _, credentials = header.partition(b" ")
    return hmac.compare_digest(credentials.lstrip(b" "), token) and scheme.lower() == b"bearer"


_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


class Guard:
    """ASGI middleware: the token (when one is set), the Host check on loopback, and the headers.

    With ``actions`` on loopback the token guards the actions only (:class:`ActionGate`): the
    pages keep the loopback rule, else a browser behind an SSH tunnel could not open them.
    """

    def __init__(
        self, app: ASGIApp, *, token: str | None, loopback_only: bool, actions: bool = False
    ) -> None:
        self.app = app
        reads_need_token = token is not None and not (actions and loopback_only)
        self.expected = token.encode() if token is not None and reads_need_token else None
        self.loopback_only = loopback_only and not reads_need_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        if self.expected is not None:
            if not bearer_matches(headers.get(b"authorization", b""), self.expected):
                await _plain(send_with_headers, 401, "a bearer token is required", bearer=True)
                return
        elif self.loopback_only and _host_name(headers.get(b"host", b"")) not in _LOOPBACK_HOSTS:
            await _plain(send_with_headers, 421, "this console answers only to a loopback host name")
            return
        await self.app(scope, receive, send_with_headers)


def _host_name(host: bytes) -> str:
    text = host.decode("latin-1").lower()
    if text.startswith("["):
        return text.split("]", 1)[0] + "]"
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


async def _plain(send: Any, status: int, text: str, *, bearer: bool = False) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if bearer:
        headers.append((b"www-authenticate", b'Bearer realm="configctl"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": (text + "\n").encode()})


# -- actions ----------------------------------------------------------------------------------------

ACTIONS_OFF = "this console is read-only: actions are off (configctl serve --allow-actions turns them on)"


@dataclass(frozen=True)
class Refused:
    """Why an action request is not carried out, as its HTTP status and one line."""

    status: int
    text: str

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="configctl"'} if self.status == 401 else {}


class ActionGate:
    """The checks every state-changing request passes before anything is done.

    * actions on at all (``serve --allow-actions``), else 403;
    * ``Authorization: Bearer <token>``, compared in constant time, else 401: a browser never
      adds this header by itself, so no other site can borrow a logged-in browser for it;
    * an ``Origin`` (and ``Sec-Fetch-Site``), when the browser sends one, naming the console itself,
      else 403;
    * ``Content-Type: application/json``, else 415: a cross-site form can only send form types.
    """

    def __init__(self, token: str | None, *, enabled: bool) -> None:
        self.enabled = enabled and token is not None
        self.expected = token.encode() if token else b""

    def check(self, headers: Mapping[str, str]) -> Refused | None:
        """``headers`` as Starlette gives them (case-insensitive); None when the request may act."""
        if not self.enabled:
            return Refused(403, ACTIONS_OFF)
        given = headers.get("authorization", "").encode("latin-1", "replace")
        if not self.expected or not bearer_matches(given, self.expected):
            return Refused(401, "an action needs the bearer token (Authorization: Bearer ...)")
        origin = headers.get("origin")
        if origin is not None and not same_origin(origin, headers.get("host", "")):
            return Refused(403, "refused: the request comes from another origin than the console's")
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return Refused(403, "refused: the browser says the request comes from another site")
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return Refused(415, "an action is a JSON request (Content-Type: application/json)")
        return None


def same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` (``http://127.0.0.1:8642``) names the host the request was sent to.

    The scheme may be ``https`` too (a proxy ending TLS in front of the console); the host and
    port must be the ``Host`` the browser sent, which only the console answers to. ``null`` (a
    sandboxed frame, a ``file:`` page) never is.
    """
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query:
        return False
    return bool(host) and parts.netloc.lower() == host.strip().lower()


# -- slow and many clients --------------------------------------------------------------------------

HEADER_TIMEOUT_S = 10.0
"""A connection has this long to send a request's headers whole: from connecting, or from the
previous answer on a kept-alive connection. A deadline, not an idle timer, so a client sending a
byte a second is cut off too."""

KEEP_ALIVE_S = 5
"""An idle kept-alive connection is closed after this long (uvicorn's ``timeout_keep_alive``)."""

HEADER_BYTES = 16 * 1024
"""The most a request's unfinished headers may hold (h11's ``max_incomplete_event_size``)."""

MAX_CONNECTIONS = 1000
"""Connections served at once, at most: each is an open file, and a browser holds one stream."""

BACKLOG = 128
"""Connections the kernel holds for the console to accept. asyncio accepts as many as are there
in one go, before any of them reaches :class:`CappedConnection`, and a connection closed to make
room lets its file go only on the loop's next turn: the cap keeps room for two backlogs."""

FILES_KEPT = 64
"""Open files kept back from the cap besides :data:`BACKLOG`: ZooKeeper's session, the log, the
event loop's own."""

FLOOD_INTERVAL_S = 60.0
"""A flooding log line (see :data:`FLOODS`) is let through once per this long."""


@dataclass(frozen=True)
class Limits:
    """What uvicorn is given so that clients without the token cannot starve the console.

    uvicorn has no deadline for a request's headers, and its ``limit_concurrency`` only answers
    503 to a request that finished them: a connection that never does holds an open file until
    there is none left to accept with. :class:`CappedConnection` adds both.
    """

    connections: int = MAX_CONNECTIONS
    header_timeout: float = HEADER_TIMEOUT_S
    keep_alive: int = KEEP_ALIVE_S
    header_bytes: int = HEADER_BYTES
    backlog: int = BACKLOG

    @classmethod
    def for_this_process(cls) -> Limits:
        """The connection cap below this process's open-file limit (``ulimit -n``), with room for
        a full backlog accepted at once and the files the console keeps open itself."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        room = MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else soft - 2 * BACKLOG - FILES_KEPT
        return cls(connections=max(16, min(MAX_CONNECTIONS, room)))

    def uvicorn_options(self) -> dict[str, Any]:
        """``uvicorn.Config`` keywords: the HTTP/1.1 protocol with these limits, and uvicorn's own."""
        protocol = type("ConsoleConnection", (CappedConnection,), {"limits": self})
        return {
            "http": protocol,
            "ws": "none",  # the console has no WebSocket; an upgrade is answered as plain HTTP
            "loop": "asyncio",  # the loop whose accept errors :class:`Flooding` knows
            # uvicorn answers 503 at ``>=``: a request on the last connection the cap lets in is served
            "limit_concurrency": self.connections + 1,
            "timeout_keep_alive": self.keep_alive,
            "backlog": self.backlog,  # asyncio listens again with it on the socket it is given
            "h11_max_incomplete_event_size": self.header_bytes,
        }


class CappedConnection(H11Protocol):
    """uvicorn's HTTP/1.1 connection with a deadline for each request's headers and a cap on
    connections (``limits``, set by :meth:`Limits.uvicorn_options`).

    A connection is *waiting* while no request of it is being answered: before its first request
    is whole, between requests, or after an answer sent before its request's body came. A waiting
    connection is closed at :attr:`Limits.header_timeout`; beyond the cap, the connection waiting
    longest is closed for the new one (or, when all are being answered, the new one is). Streams
    being answered (``/events``) are never cut.
    """

    limits: ClassVar[Limits]
    _deadline: asyncio.TimerHandle | None = None
    _waiting_since: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.connections and not self._make_room():
            log.warning("console: too many connections (%d): refused a new one", self.limits.connections)
            transport.close()
            return
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _answering(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _watch(self) -> None:
        """Arm the deadline when the connection starts waiting; drop it while it is answered."""
        if self._answering():
            self._cancel()
        elif self._deadline is None and not self.transport.is_closing():
            self._waiting_since = time.monotonic()
            self._deadline = self.loop.call_later(self.limits.header_timeout, self._too_slow)

    def _cancel(self) -> None:
        self._waiting_since = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self._answering():
            self._waiting_since = None
            self.transport.close()

    def _make_room(self) -> bool:
        """Close the connection waiting longest, if one is waiting; whether one was."""
        open_ = [c for c in self.connections if not c.transport.is_closing()]
        if len(open_) <= self.limits.connections:
            return True  # some are closing already
        waiting = [
            c
            for c in open_
            if isinstance(c, CappedConnection) and c is not self and c._waiting_since is not None
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._waiting_since or 0.0)
        log.warning(
            "console: too many connections (%d): closed the one waiting longest for its request",
            self.limits.connections,
        )
        oldest._cancel()
        oldest.transport.close()
        return True


FLOODS = (
    "socket.accept() out of system resource",  # asyncio, once no file is left to accept with
    "Exceeded concurrency limit",  # uvicorn: a request beyond limit_concurrency
    "Invalid HTTP request received",  # uvicorn: every malformed request
    "Unsupported upgrade request",  # uvicorn: every WebSocket upgrade asked for
    "No supported WebSocket library detected",
    "console: too many connections",  # CappedConnection
)
"""Log lines any client can make the console write as often as it likes, without the token."""


class Flooding(logging.Filter):
    """Lets one line of each kind of :data:`FLOODS` through per ``interval`` seconds, counts the
    rest, and makes what it lets through one line: the next line that passes says how many were
    held back. (A client without the token once made asyncio's accept error fill the log at
    about 470 MB per 70 s.)"""

    def __init__(
        self,
        interval: float = FLOOD_INTERVAL_S,
        kinds: tuple[str, ...] = FLOODS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.kinds = kinds
        self.clock = clock
        self.held: dict[str, int] = {}
        self._passed: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        kind = next((k for k in self.kinds if text.startswith(k)), None)
        if kind is None:
            return True
        now = self.clock()
        with self._lock:
            passed = self._passed.get(kind)
            if passed is not None and now - passed < self.interval:
                self.held[kind] = self.held.get(kind, 0) + 1
                return False
            self._passed[kind] = now
            held = self.held.pop(kind, 0)
        line = text.splitlines()[0]
        if record.exc_info and record.exc_info[1] is not None:
            line += f": {one_line(record.exc_info[1], 200)}"
        if held:
            line += f" ({held} more like it in the last {self.interval:g} s, not logged)"
        record.msg, record.args, record.exc_info, record.exc_text = line, None, None, None
        return True


def quiet_floods(interval: float = FLOOD_INTERVAL_S) -> Flooding:
    """Put one :class:`Flooding` on every logger a flood of connections writes to."""
    flooding = Flooding(interval)
    for name in ("asyncio", "uvicorn.error", __name__):
        logging.getLogger(name).addFilter(flooding)
    return flooding
