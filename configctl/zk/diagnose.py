"""Why a connection to ZooKeeper failed, named in one line from kazoo's own clues.

kazoo 2.11 says little when a connection cannot work (all measured against a real TLS + SASL
server, see tests/integration/test_secure_zk.py):

- a CA that did not sign the server, a plain client on a TLS port, a TLS client on a plain port:
  it retries until the start timeout runs out; the cause is only in its log warnings
  (``CERTIFICATE_VERIFY_FAILED``, ``socket connection broken``, ``UNEXPECTED_EOF_WHILE_READING``);
- a wrong SASL password: it reports CONNECTED before it logs in, then its connection thread dies
  on ``SessionClosedRequireSaslError``, printing a traceback to stderr;
- no SASL against a server that requires it: connected, the first request fails.

So each session gets a private kazoo logger whose records are kept here (never printed), and a
thread hook takes the death of *our* clients' connection threads (never anyone else's) out of
stderr and into the session, which turns them into :mod:`configctl.errors` classes: exit 4 for
what authentication refused, 3 for what could not be reached, with the likely cause named.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, SessionClosedRequireSaslError

from configctl.errors import ConfigctlError, PermissionDenied, ZooKeeperUnavailable, one_line
from configctl.zkconnection import SASL_PASSWORD_HINT, ConnectionSettings

KEPT_RECORDS = 200

# What a TLS handshake failure says about who refused whom.
_UNTRUSTED_SERVER = ("CERTIFICATE_VERIFY_FAILED",)
_REFUSED_CLIENT_CERT = ("ALERT_CERTIFICATE_REQUIRED", "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA")
_NOT_TLS = ("UNEXPECTED_EOF_WHILE_READING", "WRONG_VERSION_NUMBER", "EOF occurred in violation")
_CLOSED = "socket connection broken"

_debug = logging.getLogger("configctl.zk.kazoo")


class KazooLog(logging.Handler):
    """One client's kazoo log: the last records kept, which server each warning is about."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.warnings: deque[tuple[tuple[str, int] | None, str]] = deque(maxlen=KEPT_RECORDS)
        self._target: tuple[str, int] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a record kazoo formats badly must not break its connection thread
            return
        if _debug.isEnabledFor(logging.DEBUG):
            _debug.debug("kazoo: %s", one_line(message, 500))
        args = record.args if isinstance(record.args, tuple) else ()
        if message.startswith("Connecting to ") and len(args) >= 3:
            self._target = (str(args[0]), int(args[2]))
        elif record.levelno >= logging.WARNING:
            self.warnings.append((self._target, message))

    def logger(self) -> logging.Logger:
        """A logger for one ``KazooClient``: not in logging's tree, so nothing reaches a terminal."""
        logger = logging.Logger("configctl.zk.kazoo.session", logging.INFO)
        logger.propagate = False
        logger.addHandler(self)
        return logger

    def servers_with(self, needles: Iterable[str]) -> set[tuple[str, int] | None]:
        """The servers a warning containing one of ``needles`` was about."""
        found = set()
        for target, message in list(self.warnings):
            if any(needle in message for needle in needles):
                found.add(target)
        return found

    def last_with(self, needles: Iterable[str]) -> str | None:
        for _target, message in reversed(list(self.warnings)):
            if any(needle in message for needle in needles):
                return message
        return None

    def messages(self) -> list[str]:
        return [message for _target, message in list(self.warnings)]


# -- connection threads that die ------------------------------------------------------------------

_deaths: weakref.WeakKeyDictionary[KazooClient, list[BaseException]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_previous_hook: Any = None


def watch_thread(client: KazooClient) -> None:
    """Catch the death of ``client``'s connection thread (instead of a traceback on stderr)."""
    global _previous_hook
    with _lock:
        _deaths.setdefault(client, [])
        if threading.excepthook is not _hook:  # (again: a test may have swapped the hook)
            _previous_hook = threading.excepthook
            threading.excepthook = _hook


def thread_death(client: KazooClient) -> BaseException | None:
    """What killed ``client``'s connection thread, if it died."""
    with _lock:
        died = _deaths.get(client)
        return died[-1] if died else None


def _hook(args: Any) -> None:
    client = _client_of(args.exc_traceback)
    with _lock:
        died = _deaths.get(client) if client is not None else None
        if died is not None and args.exc_value is not None:
            died.append(args.exc_value)
            return
        previous = _previous_hook or threading.__excepthook__
    previous(args)


def _client_of(tb: TracebackType | None) -> KazooClient | None:
    """The client whose connection loop raised: kazoo's ``ConnectionHandler`` is ``self`` there."""
    from kazoo.protocol.connection import ConnectionHandler

    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, ConnectionHandler):
            return owner.client
        tb = tb.tb_next
    return None


