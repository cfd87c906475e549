"""Safe by default: where the console may listen, who may ask it, and what every answer carries.

* It listens on loopback unless told otherwise; any other address needs a bearer token (a file or
  ``CONFIGCTL_SERVE_TOKEN``, never argv: argv is visible to every local user in ``ps``), and then
  every request must carry ``Authorization: Bearer <token>`` (401 otherwise).
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
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
        self.expected = f"Bearer {token}".encode() if reads_need_token else None
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
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
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
        self.expected = f"Bearer {token}".encode() if token else b""

    def check(self, headers: Mapping[str, str]) -> Refused | None:
        """``headers`` as Starlette gives them (case-insensitive); None when the request may act."""
        if not self.enabled:
            return Refused(403, ACTIONS_OFF)
        given = headers.get("authorization", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, self.expected):
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
