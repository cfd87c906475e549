"""What ``migration carry`` takes across: finished rollouts only, oldest first, history in time order."""

from __future__ import annotations

import pytest

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.migrationcarry import applied_logs, finished_rollouts, in_time_order
from configctl.rollout import record as rec
from configctl.rollout.opening import new_record
from configctl.rollout.record import Listed, Loaded, Planned
from configctl.znodes import HistoryRecord

pytestmark = pytest.mark.unit

TOPIC = Entity(EntityType.TOPICS, "orders")


OPENING = {"identity": "me", "kind": rec.CANARY, "reason": "r", "options": rec.Options(), "waves": 1}


def _listed(state: str, created_ms: int) -> Listed:
    planned = [Planned(TOPIC, 1, {"retention.ms": "1"}, -1)]
    record = new_record(planned, step={}, summary="", **OPENING)  # type: ignore[arg-type]
    record = record.with_event(created_ms, "x", state=state, created_ms=created_ms, id=f"r{created_ms}")
    return Listed(record.id, record, None)


def _load(listed: list[Listed]):
    def load(rollout_id: str) -> Loaded:
        (item,) = [i for i in listed if i.id == rollout_id]
        assert item.record is not None
        return Loaded(item.record, 3, [], [], None)

    return load


def test_finished_rollouts_are_loaded_oldest_first() -> None:
    listed = [_listed(rec.COMPLETED, 20), _listed(rec.ABORTED, 10), _listed(rec.PROMOTED, 30)]
    assert [r.record.id for r in finished_rollouts(listed, _load(listed))] == ["r10", "r20", "r30"]


@pytest.mark.parametrize("state", rec.OPEN_STATES)
def test_an_open_rollout_refuses_the_whole_carry_in_one_line(state: str) -> None:
    listed = [_listed(rec.COMPLETED, 10), _listed(state, 20)]
    with pytest.raises(InvalidInput) as refused:
        finished_rollouts(listed, _load(listed))
    message = refused.value.message
    assert f"rollout r20 is {state}" in message and "nothing was carried" in message and "\n" not in message


def test_an_unreadable_rollout_refuses_the_carry_naming_abort_force() -> None:
    with pytest.raises(InvalidInput, match=r"rollout abort --force r1.*nothing was carried"):
        finished_rollouts([Listed("r1", None, None, "not JSON")], _load([]))


def test_history_is_carried_oldest_first() -> None:
    def record(path: str, time_ms: int) -> HistoryRecord:
        return HistoryRecord(path, 1, time_ms, "me", "", {"retention.ms": "1"}, {})

    grouped = [[record("topics/b", 30), record("topics/b", 10)], [record("topics/a", 20)]]
    assert [(r.entity_path, r.time_ms) for r in in_time_order(grouped)] == [
        ("topics/b", 10),
        ("topics/a", 20),
        ("topics/b", 30),
    ]


def test_applied_logs_are_read_broker_by_broker_each_copy_once(tmp_path) -> None:
    from configctl import applied

    def record(broker: int, change: int) -> applied.Record:
        return applied.Record(applied.APPLIED, broker, change, "topics/orders", 1_000 + change)

    for place in ("a", "b"):  # the same logs twice: a state directory and its copy
        directory = tmp_path / place / applied.SUBDIRECTORY
        directory.mkdir(parents=True)
        for broker in (2, 1):
            lines = "".join(record(broker, n).line() for n in (1, 2))
            (directory / applied.segment_name(broker, 0)).write_text(lines, encoding="utf-8")
    logs = applied_logs([tmp_path / "a", tmp_path / "b"])
    assert (logs.records, logs.total) == ({1: 2, 2: 2}, 4)
    found = [record for log in logs.each() for record in log]
    assert [(r.broker_id, r.change_number) for r in found] == [(1, 1), (1, 2), (2, 1), (2, 2)]


def test_a_log_is_carried_in_chunks_that_a_grown_log_repeats(monkeypatch) -> None:
    from configctl import applied
    from configctl.kraft import appliedtopic

    log = [applied.Record(applied.APPLIED, 7, n, "topics/orders", 1_000 + n) for n in range(10)]
    monkeypatch.setattr(appliedtopic, "CHUNK_BYTES", 3 * len(log[0].line()))  # three records a chunk
    first = appliedtopic.chunks(7, log[:8])
    assert [count for _, _, count in first] == [3, 3, 2]
    assert all(key.startswith(b"broker-7@") for key, _, _ in first)
    grown = appliedtopic.chunks(7, log)
    assert grown[:2] == first[:2] and grown[2] != first[2]  # only the last chunk is sent again
    assert b"".join(v for _, v, _ in grown) == "".join(r.line() for r in log).encode()


def test_two_copies_that_disagree_refuse_before_anything_is_read_for_sending(tmp_path) -> None:
    from configctl import applied

    for place, change in (("a", 1), ("b", 2)):
        directory = tmp_path / place / applied.SUBDIRECTORY
        directory.mkdir(parents=True)
        record = applied.Record(applied.APPLIED, 1, change, "topics/orders", 1_000)
        (directory / applied.segment_name(1, 0)).write_text(record.line(), encoding="utf-8")
    with pytest.raises(InvalidInput, match="disagree"):
        applied_logs([tmp_path / "a", tmp_path / "b"])
    assert applied_logs([]).total == 0


def test_a_directory_without_an_applied_log_is_one_line(tmp_path) -> None:
    with pytest.raises(InvalidInput, match="no applied log there"):
        applied_logs([tmp_path])
    with pytest.raises(InvalidInput, match="no applied log there"):
        applied_logs([tmp_path / "missing"])