# -- naming the failure ---------------------------------------------------------------------------


def _hint(settings: ConnectionSettings) -> str:
    return "check --zk-tls-ca" if settings.tls is not None and settings.tls.ca else "give --zk-tls-ca FILE"


def _reason(message: str | None) -> str:
    """The part of an SSL error worth showing: ``certificate verify failed: ...`` without the C file."""
    if not message:
        return ""
    text = message.split("] ", 1)[-1] if "] " in message else message
    return one_line(text.split(" (_ssl.c", 1)[0], 160)


def early_failure(log: KazooLog, client: KazooClient, settings: ConnectionSettings) -> ConfigctlError | None:
    """A failure worth giving up for before the timeout: retrying cannot fix it."""
    died = thread_death(client)
    if died is not None:
        return login_failure(died, settings)
    servers = {(host, port) for host, port in settings.hosts}
    untrusted = log.servers_with(_UNTRUSTED_SERVER)
    if servers <= untrusted:
        return untrusted_server(log, settings)
    refused = log.servers_with(_REFUSED_CLIENT_CERT)
    if servers <= refused:
        return refused_certificate(log, settings)
    if log.last_with(("AUTH_FAILED",)) is not None:
        return login_failure(AuthFailedError(log.last_with(("AUTH_FAILED",))), settings)
    return None


def untrusted_server(log: KazooLog, settings: ConnectionSettings) -> ConfigctlError:
    reason = _reason(log.last_with(_UNTRUSTED_SERVER))
    return PermissionDenied(
        f"ZooKeeper at {settings.connect} presented a TLS certificate this client does not trust "
        f"({reason}): {_hint(settings)}"
    )


def refused_certificate(log: KazooLog, settings: ConnectionSettings) -> ConfigctlError:
    reason = _reason(log.last_with(_REFUSED_CLIENT_CERT))
    wanted = (
        "the server did not accept the client certificate"
        if settings.tls is not None and settings.tls.cert
        else "the server wants a client certificate: give --zk-tls-cert FILE --zk-tls-key FILE"
    )
    return PermissionDenied(f"ZooKeeper at {settings.connect} refused the TLS handshake ({reason}): {wanted}")


def timed_out(log: KazooLog, settings: ConnectionSettings) -> ConfigctlError:
    """The start timeout ran out: say what the attempts ran into."""
    base = f"cannot reach ZooKeeper at {settings.connect} within {settings.timeout:g}s"
    if log.last_with(_UNTRUSTED_SERVER):
        return untrusted_server(log, settings)
    if log.last_with(_REFUSED_CLIENT_CERT):
        return refused_certificate(log, settings)
    messages = log.messages()
    if settings.tls is not None and log.last_with(_NOT_TLS):
        return ZooKeeperUnavailable(
            f"{base}: no TLS handshake completed (the server closed the connection); is it a plain-text "
            "port? (drop --zk-tls)"
        )
    if settings.tls is None and messages and all(_CLOSED in m or "Transition" in m for m in messages):
        return ZooKeeperUnavailable(
            f"{base}: the server closed every connection; if it serves TLS on this port, add --zk-tls "
            "(or it has no quorum)"
        )
    unresolved = log.last_with(("Cannot resolve",))
    if unresolved and not any("Connection dropped" in m for m in messages):
        return ZooKeeperUnavailable(f"{base}: {one_line(unresolved, 200)}")
    if log.last_with(("Connection refused",)):
        return ZooKeeperUnavailable(f"{base} (connection refused)")
    return ZooKeeperUnavailable(base)


def login_failure(error: BaseException | None, settings: ConnectionSettings) -> ConfigctlError:
    """The session was granted but the login (or the lack of one) was not accepted."""
    sasl = settings.sasl
    if isinstance(error, SessionClosedRequireSaslError) and sasl is None:
        return PermissionDenied(
            f"ZooKeeper at {settings.connect} requires a SASL login: give --zk-sasl digest:USER "
            f"({SASL_PASSWORD_HINT})"
        )
    if sasl is not None:
        who = f" as {sasl.user!r}" if sasl.user else f" ({sasl.mechanism})"
        if isinstance(error, AuthFailedError) and "dropped in SASL" in str(error):
            return PermissionDenied(
                f"ZooKeeper at {settings.connect} did not answer the SASL login{who}: "
                "is SASL enabled on that server?"
            )
        return PermissionDenied(
            f"ZooKeeper at {settings.connect} refused the SASL login{who} (wrong password or unknown user)"
        )
    return PermissionDenied(f"ZooKeeper at {settings.connect} rejected the credentials")
