"""The rollout log's rule: of two versions made from the same one, the first in the log wins.

This is what stands in for ZooKeeper's version check on a KRaft cluster, so it is pinned here
exhaustively on the pure chain; tests/kraft/test_kraft_rollouts.py shows it on a real cluster.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.kraft import rolloutlog
from configctl.rollout import record as rec
from configctl.rollout.opening import new_record
from configctl.rollout.record import Planned

pytestmark = pytest.mark.unit

TOPIC = Entity(EntityType.TOPICS, "orders")


def opened() -> rolloutlog.Document:
    planned = [Planned(TOPIC, 1, {"retention.ms": "1"}, -1)]
    record = new_record(
        planned,
        identity="me",
        kind=rec.WAVES,
        reason="",
        options=rec.Options(),
        waves=1,
        step={},
        summary="x",
    )
    return rolloutlog.first(record, planned, {"pid": 1})


def log_of(
    *documents: rolloutlog.Document | tuple[bytes, bytes | None],
) -> list[tuple[int, bytes, bytes | None]]:
    found = []
    for offset, item in enumerate(documents):
        key, value = (item.key, item.encode()) if isinstance(item, rolloutlog.Document) else item
        found.append((offset, key, value))
    return found


def test_the_first_of_two_versions_made_from_the_same_one_wins():
    zero = opened()
    mine = zero.next(zero.record.with_event(1, "mine"))
    theirs = zero.next(zero.record.with_event(2, "theirs"))
    chain = rolloutlog.chains(log_of(zero, theirs, mine))[zero.id]
    assert [d.version for _, d in chain.accepted] == [0, 1]
    assert rolloutlog.won(chain, theirs) and not rolloutlog.won(chain, mine)
    assert chain.current is not None and chain.current.record.events[-1]["text"] == "theirs"


def test_a_version_made_from_a_losing_one_is_not_read():
    zero = opened()
    winner = zero.next(zero.record.with_event(1, "won"))
    loser = zero.next(zero.record.with_event(2, "lost"))
    after_loser = loser.next(loser.record.with_event(3, "built on the loser"))
    chain = rolloutlog.chains(log_of(zero, winner, loser, after_loser))[zero.id]
    assert chain.current == winner
    after_winner = winner.next(winner.record.with_event(4, "built on the winner"))
    chain = rolloutlog.chains(log_of(zero, winner, loser, after_loser, after_winner))[zero.id]
    assert chain.current == after_winner


def test_tombstones_leave_the_newest_version_as_the_start_of_the_chain():
    zero = opened()
    one = zero.next(zero.record.with_event(1, "one"))
    two = one.next(one.record.with_event(2, "two"), owner=None)
    chain = rolloutlog.chains(log_of(zero, one, two))[zero.id]
    tombstones = [(key, None) for key in rolloutlog.superseded(chain)]
    assert len(tombstones) == 2
    after = rolloutlog.chains(log_of(zero, one, two, *tombstones))[zero.id]
    assert [d.version for _, d in after.accepted] == [2] and after.current == two
    assert after.current.owner is None


def test_an_unreadable_next_version_is_a_problem_until_a_readable_one_follows():
    zero = opened()
    broken = (rolloutlog.key_of(zero.id, 1, "bad"), b"{not json")
    chain = rolloutlog.chains(log_of(zero, broken))[zero.id]
    assert chain.current == zero and chain.problem == "rollout log record is not JSON"
    forced = zero.next(zero.record.with_event(5, "abort --force"))
    chain = rolloutlog.chains(log_of(zero, broken, forced))[zero.id]
    assert chain.current == forced and chain.problem is None


def test_an_open_rollout_holds_its_entities_and_a_finished_one_none():
    zero = opened()
    found = rolloutlog.chains(log_of(zero))
    assert rolloutlog.holders(found, [TOPIC.path]) == {TOPIC.path: zero.id}
    assert rolloutlog.holders(found, [TOPIC.path], but=zero.id) == {}
    done = zero.next(zero.record.with_event(1, "done", state=rec.COMPLETED))
    assert rolloutlog.holders(rolloutlog.chains(log_of(zero, done)), [TOPIC.path]) == {}


def test_a_document_is_checked_when_read():
    zero = opened()
    document = json.loads(zero.encode())
    document["record"]["id"] = "20250101-000000-ffff"
    with pytest.raises(InvalidInput, match="holds the record of"):
        rolloutlog.decode(json.dumps(document).encode())
    with pytest.raises(InvalidInput, match="format"):
        rolloutlog.decode(b'{"format": "other"}')


def test_a_document_too_large_for_a_kafka_record_is_refused_before_it_is_sent():
    planned = [
        Planned(Entity(EntityType.TOPICS, f"t{i:05d}"), 1, {"retention.ms": "1" * 200}, -1)
        for i in range(4000)
    ]
    record = new_record(
        planned,
        identity="me",
        kind=rec.WAVES,
        reason="",
        options=rec.Options(),
        waves=1,
        step={},
        summary="x",
    )
    with pytest.raises(InvalidInput, match="roll out fewer entities at once; nothing was written"):
        rolloutlog.first(record, planned, {}).encode()


def test_the_reference_pages_example_is_a_document_configctl_reads():
    page = Path(__file__).parents[2] / "docs" / "reference" / "rollout-topic.md"
    block = re.search(r"```json\n(.*?)\n```", page.read_text(encoding="utf-8"), re.S)
    assert block is not None
    document = rolloutlog.decode(block.group(1).encode())
    assert document.version == 1 and document.base is not None
    assert (
        document.record.canary is not None and document.loaded().undo[0].entries[0].entity.path == "brokers/1"
    )


def test_a_carried_rollout_starts_its_chain_at_the_version_it_had_and_reads_back_whole():
    zero = opened()
    finished = zero.record.with_event(5, "promoted", state=rec.PROMOTED)
    loaded = rec.Loaded(finished, 7, list(zero.planned), [], {"host": "gone", "pid": 1})
    carried = rolloutlog.carried(loaded)
    assert (carried.version, carried.base, carried.owner) == (7, None, None)
    chain = rolloutlog.chains(log_of(carried))[zero.id]
    assert chain.current is not None and chain.current.version == 7
    assert chain.current.loaded().record == finished and chain.current.loaded().planned == loaded.planned
    # A later version is made from it, as from any other.
    after = carried.next(finished.with_event(6, "after"))
    assert rolloutlog.chains(log_of(carried, after))[zero.id].current == after
