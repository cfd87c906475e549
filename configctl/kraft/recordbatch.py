"""Kafka's record batches (format v2, magic 2) read from a log file: framing, CRC, varints.

The metadata log of a KRaft node (``__cluster_metadata-0``) and its snapshots are files of these
batches, exactly as any topic's segments (``DefaultRecordBatch`` and ``DefaultRecord`` in Kafka's
clients). Here they are only read, never written: a batch's header, its CRC-32C (checked, with
kafka-python's ``calc_crc32c``, the one CRC-32C the project already depends on), and its records'
varint framing. A file that ends inside a batch (a node writes its active segment as it runs) ends
the file cleanly at the last whole batch; a batch whose bytes are all there but wrong is a
:class:`CorruptLog`, one line naming the file and the offset. Pure: bytes in, batches out.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kafka.record.util import calc_crc32c

from configctl.errors import InvalidInput

LOG_OVERHEAD = 12
"""Base offset (int64) and batch length (int32): what precedes the length's bytes."""
HEADER = struct.Struct(">qiibIhiqqqhii")
"""The batch header: base offset, length, partition leader epoch, magic, CRC, attributes, last
offset delta, base and max timestamp, producer id and epoch, base sequence, records count."""
CRC_START = 21
"""The CRC covers everything from the attributes (after base offset, length, epoch, magic, CRC)."""
MAGIC = 2
_COMPRESSION_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_CONTROL = 0x20
_COMPRESSIONS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class CorruptLog(InvalidInput):
    """A log file holds a batch that cannot be what Kafka wrote (wrong CRC, impossible framing):
    one line naming the file and the offset. Nothing past it is read."""


@dataclass(frozen=True)
class Record:
    """One record of a batch: its offset, its timestamp as Kafka records it, key and value."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Batch:
    """One whole batch with a CRC that matched."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    base_timestamp_ms: int
    max_timestamp_ms: int
    control: bool
    records: tuple[Record, ...]


# -- varints (Kafka's ByteUtils) -------------------------------------------------------------------


def read_unsigned_varint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint (7 bits a byte, low first; at most 10 bytes) at ``pos``: (value, next pos).

    Raises :class:`ValueError` when the bytes end first or the varint runs too long."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("a varint runs past the end of its bytes")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise ValueError("a varint is longer than 10 bytes")


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A signed (zigzag) varint or varlong at ``pos``: (value, next pos)."""
    raw, pos = read_unsigned_varint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _read_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    """A varint length (-1: null) and that many bytes."""
    length, pos = read_varint(data, pos)
    if length < 0:
        return None, pos
    if pos + length > len(data):
        raise ValueError("a field runs past the end of its record")
    return data[pos : pos + length], pos + length


# -- batches -------------------------------------------------------------------------------------


def parse_records(
    body: bytes, base_offset: int, base_timestamp: int, max_timestamp: int, append_time: bool, count: int
) -> tuple[Record, ...]:
    """The ``count`` records framed in ``body`` (``DefaultRecord``): each a varint length, then
    attributes, timestamp delta, offset delta, key, value and headers (read and dropped).

    A record's timestamp is the batch's max timestamp when the batch says LOG_APPEND_TIME, else
    base timestamp plus its delta: Kafka's own rule. Raises :class:`ValueError` on bad framing."""
    records = []
    pos = 0
    for _ in range(count):
        length, pos = read_varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise ValueError("a record's length runs past its batch")
        pos += 1  # attributes: unused
        timestamp_delta, pos = read_varint(body, pos)
        offset_delta, pos = read_varint(body, pos)
        key, pos = _read_bytes(body, pos)
        value, pos = _read_bytes(body, pos)
        headers, pos = read_varint(body, pos)
        for _ in range(max(headers, 0)):
            _, pos = _read_bytes(body, pos)
            _, pos = _read_bytes(body, pos)
        if pos != end:
            raise ValueError("a record's fields do not fill its length")
        timestamp = max_timestamp if append_time else base_timestamp + timestamp_delta
        records.append(Record(base_offset + offset_delta, timestamp, key, value))
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} bytes follow the batch's {count} records")
    return tuple(records)


def parse_batch(data: bytes, where: str = "batch") -> Batch:
    """One whole batch (``data`` holds exactly its ``LOG_OVERHEAD + length`` bytes), CRC checked.

    ``where`` names it in the one-line :class:`CorruptLog` raised when it cannot be Kafka's."""
    if len(data) < HEADER.size:
        raise CorruptLog(f"{where}: {len(data)} bytes are shorter than a batch header ({HEADER.size})")
    (base, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts, _pid, _pepoch, _seq, count) = (
        HEADER.unpack_from(data)
    )
    at = f"{where} at offset {base}"
    if magic != MAGIC:
        raise CorruptLog(f"{at}: record batch magic {magic}, expected {MAGIC}")
    if length + LOG_OVERHEAD != len(data):
        raise CorruptLog(f"{at}: batch length {length} does not match its {len(data) - LOG_OVERHEAD} bytes")
    computed = calc_crc32c(data[CRC_START:])
    if computed != crc:
        raise CorruptLog(f"{at}: CRC-32C mismatch (stored {crc:#010x}, computed {computed:#010x})")
    compression = attributes & _COMPRESSION_MASK
    if compression:
        name = _COMPRESSIONS.get(compression, str(compression))
        raise CorruptLog(f"{at}: batch compressed with {name}; Kafka writes its metadata log uncompressed")
    try:
        records = parse_records(
            data[HEADER.size :], base, base_ts, max_ts, bool(attributes & _LOG_APPEND_TIME), count
        )
    except ValueError as problem:
        raise CorruptLog(f"{at}: {problem}") from None
    return Batch(base, base + last_delta, epoch, base_ts, max_ts, bool(attributes & _CONTROL), records)


_TO_LAST_DELTA = 15
"""Bytes of a batch after its offset and length up to the end of its last offset delta."""


def read_batches(stream: BinaryIO, where: str, start: int = 0) -> Iterator[Batch]:
    """Every whole batch of a file, in order, read one batch at a time (a segment may be 1 GiB);
    a batch wholly below offset ``start`` is stepped over unread (a follower of the log rereads
    its active segment every round, and that segment can hold a week of metadata).

    The file ending inside a batch (its header or its body) ends it cleanly: a node writing its
    active segment leaves such a torn tail, and the batch is read whole on a later pass."""
    while True:
        head = stream.read(LOG_OVERHEAD)
        if len(head) < LOG_OVERHEAD:
            return  # the end, or a torn tail inside the offset and length
        base, length = struct.unpack(">qi", head)
        if length < HEADER.size - LOG_OVERHEAD:
            raise CorruptLog(f"{where} at offset {base}: batch length {length} is impossible")
        if base < start:
            peek = stream.read(_TO_LAST_DELTA)
            if len(peek) < _TO_LAST_DELTA:
                return
            if base + struct.unpack_from(">i", peek, _TO_LAST_DELTA - 4)[0] < start:
                stream.seek(length - _TO_LAST_DELTA, io.SEEK_CUR)
                continue
            body = peek + stream.read(length - _TO_LAST_DELTA)
        else:
            body = stream.read(length)
        if len(body) < length:
            return  # a torn tail: the batch is not all written yet
        yield parse_batch(head + body, where)


def read_file_batches(path: Path, start: int = 0) -> Iterator[Batch]:
    """:func:`read_batches` of the file at ``path``, named by its path in any error."""
    with path.open("rb") as stream:
        yield from read_batches(stream, str(path), start)
