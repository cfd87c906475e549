"""The applied log: records from real manager batches, secrets as digests, torn lines, rotation, the fold."""

from __future__ import annotations

import json
import os

import pytest

from configctl import applied
from configctl.entities import Entity
from configctl.handlers.base import MISMATCH, Problem
from configctl.listener.appliedlog import AppliedLog
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.secrets import PasswordEncoder, digest
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.unit

STATIC = {"broker.id": "1", "log.retention.hours": "72", "password.encoder.secret": "enc"}
KEY = b"0123456789abcdef-fleet-key"


def read(path: str, config: dict | None, number: int | None = None) -> EntityRead:
    return EntityRead(
        Entity.from_path(path), None if config is None else encode_entity_config(config), number
    )


def apply(
    manager: DynamicConfigManager, log: AppliedLog, path: str, config: dict | None, number: int
) -> None:
    """As the runtime does: the entity's effective config before, the batch, then the log."""
    entity = Entity.from_path(path)
    before = {path: manager.effective(entity)}
    log.batch(manager.apply([read(path, config, number)], number), before)


def lines(tmp_path) -> list[dict]:
    return [
        json.loads(line)
        for line in (tmp_path / "applied" / "broker-1-00000001.jsonl").read_text().splitlines()
    ]


def test_a_change_is_one_record_with_old_and_new_effective_values_and_sources(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, fsync=False, clock=lambda: 1_000.0)
    apply(manager, log, "topics/orders", {"retention.ms": "86400000"}, 5)
    apply(manager, log, "topics/orders", {}, 6)
    first, second = lines(tmp_path)
    assert first == {
        "v": 1,
        "kind": "applied",
        "broker_id": 1,
        "change_number": 5,
        "entity_path": "topics/orders",
        "applied_at_ms": 1_000_000,
        "keys": [
            {
                "key": "retention.ms",
                "old": {"value": "259200000", "source": "DEFAULT_CONFIG"},
                "new": {"value": "86400000", "source": "DYNAMIC_TOPIC_CONFIG"},
                "stored": "86400000",
            }
        ],
        "problems": [],
    }
    assert second["keys"][0]["old"]["value"] == "86400000"
    assert second["keys"][0]["new"] == {"value": "259200000", "source": "DEFAULT_CONFIG"}
    assert second["keys"][0]["stored"] is None


def test_secrets_are_keyed_digests_never_in_clear(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, digest_key=KEY, fsync=False)
    name = "listener.name.internal.ssl.keystore.password"
    apply(manager, log, "brokers/1", {name: PasswordEncoder("enc").encode("keystore-pw")}, 1)
    text = (tmp_path / "applied" / "broker-1-00000001.jsonl").read_text()
    assert "keystore-pw" not in text
    (record,) = lines(tmp_path)
    assert record["keys"][0]["new"]["value"] == digest("keystore-pw", KEY)
    assert record["keys"][0]["stored"].startswith("sha256:")


def test_a_secret_the_broker_ignores_is_still_never_in_clear(tmp_path):
    # a listener's password at <default> is ignored by Kafka (per-broker only): no effective value
    # says it is a secret, but its stored bytes are one
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, digest_key=KEY, fsync=False)
    name = "listener.name.internal.ssl.keystore.password"
    encrypted = PasswordEncoder("enc").encode("keystore-pw")
    apply(manager, log, "brokers/<default>", {name: encrypted}, 1)
    text = (tmp_path / "applied" / "broker-1-00000001.jsonl").read_text()
    assert "keystore-pw" not in text and encrypted not in text


def test_a_refused_change_is_logged_with_its_problems(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, fsync=False)
    log.batch(manager.apply([EntityRead(Entity.from_path("topics/bad"), b"{not json", 9)], 9), {})
    (record,) = lines(tmp_path)
    assert record["kind"] == "refused" and record["change_number"] == 9
    assert record["problems"][0]["kind"] == "poison"


def test_a_torn_last_line_is_skipped_and_the_next_append_is_whole(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, fsync=False)
    apply(manager, log, "topics/a", {"retention.ms": "1000"}, 1)
    log.close()
    segment = tmp_path / "applied" / "broker-1-00000001.jsonl"
    with segment.open("ab") as handle:  # what SIGKILL mid-write leaves
        handle.write(b'{"v":1,"kind":"applied","broker_id":1,"change_num')
    stats = applied.ReadStats()
    assert [r.change_number for r in applied.read(tmp_path, 1, stats)] == [1]
    assert stats.skipped == 1
    again = AppliedLog(tmp_path, 1, fsync=False)
    apply(DynamicConfigManager(1, STATIC), again, "topics/a", {"retention.ms": "2000"}, 2)
    stats = applied.ReadStats()
    assert [r.change_number for r in applied.read(tmp_path, 1, stats)] == [1, 2]
    assert stats.skipped == 1


def test_segments_rotate_by_size_and_only_the_newest_are_kept(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, fsync=False, max_bytes=1024, keep=3)
    for number in range(1, 41):
        apply(manager, log, "topics/a", {"retention.ms": str(1000 + number)}, number)
    names = sorted(p.name for p in (tmp_path / "applied").iterdir())
    assert len(names) == 3
    assert all(os.path.getsize(tmp_path / "applied" / n) <= 1024 for n in names)
    numbers = [r.change_number for r in applied.read(tmp_path, 1)]
    assert numbers == list(range(numbers[0], 41))  # contiguous, newest kept
    assert numbers[0] > 1


