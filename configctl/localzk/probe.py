"""Asking a running server how it is: does it serve sessions, and in which role.

A listening socket is not enough to call a server ready: an ensemble member accepts connections
long before it has a quorum. So readiness is a real kazoo session and a read. The role comes from
the ``srvr`` four-letter word, which the zoo.cfg we write allows.
"""

from __future__ import annotations

import contextlib
import logging
import socket

from configctl.localzk.ports import HOST

_PROBE_LOGGER = logging.getLogger("configctl.localzk.probe")
_PROBE_LOGGER.addHandler(logging.NullHandler())
_PROBE_LOGGER.propagate = False  # kazoo's connection-refused warnings while we wait are expected noise


def accepts_session(port: int, timeout: float) -> bool:
    """A TCP connect, then a real kazoo session and a read: proof the server (and its quorum) serves."""
    try:
        socket.create_connection((HOST, port), timeout=min(timeout, 0.5)).close()
    except OSError:
        return False
    from kazoo.client import KazooClient  # imported late: only needed while waiting

    client = KazooClient(
        hosts=f"{HOST}:{port}",
        timeout=2.0,
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


def server_mode(port: int) -> str | None:
    """The server's role from the ``srvr`` four-letter word (enabled in the zoo.cfg we write)."""
    try:
        with socket.create_connection((HOST, port), timeout=1.0) as sock:
            sock.sendall(b"srvr")
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None
