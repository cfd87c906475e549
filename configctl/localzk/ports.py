"""Loopback ports: whether one is free, and a few free ones for an ensemble's peer traffic.

The local servers listen on 127.0.0.1 only (never on every interface): they are for demos and
tests on this machine, and the plain-text ones have no authentication at all.
"""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def port_is_free(port: int, host: str = HOST) -> bool:
    """Whether a server could listen on ``host:port`` now (SO_REUSEADDR, as the JVM binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def pick_free_ports(count: int) -> list[int]:
    """Distinct ports the kernel considers free now (for quorum and election traffic)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
