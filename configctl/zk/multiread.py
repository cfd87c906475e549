"""ZooKeeper's multiRead (opcode 22, ZooKeeper 3.6+): many reads in one request.

kazoo pays a system call and a round of its event loop per request, so thousands of single
reads take seconds while one multiRead of a thousand nodes costs one request. kazoo has no
public multiRead, so this module builds the request itself on kazoo's serialization helpers and
sends it through ``KazooClient._call``. With :mod:`configctl.zk.treewatch` (``addWatch``) it is
the only code in configctl that touches kazoo internals (which is why kazoo is pinned below 3 in
pyproject.toml).

Unlike a write multi, each read succeeds or fails alone: the answer holds, per path,
``(data, stat)`` or the exception for that path (``NoNodeError`` when absent).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import (
    MultiHeader,
    multiheader_struct,
    stat_struct,
    write_string,
)
from kazoo.protocol.states import ZnodeStat

CHUNK = 1000
"""Nodes per request: config nodes are small, so an answer stays far below ZooKeeper's 1 MiB."""


class _MultiRead(tuple):  # type: ignore[type-arg]
    """The request: a GetData operation per path, without watches."""

    type = 22
    _GET_DATA = 4
    _with_stat = True

    def serialize(self) -> bytes:
        body = bytearray()
        for path in self:
            body.extend(MultiHeader(self._GET_DATA, False, -1).serialize())
            body.extend(write_string(path))
            body.extend(b"\x00")  # watch: false
        body.extend(multiheader_struct.pack(-1, True, -1))
        return bytes(body)

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[Any]:
        """Each result in order: ``(data, stat)``, or the exception of its error code.

        Written as one tight loop over precompiled structs (no header objects): answers of a
        thousand nodes are decoded on kazoo's connection thread, and a full load of 100,000
        nodes spends more time here than ZooKeeper takes to send them.
        """
        results: list[Any] = []
        append = results.append
        header = _HEADER.unpack_from
        integer = _INT.unpack_from
        stat_of = stat_struct.unpack_from
        make_stat = ZnodeStat._make
        header_size, stat_size = _HEADER.size, stat_struct.size
        get_data = cls._GET_DATA
        with_stat = cls._with_stat
        while True:
            op, done, _err = header(data, offset)
            offset += header_size
            if done:
                return results
            (length,) = integer(data, offset)
            offset += 4
            if op == get_data:
                value = data[offset : offset + length] if length > 0 else b""
                offset += max(length, 0)
                append((value, make_stat(stat_of(data, offset)) if with_stat else None))
                offset += stat_size
            else:  # an error result: ``length`` is its code
                append(EXCEPTIONS[length]())


_HEADER = multiheader_struct  # type (int), done (bool byte), err (int)
_INT = struct.Struct("!i")


class _MultiReadData(_MultiRead):
    """The same request, answered as ``(data, None)``: a full load never looks at 100,000 stats."""

    _with_stat = False


def server_paths(client: KazooClient, paths: Sequence[str]) -> Sequence[str]:
    """``paths`` as the server knows them, below the client's chroot: what a request built here
    (not by kazoo, which prefixes its own) must carry. A concatenation per path; kazoo's helper
    normalizes each, which costs more across a thousand paths."""
    chroot = client.chroot
    if not chroot:
        return paths
    return [chroot + p if p != "/" else _prefix_root(chroot, p) for p in paths]


def send(client: KazooClient, paths: Sequence[str], *, stats: bool = True) -> list[tuple[Sequence[str], Any]]:
    """Send one multiRead per :data:`CHUNK` paths at once; returns (chunk, async result) pairs.

    Every request is in flight before the first answer is awaited, so N chunks cost about one
    round trip. Each async result yields a list of ``(data, stat)`` or exceptions, in path order;
    a server without multiRead answers ``UnimplementedError``.
    """
    pending = []
    kind = _MultiRead if stats else _MultiReadData
    for start in range(0, len(paths), CHUNK):
        chunk = paths[start : start + CHUNK]
        request = kind(tuple(server_paths(client, chunk)))
        async_result = client.handler.async_result()
        client._call(request, async_result)
        pending.append((chunk, async_result))
    return pending
