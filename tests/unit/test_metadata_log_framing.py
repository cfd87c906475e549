"""The metadata log reader's pieces on handmade bytes: varints, CRC-32C, batch and record framing,
torn tails, metadata record values, and a log directory's segments, gaps and snapshots.

The bytes are built here by hand from Kafka's format (``DefaultRecordBatch``, ``DefaultRecord``,
``AbstractApiMessageSerde``); that the reader agrees with Kafka's own decoder on a real node's
files is ``tests/kraft/test_metadata_log.py``.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import pytest

from configctl.digests import digest
from configctl.errors import NotFound, PermissionDenied
from configctl.kraft import recordbatch
from configctl.kraft.metadatalog import Gap, MetadataEntry, read_log, read_snapshot, snapshots
from configctl.kraft.metadatarecords import (
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    OtherRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UserScramCredentialRecord,
    decode_metadata_record,
)
from configctl.kraft.recordbatch import (
    CorruptLog,
    parse_batch,
    read_batches,
    read_unsigned_varint,
    read_varint,
)
from configctl.secrets import ScramCredential

pytestmark = pytest.mark.unit

# -- a writer of Kafka's formats, for the tests only ----------------------------------------------


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def varint(value: int) -> bytes:
    return uvarint((value << 1) ^ (value >> 63))


def field(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record(
    offset_delta: int, value: bytes | None, timestamp_delta: int = 0, key: bytes | None = None
) -> bytes:
    body = b"\x00" + varint(timestamp_delta) + varint(offset_delta) + field(key) + field(value) + varint(0)
    return varint(len(body)) + body


def batch(
    base_offset: int,
    values: list[bytes | None],
    *,
    base_ts: int = 1_000,
    max_ts: int | None = None,
    attributes: int = 0,
    deltas: list[int] | None = None,
) -> bytes:
    records = b"".join(record(i, value, (deltas or [0] * len(values))[i]) for i, value in enumerate(values))
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(values) - 1,
            base_ts,
            base_ts if max_ts is None else max_ts,
            -1,
            -1,
            -1,
            len(values),
        )
        + records
    )
    crc = recordbatch.calc_crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", base_offset, length, 7, 2, crc) + after_crc


def cstring(text: str | None) -> bytes:
    if text is None:
        return uvarint(0)
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def message(api_key: int, body: bytes, version: int = 0) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body + uvarint(0)  # no tagged fields


def config_value(resource_type: int, resource: str, name: str, value: str | None) -> bytes:
    return message(4, struct.pack(">b", resource_type) + cstring(resource) + cstring(name) + cstring(value))


# -- varints and CRC -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"\x00", 0),
        (b"\x7f", 127),
        (b"\x80\x01", 128),
        (b"\xac\x02", 300),
        (b"\xff\xff\xff\xff\x0f", 2**32 - 1),
    ],
)
def test_unsigned_varints_read_as_kafka_writes_them(raw: bytes, value: int) -> None:
    assert read_unsigned_varint(raw + b"rest", 0) == (value, len(raw))
    assert uvarint(value) == raw


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"\x00", 0),
        (b"\x01", -1),
        (b"\x02", 1),
        (b"\x03", -2),
        (b"\xfe\xff\xff\xff\x0f", 2**31 - 1),
        (b"\xff\xff\xff\xff\x0f", -(2**31)),
    ],
)
def test_zigzag_varints(raw: bytes, value: int) -> None:
    assert read_varint(raw, 0) == (value, len(raw))


def test_a_varint_cut_short_or_too_long_is_refused() -> None:
    with pytest.raises(ValueError, match="past the end"):
        read_unsigned_varint(b"\x80\x80", 0)
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        read_unsigned_varint(b"\xff" * 11, 0)


@pytest.mark.parametrize(
    ("data", "crc"),
    [  # RFC 3720 B.4 and the usual check value
        (b"123456789", 0xE3069283),
        (bytes(32), 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_crc32c_known_vectors(data: bytes, crc: int) -> None:
    assert recordbatch.calc_crc32c(data) == crc


# -- batches ---------------------------------------------------------------------------------------


def test_a_batch_gives_each_record_its_offset_and_create_time() -> None:
    parsed = parse_batch(batch(40, [b"a", None, b"c"], base_ts=5_000, max_ts=5_009, deltas=[0, 4, 9]))
    assert (parsed.base_offset, parsed.last_offset, parsed.leader_epoch, parsed.control) == (40, 42, 7, False)
    assert [(r.offset, r.timestamp_ms, r.value) for r in parsed.records] == [
        (40, 5_000, b"a"),
        (41, 5_004, None),
        (42, 5_009, b"c"),
    ]


def test_log_append_time_is_the_batch_max_timestamp_and_control_is_flagged() -> None:
    parsed = parse_batch(batch(0, [b"a", b"b"], base_ts=1, max_ts=99, attributes=0x08 | 0x20, deltas=[0, 3]))
    assert [r.timestamp_ms for r in parsed.records] == [99, 99]
    assert parsed.control


def test_a_wrong_crc_is_one_line_naming_the_file_and_offset() -> None:
    data = bytearray(batch(17, [b"value"]))
    data[-2] ^= 0xFF
    with pytest.raises(CorruptLog) as caught:
        parse_batch(bytes(data), "/logs/00000000000000000000.log")
    message_text = str(caught.value)
    assert message_text.startswith("/logs/00000000000000000000.log at offset 17: CRC-32C mismatch")
    assert "\n" not in message_text


@pytest.mark.parametrize(
    ("patch", "problem"),
    [((16, b"\x01"), "magic 1"), ((21, b"\x00\x03"), None)],
)
def test_a_wrong_magic_or_a_compressed_batch_is_refused(
    patch: tuple[int, bytes], problem: str | None
) -> None:
    data = bytearray(batch(3, [b"v"]))
    at, raw = patch
    data[at : at + len(raw)] = raw
    if problem is None:  # compressed: the CRC made right, so the refusal is the compression's
        data[17:21] = struct.pack(">I", recordbatch.calc_crc32c(bytes(data[21:])))
        problem = "compressed with lz4"
    with pytest.raises(CorruptLog, match=problem):
        parse_batch(bytes(data), "f")


def test_a_torn_tail_ends_the_file_at_the_last_whole_batch() -> None:
    whole = batch(0, [b"one"]) + batch(1, [b"two", b"three"])
    last = batch(3, [b"four"])
    for cut in (1, 11, 12, 30, len(last) - 1):
        found = list(read_batches(io.BytesIO(whole + last[:cut]), "f"))
        assert [b.last_offset for b in found] == [0, 2]
    assert [b.last_offset for b in read_batches(io.BytesIO(whole + last), "f")] == [0, 2, 3]


def test_an_impossible_length_is_corruption_not_a_tail() -> None:
    with pytest.raises(CorruptLog, match="at offset 0: batch length 0 is impossible"):
        list(read_batches(io.BytesIO(bytes(64)), "f"))


# -- metadata record values ----------------------------------------------------------------------


def test_config_records_set_and_remove() -> None:
    assert decode_metadata_record(config_value(4, "", "log.cleaner.threads", "2")) == ConfigRecord(
        4, "", "log.cleaner.threads", "2"
    )
    removed = decode_metadata_record(config_value(2, "orders", "retention.ms", None))
    assert removed == ConfigRecord(2, "orders", "retention.ms", None)
    assert removed.family is not None and removed.family.value == "topics"


def test_a_password_config_is_digested_at_decode_time() -> None:
    value = config_value(4, "1", "listener.name.plaintext.ssl.key.password", "hunter2")
    plain = decode_metadata_record(value)
    keyed = decode_metadata_record(value, b"k" * 16)
    assert isinstance(plain, ConfigRecord) and isinstance(keyed, ConfigRecord)
    assert (plain.secret, plain.value) == (True, digest("hunter2"))
    assert keyed.value == digest("hunter2", b"k" * 16) != plain.value
    assert "hunter2" not in repr(plain)


def test_quota_records_with_a_default_part() -> None:
    body = (
        uvarint(3)  # two entity parts
        + cstring("client-id")
        + cstring(None)
        + uvarint(0)
        + cstring("user")
        + cstring("bob")
        + uvarint(0)
        + cstring("request_percentage")
        + struct.pack(">d?", 50.5, False)
    )
    assert decode_metadata_record(message(14, body)) == ClientQuotaRecord(
        (("client-id", None), ("user", "bob")), "request_percentage", 50.5, False
    )


def test_scram_records_keep_no_key_beyond_a_digest() -> None:
    salt, stored, server = b"salt-bytes", b"S" * 32, b"K" * 32

    def cbytes(raw: bytes) -> bytes:
        return uvarint(len(raw) + 1) + raw

    body = cstring("bob") + b"\x02" + cbytes(salt) + cbytes(stored) + cbytes(server) + struct.pack(">i", 8192)
    decoded = decode_metadata_record(message(11, body))
    expected = digest(ScramCredential(salt, stored, server, 8192).to_config_value())
    assert decoded == UserScramCredentialRecord("bob", "SCRAM-SHA-512", 8192, expected)
    assert decode_metadata_record(message(22, cstring("bob") + b"\x01")) == RemoveUserScramCredentialRecord(
        "bob", "SCRAM-SHA-256"
    )


def test_tagged_fields_are_skipped_and_other_records_are_not_errors() -> None:
    tagged = (
        uvarint(1)
        + uvarint(12)
        + uvarint(0)
        + cstring("metadata.version")
        + struct.pack(">h", 33)
        + uvarint(1)
    )
    tagged += uvarint(9) + uvarint(2) + b"xy"  # one tagged field: tag 9, two bytes
    assert decode_metadata_record(tagged) == FeatureLevelRecord("metadata.version", 33)
    topic_id = bytes(range(16))
    assert decode_metadata_record(message(2, cstring("orders") + topic_id)) == TopicRecord(
        "orders", topic_id.hex()
    )
    assert decode_metadata_record(message(9, topic_id)) == RemoveTopicRecord(topic_id.hex())
    assert decode_metadata_record(message(3, b"\x00" * 20)) == OtherRecord(3, 0)  # PartitionRecord
    assert decode_metadata_record(message(4, b"", version=1)) == OtherRecord(4, 1)  # a version unknown here


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (uvarint(0) + uvarint(4) + uvarint(0), "frame version 0"),
        (config_value(4, "", "a", "b") + b"!", "1 bytes follow a decoded ConfigRecord"),
        (config_value(4, "", "a", "b")[:-3], "past the end"),
    ],
)
def test_a_record_value_that_is_not_its_schema_is_refused(value: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_metadata_record(value)


# -- a log directory -----------------------------------------------------------------------------


def _segment(directory: Path, base: int, *batches: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{base:020d}.log").write_bytes(b"".join(batches))


def test_segments_in_offset_order_with_gaps_where_they_fall(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    one = config_value(4, "", "a", "1")
    _segment(part, 20, batch(20, [one]), batch(21, [one, config_value(4, "", "a", "2")], attributes=0))
    _segment(part, 10, batch(10, [message(3, b"")]), batch(11, [b"\x00\x00"], attributes=0x20))  # control
    _segment(part, 30, batch(30, [config_value(4, "", "b", None)], base_ts=7))
    (part / "00000000000000000030.log.deleted").write_bytes(b"junk")
    items = list(read_log(tmp_path))
    assert items[0] == Gap(0, 10)
    assert items[1] == MetadataEntry(10, 1_000, OtherRecord(3, 0), 10)
    assert items[2] == Gap(12, 20)
    assert [i.offset if isinstance(i, MetadataEntry) else i for i in items[3:]] == [
        20,
        21,
        22,
        Gap(23, 30),
        30,
    ]
    assert items[-1] == MetadataEntry(30, 7, ConfigRecord(4, "", "b", None), 30)
    assert list(read_log(part, 22)) == [
        MetadataEntry(22, 1_000, ConfigRecord(4, "", "a", "2"), 21),
        Gap(23, 30),
        MetadataEntry(30, 7, ConfigRecord(4, "", "b", None), 30),
    ]
    assert [type(i).__name__ for i in read_log(part, 5)][:2] == ["Gap", "MetadataEntry"]


def test_a_corrupt_record_value_names_the_file_and_offset(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    _segment(part, 0, batch(0, [config_value(4, "", "a", "1")[:-2]]))
    with pytest.raises(CorruptLog, match=r"00000000000000000000\.log at offset 0: .*past the end"):
        list(read_log(tmp_path))


def test_snapshots_are_listed_and_read_without_their_control_records(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    (part / "00000000000000000050-0000000002.checkpoint").write_bytes(
        batch(0, [b"\x00\x00"], attributes=0x20) + batch(1, [message(12, cstring("x") + b"\x00\x01")])
    )
    (part / "00000000000000000090-0000000002.checkpoint.part").write_bytes(b"")
    found = snapshots(tmp_path)
    assert [(s.end_offset, s.epoch) for s in found] == [(50, 2)]
    assert list(read_snapshot(found[0])) == [MetadataEntry(1, 1_000, FeatureLevelRecord("x", 1), 1)]


def test_no_metadata_log_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no KRaft metadata log"):
        list(read_log(tmp_path))


def test_a_segment_deleted_while_the_log_is_read_leaves_a_gap(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    for base in (0, 10, 20):
        _segment(part, base, batch(base, [config_value(4, "", "k", str(base))] * 10))
    reading = read_log(tmp_path)
    assert next(reading) == MetadataEntry(0, 1_000, ConfigRecord(4, "", "k", "0"), 0)
    (part / f"{10:020d}.log").unlink()  # Kafka's retention, after the listing
    rest = list(reading)
    assert Gap(10, 20) in rest
    assert [e.offset for e in rest if isinstance(e, MetadataEntry)] == [*range(1, 10), *range(20, 30)]


def test_a_snapshot_deleted_before_it_is_read_is_not_found(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    with pytest.raises(NotFound, match="is not there"):
        list(read_snapshot(part / "00000000000000000050-0000000002.checkpoint"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_a_log_this_user_may_not_read_is_one_line(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    _segment(part, 0, batch(0, [config_value(4, "", "k", "v")]))
    (part / f"{0:020d}.log").chmod(0)
    with pytest.raises(PermissionDenied, match=r"cannot read .*00000000000000000000\.log: permission denied"):
        list(read_log(tmp_path))


@pytest.mark.parametrize("resource_type", [2, 4, 8, 16, 32, 99])
def test_a_password_config_is_a_secret_whatever_the_resource_type(resource_type: int) -> None:
    decoded = decode_metadata_record(config_value(resource_type, "x", "ssl.truststore.password", "s3cret"))
    assert isinstance(decoded, ConfigRecord)
    assert (decoded.secret, decoded.value) == (True, digest("s3cret"))
    plain = decode_metadata_record(config_value(resource_type, "x", "retention.ms", "1"))
    assert isinstance(plain, ConfigRecord) and (plain.secret, plain.value) == (False, "1")


def test_batches_below_the_start_are_stepped_over_unread(tmp_path: Path) -> None:
    """A follower rereads its active segment every round: what lies below where it stopped is not
    parsed again (a broken batch there is never seen), and a batch holding the start is read."""
    part = tmp_path / "__cluster_metadata-0"
    broken = bytearray(batch(0, [config_value(4, "", "k", "0")] * 3))
    broken[-3] ^= 0x5A  # a CRC that no longer matches
    _segment(part, 0, bytes(broken), batch(3, [config_value(4, "", "k", "3"), config_value(4, "", "k", "4")]))
    with pytest.raises(CorruptLog):
        list(read_log(tmp_path))
    assert [e.offset for e in read_log(tmp_path, 3) if isinstance(e, MetadataEntry)] == [3, 4]
    assert [e.offset for e in read_log(tmp_path, 4) if isinstance(e, MetadataEntry)] == [4]
    assert list(read_log(tmp_path, 5)) == []
