"""The flight recorder's pure parts: the metadata log folded into writes, its topic's records, and
how configctl's own record of a write is found among them (the real broker: tests/kraft/test_flight_recorder.py)."""

from __future__ import annotations

from configctl.entities import Entity, EntityType
from configctl.kraft import recordertopic
from configctl.kraft.metadatafold import MetadataChange, MetadataState, batches
from configctl.kraft.metadatalog import MetadataEntry
from configctl.kraft.metadatarecords import (
    ClientQuotaRecord,
    ConfigRecord,
    OtherRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from configctl.kraft.store import _anchor, _masked_values
from configctl.secrets import MASK
from configctl.znodes import HistoryRecord

TOPIC, BROKER = 2, 4


def entry(offset: int, record, batch: int | None = None, time_ms: int = 1_000) -> MetadataEntry:
    return MetadataEntry(offset, time_ms, record, offset if batch is None else batch)


def test_one_batch_is_one_write_per_entity_numbered_by_its_first_record():
    state = MetadataState()
    changes = state.apply_batch(
        [
            entry(10, ConfigRecord(TOPIC, "orders", "retention.ms", "1000"), batch=10),
            entry(11, ConfigRecord(BROKER, "", "log.cleaner.threads", "2"), batch=10),
            entry(12, ConfigRecord(TOPIC, "orders", "segment.ms", "60000"), batch=10),
        ]
    )
    assert changes == [
        MetadataChange(
            10, 1_000, "topics/orders", {"retention.ms": (None, "1000"), "segment.ms": (None, "60000")}
        ),
        MetadataChange(11, 1_000, "brokers/<default>", {"log.cleaner.threads": (None, "2")}),
    ]
    (again,) = state.apply_batch([entry(20, ConfigRecord(TOPIC, "orders", "retention.ms", None))])
    assert again.changed == {"retention.ms": ("1000", None)}
    assert state.config("topics/orders") == {"segment.ms": "60000"}


def test_a_key_set_to_the_value_it_had_is_no_write():
    state = MetadataState()
    state.apply_batch([entry(1, ConfigRecord(TOPIC, "orders", "retention.ms", "1000"))])
    assert state.apply_batch([entry(2, ConfigRecord(TOPIC, "orders", "retention.ms", "1000"))]) == []


def test_quotas_and_scram_are_the_user_entitys_keys_and_secrets_are_listed():
    state = MetadataState()
    (quota,) = state.apply_batch(
        [
            entry(
                1,
                ClientQuotaRecord(
                    (("user", "alice"), ("client-id", None)), "producer_byte_rate", 1024.0, False
                ),
            )
        ]
    )
    assert quota.entity_path == "users/alice/clients/<default>" and quota.changed == {
        "producer_byte_rate": (None, "1024")
    }
    (scram,) = state.apply_batch(
        [entry(2, UserScramCredentialRecord("alice", "SCRAM-SHA-512", 8192, "sha256:ab"))]
    )
    assert scram.entity_path == "users/alice" and scram.secrets == frozenset({"SCRAM-SHA-512"})
    (gone,) = state.apply_batch([entry(3, RemoveUserScramCredentialRecord("alice", "SCRAM-SHA-512"))])
    assert gone.changed == {"SCRAM-SHA-512": ("sha256:ab", None)}
    (ip,) = state.apply_batch(
        [entry(4, ClientQuotaRecord((("ip", None),), "connection_creation_rate", 2.5, False))]
    )
    assert (ip.entity_path, ip.changed) == ("ips/<default>", {"connection_creation_rate": (None, "2.5")})


def test_a_deleted_topic_takes_its_config_with_it():
    state = MetadataState()
    state.apply_batch([entry(1, TopicRecord("orders", "ab" * 16)), entry(2, OtherRecord(3, 0), batch=1)])
    state.apply_batch([entry(3, ConfigRecord(TOPIC, "orders", "retention.ms", "1000"))])
    (deleted,) = state.apply_batch([entry(4, RemoveTopicRecord("ab" * 16))])
    assert (deleted.entity_path, deleted.changed) == ("topics/orders", {"retention.ms": ("1000", None)})
    assert state.config("topics/orders") == {}


def test_a_snapshot_replaces_the_state_and_says_what_it_changed():
    state = MetadataState()
    state.apply_batch([entry(1, ConfigRecord(TOPIC, "a", "retention.ms", "1"))])
    state.apply_batch([entry(2, ConfigRecord(TOPIC, "b", "retention.ms", "2"))])
    changed = state.load(
        [
            entry(0, ConfigRecord(TOPIC, "a", "retention.ms", "1")),
            entry(1, ConfigRecord(TOPIC, "c", "segment.ms", "9")),
        ]
    )
    assert changed == ["topics/b", "topics/c"]


def test_entries_are_grouped_by_their_batch():
    found = list(
        batches(
            [entry(1, OtherRecord(3, 0), 1), entry(2, OtherRecord(3, 0), 1), entry(3, OtherRecord(3, 0), 3)]
        )
    )
    assert [[e.offset for e in group] for group in found] == [[1, 2], [3]]


def test_the_topics_records_round_trip_and_a_foreign_one_is_skipped():
    change = MetadataChange(
        42, 7, "users/alice", {"SCRAM-SHA-256": (None, "sha256:x")}, frozenset({"SCRAM-SHA-256"})
    )
    found = recordertopic.Recorded()
    recordertopic.decode(recordertopic.encode_change(change, 1, 8), found)
    gap = recordertopic.GapRecord(0, 30, ("topics/a",), 1, 9)
    recordertopic.decode(recordertopic.encode_gap(gap), found)
    unknown = recordertopic.GapRecord(50, 60, (), 2, 9, entities_known=False)
    recordertopic.decode(recordertopic.encode_gap(unknown), found)
    recordertopic.decode(recordertopic.encode_progress(1, 43, 50, 10, (), 49), found)
    for foreign in (b"not json", b"[]", b'{"v": 1, "kind": "change"}', b'{"v": 99}'):
        recordertopic.decode(foreign, found)
    assert found.changes == {42: change}
    assert found.gaps == {0: gap, 50: unknown}
    assert found.recorders[1]["broker_offset"] == 49
    assert found.next_offset == 60  # past the last gap, the furthest anything was recorded
    assert found.of_entity("users/alice") == [change]


def record(version: int, time_ms: int, config: dict[str, str]) -> HistoryRecord:
    return HistoryRecord("topics/orders", version, time_ms, "me", "", config, {})


def test_configctls_record_is_found_among_the_recorded_writes_by_time_and_what_it_set():
    topic = Entity.named(EntityType.TOPICS, "orders")
    ours = MetadataChange(10, 1_000, "topics/orders", {"retention.ms": (None, "1000")})
    theirs = MetadataChange(20, 1_050, "topics/orders", {"retention.ms": ("1000", "2000")})
    # configctl recorded its write (retention.ms=1000) just after both commits: it is the first
    assert _anchor(topic, record(0, 1_100, {"retention.ms": "1000"}), [ours, theirs]) == 0
    # a record no recorded write set (the recorder behind): none
    assert _anchor(topic, record(1, 1_200, {"retention.ms": "3000"}), [ours, theirs]) is None
    # a write committed long before the record is not its write
    assert _anchor(topic, record(0, 1_000_000, {"retention.ms": "1000"}), [ours]) is None


def test_a_recorded_secret_is_masked_as_history_keeps_it():
    user = Entity.named(EntityType.USERS, "alice")
    change = MetadataChange(
        1,
        1,
        "users/alice",
        {"SCRAM-SHA-256": (None, "sha256:x"), "producer_byte_rate": ("1", None)},
        frozenset({"SCRAM-SHA-256"}),
    )
    assert _masked_values(user, change) == {"SCRAM-SHA-256": MASK, "producer_byte_rate": None}
    assert _masked_values(user, change, side=0) == {"SCRAM-SHA-256": None, "producer_byte_rate": "1"}


def test_the_reference_pages_examples_are_records_configctl_reads():
    import re
    from pathlib import Path

    page = Path(__file__).parents[2] / "docs" / "reference" / "recorder-topic.md"
    blocks = re.findall(r"```json\n(.*?)\n```", page.read_text(encoding="utf-8"), re.S)
    found = recordertopic.Recorded()
    for block in blocks:
        recordertopic.decode(block.encode(), found)
    assert found.changes[4211].changed == {"retention.ms": ("1000", "2000")}
    assert found.gaps[0].entities == ("topics/orders", "users/alice")
    assert found.recorders[1]["recorded_to"] == 4230
    # every field the page shows is one configctl writes
    change = MetadataChange(4211, 1795935474780, "topics/orders", {"retention.ms": ("1000", "2000")})
    import json

    assert set(json.loads(recordertopic.encode_change(change, 1, 1))) == set(json.loads(blocks[0]))
    gap = recordertopic.GapRecord(0, 1230, ("topics/orders",), 1, 1)
    assert set(json.loads(recordertopic.encode_gap(gap))) == set(json.loads(blocks[1]))
    assert set(json.loads(recordertopic.encode_progress(1, 1, 1, 1, (), 1))) == set(json.loads(blocks[2]))


def test_a_held_value_the_broker_does_not_run_is_not_applied():
    from configctl.reported import NotApplied, ReportedConfig, ReportedSynonym, not_applied

    def key(name, value, source, *synonyms):
        return ReportedConfig(name, value, source, synonyms=tuple(ReportedSynonym(*s) for s in synonyms))

    refused = key(
        "log.cleaner.threads", "1", "DYNAMIC_DEFAULT_BROKER_CONFIG",
        ("log.cleaner.threads", "2", "DYNAMIC_DEFAULT_BROKER_CONFIG"), ("log.cleaner.threads", "1", "DEFAULT_CONFIG"),
    )  # fmt: skip
    running = key(
        "log.cleaner.backoff.ms", "16000", "DYNAMIC_BROKER_CONFIG",
        ("log.cleaner.backoff.ms", "16000", "DYNAMIC_BROKER_CONFIG"),
        ("log.cleaner.backoff.ms", "9", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
    )  # fmt: skip
    hours = key(
        "log.retention.ms",
        "3600000",
        "STATIC_BROKER_CONFIG",
        ("log.retention.hours", "1", "DYNAMIC_BROKER_CONFIG"),
    )
    static = key(
        "num.io.threads", "8", "STATIC_BROKER_CONFIG", ("num.io.threads", "8", "STATIC_BROKER_CONFIG")
    )
    found = not_applied({k.name: k for k in (refused, running, hours, static)})
    assert found == [
        NotApplied("log.cleaner.threads", "2", "DYNAMIC_DEFAULT_BROKER_CONFIG", "1", "DEFAULT_CONFIG")
    ]
    assert (
        found[0]
        .sentence(2)
        .startswith("broker 2 holds log.cleaner.threads=2 (DYNAMIC_DEFAULT_BROKER_CONFIG) but runs 1")
    )


def test_a_round_the_cluster_did_not_take_is_folded_again_and_loses_nothing(tmp_path):
    """The recorder's bookkeeping around a failed send, on a real log directory's bytes (the
    cluster itself is replaced by this test's answers: where it says the high watermark is, and
    whether it took the records)."""
    from pathlib import Path
    from typing import ClassVar

    from test_metadata_log_framing import _segment, batch, config_value

    from configctl.kraft.recorder import Recorder

    part = Path(tmp_path) / "__cluster_metadata-0"
    _segment(part, 0, batch(0, [config_value(2, "orders", "retention.ms", "1000")]),
             batch(1, [config_value(2, "orders", "retention.ms", "2000")]))  # fmt: skip

    class Answers(Recorder):
        refuse = 1
        sent: ClassVar[list[bytes]] = []

        def high_watermark(self):
            return 2, 2

        def _publish(self, records):
            if self.refuse:
                self.refuse -= 1
                raise ConnectionError("the cluster stopped answering")
            self.sent.extend(key for key, _ in records)

        def _observe(self):
            return {"answers": True}

    recorder = Answers(1, Path(tmp_path), "unused:9092")
    recorder._rebuild(0)
    try:
        recorder.step()
    except ConnectionError:
        pass
    else:
        raise AssertionError("the refused round did not fail")
    assert recorder.position == 0 and recorder.state.config("topics/orders") == {}
    done = recorder.step()
    assert done.changes == 2 and recorder.position == 2
    assert [k for k in recorder.sent if k.startswith(b"change/")] == [
        recordertopic.change_key(0),
        recordertopic.change_key(1),
    ]


def test_a_migrations_copy_of_zookeeper_is_no_write():
    """A migrated cluster's log starts with Kafka copying ZooKeeper's metadata in, between its
    ZkMigrationStateRecord of pre-migration (2) and of migration (1) (the order a real 3.9.2
    migration wrote: tests/migration). The copy is marked; the writes after it are writes."""
    from configctl.kraft.metadatarecords import ZkMigrationStateRecord, decode_metadata_record

    assert decode_metadata_record(bytes([1, 21, 0, 2, 0])) == ZkMigrationStateRecord(2)
    state = MetadataState()
    assert state.apply_batch([entry(1, ZkMigrationStateRecord(2))]) == []
    (copy,) = state.apply_batch([entry(21, ConfigRecord(TOPIC, "orders", "retention.ms", "1000"))])
    assert state.apply_batch([entry(27, ZkMigrationStateRecord(1))]) == []
    (write,) = state.apply_batch([entry(41, ConfigRecord(TOPIC, "orders", "retention.ms", "2000"))])
    assert (copy.copied, write.copied) == (True, False)
    recorded = recordertopic.Recorded()
    for change in (copy, write):
        recordertopic.decode(recordertopic.encode_change(change, 1, 5_000), recorded)
    assert [c.offset for c in recorded.changes.values()] == [21, 41]
    assert list(recorded.writes) == [41] and [c.offset for c in recorded.of_entity("topics/orders")] == [41]
    # A cluster born KRaft has no such record, and its change records keep their bytes.
    assert b"copied" not in recordertopic.encode_change(write, 1, 5_000)
