"""Asking a running server how it is: does it serve sessions, and in which role.

A listening socket is not enough to call a server ready: an ensemble member accepts connections
long before it has a quorum. So readiness is a real kazoo session and a read. The role comes from
the ``srvr`` four-letter word, which the zoo.cfg we write allows; on a TLS-only server it is asked
over TLS (four-letter words need no session, so SASL does not stand in the way).
"""

from __future__ import annotations

import contextlib
import logging
import socket

from configctl.localzk.client import ClientSettings
from configctl.localzk.ports import HOST

_TLS_HANDSHAKE_TIMEOUT = 3.0
_PROBE_LOGGER = logging.getLogger("configctl.localzk.probe")
_PROBE_LOGGER.addHandler(logging.NullHandler())
_PROBE_LOGGER.propagate = False  # kazoo's connection-refused warnings while we wait are expected noise


def accepts_session(settings: ClientSettings, timeout: float) -> bool:
    """A connect, then a real kazoo session and a read: proof the server (and its quorum) serves.

    ``settings`` names one server and carries what a client must bring (TLS, SASL login).
    The cheap connect first spares a kazoo client while nothing listens yet.
    """
    host, port = settings.connect.rsplit(":", 1)
    # A refused connect fails at once; the limit matters for a TLS handshake, and a JVM's first
    # one takes a second or more (a cut-off handshake is logged by the server as failed).
    connect_timeout = max(timeout, _TLS_HANDSHAKE_TIMEOUT) if settings.tls else min(timeout, 0.5)
    try:
        with _connect(host, int(port), settings, connect_timeout) as sock:
            if settings.tls:  # see _connect: finish the exchange so the server logs no failed handshake
                sock.sendall(b"ruok")
                sock.recv(16)
    except (OSError, ValueError):
        return False
    from kazoo.client import KazooClient  # imported late: only needed while waiting

    client = KazooClient(
        hosts=settings.connect,
        timeout=2.0,
        **settings.kazoo_options(),
        logger=_PROBE_LOGGER,
        # retry every 50 ms: kazoo's default backoff would add up to a second to every start
        connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 1, "max_jitter": 0.0},
    )
    try:
        client.start(timeout=timeout)
        client.get_children("/")
        return True
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            client.stop()
            client.close()


def server_mode(port: int, settings: ClientSettings | None = None) -> str | None:
    """The server's role from the ``srvr`` four-letter word (enabled in the zoo.cfg we write).

    Over TLS when ``settings`` says the server speaks only TLS; None when it does not answer.
    """
    try:
        with _connect(HOST, port, settings, 1.0) as sock:
            sock.sendall(b"srvr")
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except (OSError, ValueError):
        return None
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def _connect(host: str, port: int, settings: ClientSettings | None, timeout: float) -> socket.socket:
    """A connected socket, TLS (handshake done, our CA and host name checked) if the server needs it.

    A TLS client may close right after its side of the handshake, before the server has finished
    its own; ZooKeeper then logs a failed handshake. Callers that only check a server listens
    therefore exchange a four-letter word over the connection before closing it.
    """
    context = settings.ssl_context() if settings is not None else None
    raw = socket.create_connection((host, port), timeout=timeout)
    if context is None:
        return raw
    try:
        return context.wrap_socket(raw, server_hostname=host)
    except BaseException:
        raw.close()
        raise
