"""What ``migration carry`` takes across: finished rollouts only, oldest first, history in time order."""

from __future__ import annotations

import pytest

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.migrationcarry import finished_rollouts, in_time_order
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
