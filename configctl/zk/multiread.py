"""ZooKeeper's multiRead (opcode 22, ZooKeeper 3.6+): many reads in one request.

kazoo pays a system call and a round of its event loop per request, so thousands of single
reads take seconds while one multiRead of a thousand nodes costs one request. kazoo has no
public multiRead, so this module builds the request itself on kazoo's serialization helpers and
sends it through ``KazooClient._call``: the only code in configctl that touches kazoo internals
(which is why kazoo is pinned below 3 in pyproject.toml).

Unlike a write multi, each read succeeds or fails alone: the answer holds, per path,
``(data, stat)`` or the exception for that path (``NoNodeError`` when absent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import (
    MultiHeader,
    int_struct,
    multiheader_struct,
    read_buffer,
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
        results: list[Any] = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == cls._GET_DATA:
                value, offset = read_buffer(data, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(data, offset))
                offset += stat_struct.size
                results.append((value or b"", stat))
            else:  # an error result: its code follows
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            header, offset = MultiHeader.deserialize(data, offset)
        return results


def send(client: KazooClient, paths: Sequence[str]) -> list[tuple[Sequence[str], Any]]:
    """Send one multiRead per :data:`CHUNK` paths at once; returns (chunk, async result) pairs.

    Every request is in flight before the first answer is awaited, so N chunks cost about one
    round trip. Each async result yields a list of ``(data, stat)`` or exceptions, in path order;
    a server without multiRead answers ``UnimplementedError``.
    """
    pending = []
    for start in range(0, len(paths), CHUNK):
        chunk = paths[start : start + CHUNK]
        request = _MultiRead(tuple(_prefix_root(client.chroot, path) for path in chunk))
        async_result = client.handler.async_result()
        client._call(request, async_result)
        pending.append((chunk, async_result))
    return pending
