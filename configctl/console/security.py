"""Safe by default: where the console may listen, who may ask it, and what every answer carries.

* It listens on loopback unless told otherwise; any other address needs a bearer token (a file or
  ``CONFIGCTL_SERVE_TOKEN``, never argv: argv is visible to every local user in ``ps``), and then
  every request must carry ``Authorization: Bearer <token>`` (401 otherwise).
* On loopback without a token, only requests naming a loopback host are answered: a web page
  elsewhere cannot reach the console through DNS rebinding.
* Every response carries a strict Content-Security-Policy (scripts and styles from the console
  itself only, no inline script or style, nothing external), ``nosniff``, no framing, no referrer.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from typing import Any

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
    """ASGI middleware: the token (when one is set), the Host check on loopback, and the headers."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.loopback_only = loopback_only and token is None

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