def test_the_fold_says_what_the_broker_ran_at_a_moment_and_a_reported_value_wins(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    now = [100.0]
    log = AppliedLog(tmp_path, 1, fsync=False, clock=lambda: now[0])
    log.batch(manager.reconcile([], None, initial=True), {}, full_load=True, up_to=0)
    now[0] = 200.0
    apply(manager, log, "topics/a", {"retention.ms": "1000"}, 1)
    now[0] = 300.0
    apply(manager, log, "topics/a", {"retention.ms": "2000"}, 2)
    mismatch = Problem(
        MISMATCH, "topics/a", 2, "differs", key="retention.ms", expected="2000", reported="1000"
    )
    log.observed([dataclass_at(mismatch, 350_000)])
    log.observed([dataclass_at(mismatch, 350_000)])  # seen again: logged once
    records = list(applied.read(tmp_path, 1))
    assert [r.kind for r in records] == ["load", "applied", "applied", "observed"]
    assert not applied.fold(records, 99_999).covers(99_999)
    assert applied.fold(records, 250_000).values[("topics/a", "retention.ms")].value == "1000"
    at_300 = applied.fold(records, 300_000)
    assert at_300.values[("topics/a", "retention.ms")].value == "2000" and at_300.last_change == 2
    reported = applied.fold(records).values[("topics/a", "retention.ms")]
    assert reported.value == "1000" and reported.reported


def dataclass_at(problem: Problem, at_ms: int) -> Problem:
    import dataclasses

    return dataclasses.replace(problem, at_ms=at_ms)


def test_settings_out_of_range_are_one_line(tmp_path):
    from configctl.errors import InvalidInput

    with pytest.raises(InvalidInput, match="at least 1024"):
        AppliedLog(tmp_path, 1, max_bytes=10)
    with pytest.raises(InvalidInput, match="at least 1 segment"):
        AppliedLog(tmp_path, 1, keep=0)


def test_the_reference_page_example_is_a_record_as_the_sink_writes_it(tmp_path):
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "applied-log.md"
    example = next(line for line in page.read_text().splitlines() if line.startswith('{"v":1'))
    record = applied.parse(example)
    assert record is not None
    assert json.loads(record.line()) == json.loads(example)
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, fsync=False)
    apply(manager, log, "topics/orders", {"retention.ms": "86400000"}, 42)
    (written,) = lines(tmp_path)
    assert written.keys() == json.loads(example).keys()


def test_the_fold_keeps_what_the_broker_refused_until_the_entity_applies_cleanly(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    now = [100.0]
    log = AppliedLog(tmp_path, 1, fsync=False, clock=lambda: now[0])
    log.batch(manager.apply([EntityRead(Entity.from_path("topics/a"), b"{not json", 1)], 1), {})
    now[0] = 200.0
    apply(manager, log, "topics/a", {"retention.ms": "1000"}, 2)
    records = list(applied.read(tmp_path, 1))
    refused = applied.fold(records, 150_000).problems["topics/a"]
    assert refused[0]["kind"] == "poison" and refused[0]["change_number"] == 1
    assert "topics/a" not in applied.fold(records, 200_000).problems


FOREIGN_LINES = [
    '{"v":1,"kind":"applied","broker_id":1,"change_num',  # torn
    '{"v":2,"kind":"applied","broker_id":1,"applied_at_ms":5}',  # another version
    '["v", 1]',
    '{"v":1,"kind":"applied","broker_id":Infinity,"applied_at_ms":5}',  # int() overflows
    '{"v":1,"kind":"applied","broker_id":"one","applied_at_ms":5}',
    '{"v":1,"kind":"applied","broker_id":1}',  # no time
    '{"v":1,"kind":"applied","broker_id":1,"applied_at_ms":5,"keys":7}',
    '{"v":1,"kind":"applied","broker_id":1,"applied_at_ms":5,"keys":[{"key":"k","old":null}]}',
    '{"v":1,"kind":"applied","broker_id":1,"applied_at_ms":5,"problems":3}',
    '{"v":1,"keys":' + "[" * 100_000,  # nested deeper than the decoder recurses
]


def test_a_foreign_line_is_skipped_and_counted_by_every_reader_never_fatal(tmp_path):
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(tmp_path, 1, fsync=False)
    apply(manager, log, "topics/a", {"retention.ms": "1000"}, 1)
    log.observed(
        [Problem(MISMATCH, "topics/a", 1, "differs", key="retention.ms", expected="1000", reported="9")]
    )
    segment = tmp_path / "applied" / "broker-1-00000001.jsonl"
    good = segment.read_text()
    text = FOREIGN_LINES[0] + "\n" + good + "\n\n" + "\n".join(FOREIGN_LINES[1:]) + "\n"
    assert all(applied.parse(line) is None for line in FOREIGN_LINES)
    parsed, scanned = applied.ReadStats(), applied.ReadStats()
    records = list(applied.parse_lines(text, parsed))
    # the light reader the timeline uses takes exactly the same lines, field for field
    assert list(applied.scan_lines(text, scanned)) == [r.light() for r in records]
    assert [r.kind for r in records] == ["applied", "observed"]
    assert (parsed.lines, parsed.skipped) == (scanned.lines, scanned.skipped) == (12, 10)
    segment.write_text(text)
    stats = applied.ReadStats()
    assert [r.kind for r in applied.read(tmp_path, 1, stats)] == ["applied", "observed"]
    assert (stats.lines, stats.skipped) == (parsed.lines, parsed.skipped)  # a blank line is no line
