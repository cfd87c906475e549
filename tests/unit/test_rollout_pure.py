"""The pure parts of safe rollout: what operators type, the record's bytes, undo order, the check."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configctl.catalogue import synonym_group as synonyms_of
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.rollout import health
from configctl.rollout.parsing import (
    WaveSpec,
    check_rollout_id,
    format_duration,
    new_rollout_id,
    parse_broker_ids,
    parse_duration,
    parse_waves,
)
from configctl.rollout.record import (
    CanaryPlan,
    Options,
    Planned,
    Record,
    Undo,
    UndoChunk,
    decode_plan_chunk,
    decode_undo_chunk,
    plan_chunk_json,
    waves_of,
)
from configctl.rollout.restore import restore_phases as _restore_phases
from configctl.store import Change
from configctl.znodes import RolloutZNode

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("90", 90),
        ("2.5", 2.5),
        (" 5M ", 300),
        ("0", 0),
        ("0.5s", 0.5),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5d", "-1", "1h30m", "abc", "1e3", "200h", "s", "5 minutes"])
def test_bad_durations_are_one_line_errors_naming_the_option(text):
    with pytest.raises(InvalidInput) as caught:
        parse_duration(text, option="--check-timeout")
    assert caught.value.message.startswith("--check-timeout: ") and "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (0.5, "0.5s"), (45, "45s"), (300, "5m"), (5400, "1h30m")]
)
def test_durations_are_shown_short(seconds, text):
    assert format_duration(seconds) == text


def test_broker_ids():
    assert parse_broker_ids("1,3") == (1, 3)
    assert parse_broker_ids(" 2 , 0 ") == (2, 0)
    for bad, why in [
        ("", "not a comma-separated list"),
        ("1,,2", "not a comma-separated list"),
        ("1,1", "broker 1 is named twice"),
        ("x", "'x' is not a broker id"),
        ("-1", "'-1' is not a broker id"),
        ("99999999999", "is not a broker id"),
        ("١", "is not a broker id"),  # a digit, but not an ASCII one
    ]:
        with pytest.raises(InvalidInput, match=why):
            parse_broker_ids(bad)


@pytest.mark.parametrize(
    ("spec", "count", "sizes"),
    [
        ("3", 10, [3, 3, 4]),  # as equal as possible, the smaller waves first
        ("5", 2, [1, 1]),  # never more waves than entities
        ("1", 4, [4]),
        ("40%", 5, [2, 2, 1]),
        ("100%", 5, [5]),
        ("1%", 3, [1, 1, 1]),  # at least one entity per wave
        ("25%", 8, [2, 2, 2, 2]),
        ("3", 0, []),
    ],
)
def test_waves_cut_the_plan_in_order(spec, count, sizes):
    items = list(range(count))
    waves = parse_waves(spec).split(items)
    assert [len(w) for w in waves] == sizes
    assert [i for w in waves for i in w] == items


@given(st.integers(min_value=0, max_value=300), st.integers(min_value=1, max_value=50))
def test_every_entity_is_in_exactly_one_wave_in_order(count, waves):
    items = list(range(count))
    for spec in (WaveSpec(count=waves), WaveSpec(percent=float(waves * 2))):
        cut = spec.split(items)
        assert [i for w in cut for i in w] == items
        assert all(cut)


@pytest.mark.parametrize("text", ["0", "0%", "101%", "abc", "5.5", "%", "-3", "10001"])
def test_bad_waves(text):
    with pytest.raises(InvalidInput, match="--waves"):
        parse_waves(text)


def test_rollout_ids_sort_by_time_and_are_checked():
    first, second = new_rollout_id(1_700_000_000), new_rollout_id(1_700_000_001)
    assert first < second and check_rollout_id(first) == first
    for bad in ["", "../x", "20250612-142233", "20250612-142233-ZZZZ", "claims"]:
        with pytest.raises(InvalidInput, match="is not a rollout id"):
            check_rollout_id(bad)


def _record() -> Record:
    return Record(
        id=new_rollout_id(),
        kind="canary",
        state="running",
        created_ms=1,
        updated_ms=1,
        identity="alice@host",
        reason="OPS-1",
        options=Options(soak_seconds=30, check="true", check_timeout_seconds=5, wait_seconds=20),
        waves=1,
        entities=("brokers/<default>",),
        entity_count=2,
        plan_chunks=1,
        baseline_change=None,
        step={"step": "canary", "wave": 1},
        canary=CanaryPlan((1,), {"log.retention.ms": "1"}, {"log.retention.ms": "1"}, -1),
    )


def test_the_record_round_trips_and_keeps_a_bounded_event_list():
    record = _record()
    assert Record.decode(record.encode()) == record
    for n in range(250):
        record = record.with_event(n, f"event {n}")
    assert len(record.events) == 200 and record.events[-1]["text"] == "event 249"
    with pytest.raises(InvalidInput, match="format"):
        Record.decode(b'{"format":"something-else/1"}')
    with pytest.raises(InvalidInput, match="malformed"):
        Record.decode(b'{"format":"configctl-rollout/1","kind":"canary"}')


def test_plan_and_undo_chunks_round_trip_with_exact_bytes():
    planned = [Planned(Entity.from_path("users/a%20b/clients/c"), 2, {"consumer_byte_rate": "1"}, -1)]
    assert decode_plan_chunk(plan_chunk_json(planned)) == planned
    odd = b'{"config":{"b":"2","a":"1"},"version":1}'
    binary = b"\xff\x00not utf-8"
    chunk = UndoChunk(
        3,
        2,
        (
            Undo(Entity.from_path("topics/t"), odd, 4, 5),
            Undo(Entity.from_path("topics/u"), binary, 0, 1),
            Undo(Entity.from_path("brokers/1"), None, -1, 0),
        ),
    )
    assert decode_undo_chunk(3, RolloutZNode.encode(chunk.to_json())) == chunk
    assert chunk.to_json()["entries"][1]["encoding"] == "base64"


def test_an_undo_is_only_applied_over_the_rollouts_own_write():
    written = Undo(Entity.from_path("topics/t"), b"x", 4, 5)
    assert written.still_ours(5) and not written.still_ours(6) and not written.still_ours(None)
    created = Undo(Entity.from_path("topics/t"), None, -1, 0)
    assert created.still_ours(0) and not created.still_ours(None)
    # an emptied quota node is removed, or kept one version on when it has clients
    emptied = Undo(Entity.from_path("users/u"), b"x", 2, -1)
    assert emptied.still_ours(None) and emptied.still_ours(3) and not emptied.still_ours(4)


def test_waves_of_groups_by_wave_in_plan_order():
    items = [Planned(Entity.of(EntityType.TOPICS, n), w, {}, -1) for n, w in [("a", 1), ("b", 2), ("c", 1)]]
    assert [[p.entity.name for p in wave] for wave in waves_of(items)] == [["a", "c"], ["b"]]


def test_an_undo_re_creates_users_before_their_clients_and_removes_them_after():
    alice = Entity.from_path("users/alice")
    app = Entity.from_path("users/alice/clients/app")
    bob = Entity.from_path("users/bob")
    bob_app = Entity.from_path("users/bob/clients/x")
    topic = Entity.from_path("topics/t")
    changes = [
        Change(app, {}, 0, remove_node=True),
        Change(alice, {}, 0, remove_node=True),
        Change(bob_app, {"a": "1"}, -1, exact=b"{}"),
        Change(bob, {"a": "1"}, -1, exact=b"{}"),
        Change(topic, {}, 3, exact=b"{}"),
    ]
    phases = _restore_phases(changes)
    assert [[c.entity.path for c in phase] for phase in phases] == [
        ["users/bob"],
        ["users/alice/clients/app", "users/bob/clients/x", "topics/t"],
        ["users/alice"],
    ]
    assert _restore_phases([changes[-1]]) == [[changes[-1]]]


def test_a_canary_key_brings_its_synonyms():
    assert {"log.retention.ms", "log.retention.minutes", "log.retention.hours"} <= synonyms_of(
        "log.retention.hours"
    )
    assert synonyms_of("log.cleaner.threads") == {"log.cleaner.threads"}


def test_claims_are_one_flat_node_per_entity_path():
    path = "users/a%20b/clients/c"
    name = RolloutZNode.claim(path).rsplit("/", 1)[1]
    assert "/" not in name and RolloutZNode.claimed_path(name) == path


# -- the health check -----------------------------------------------------------------------------------


def test_a_check_that_passes_sees_its_environment():
    result = health.run_check('test "$CONFIGCTL_CHANGE" = 42 && echo ok', {"CONFIGCTL_CHANGE": "42"}, 10)
    assert result.ok and result.exit_code == 0 and result.output == "ok\n" and result.failure is None


def test_a_failing_check_says_its_exit_status_and_last_line():
    result = health.run_check("echo one; echo 'too slow' >&2; exit 4", {}, 10)
    assert not result.ok and result.failure == "the check exited 4: too slow"


def test_a_hanging_check_is_killed_at_its_timeout():
    started = time.monotonic()
    result = health.run_check("echo started; sleep 30; echo never", {}, 0.5)
    assert time.monotonic() - started < 10
    assert result.timed_out and not result.ok and result.exit_code is None
    assert "did not finish within its timeout" in (result.failure or "")
    assert "never" not in result.output


def test_a_check_output_is_kept_to_its_end():
    result = health.run_check("head -c 20000 /dev/zero | tr '\\0' x; echo; echo last", {}, 10)
    assert len(result.output) <= health.OUTPUT_KEPT + 1 and result.output.endswith("last\n")
