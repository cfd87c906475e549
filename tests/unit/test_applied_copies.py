"""Applied logs given more than once, and what is not a segment in an ``applied/`` directory.

Issue 36: two ``--applied-log`` directories holding the same broker's log (an older rsync beside a
newer one, or one directory given twice) made the answer depend on their order: the records were
concatenated and the fold trusts list order, so the older copy read last took the broker back in
time. And a named pipe named like a segment hung every reader and the listener's start.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
from pathlib import Path

import pytest

from configctl import applied
from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.listener.appliedlog import AppliedLog
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.travel.past import applied_records
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.unit

STATIC = {"broker.id": "1", "log.retention.hours": "72"}
DEADLINE = 10.0


def apply(manager: DynamicConfigManager, log: AppliedLog, value: str, number: int) -> None:
    entity = Entity.from_path("topics/a")
    before = {entity.path: manager.effective(entity)}
    read = EntityRead(entity, encode_entity_config({"retention.ms": value}), number)
    log.batch(manager.apply([read], number), before)


def older_and_newer(tmp_path: Path) -> tuple[Path, Path]:
    """A broker's state directory copied after change 3 (``older``) and the same one after
    change 6, two segments later (``newer``)."""
    newer, older = tmp_path / "newer", tmp_path / "older"
    now = [100.0]
    manager = DynamicConfigManager(1, STATIC)
    log = AppliedLog(newer, 1, fsync=False, max_bytes=1024, clock=lambda: now[0])
    log.batch(manager.reconcile([], None, initial=True), {}, full_load=True, up_to=0)
    for number in range(1, 7):
        now[0] += 10
        apply(manager, log, str(1000 * number), number)
        if number == 3:
            shutil.copytree(newer, older)
    log.close()
    return older, newer


def test_the_same_log_given_twice_in_either_order_is_read_as_once(tmp_path):
    older, newer = older_and_newer(tmp_path)
    once = applied_records(1, [newer])
    assert once is not None and [r.change_number for r in once if r.kind == "applied"] == [1, 2, 3, 4, 5, 6]
    assert applied_records(1, [newer, newer]) == once
    assert applied_records(1, [newer, newer / "applied"]) == once  # the same log, named two ways
    # an older copy beside the newer one is the same log read earlier: either order, the newer
    assert applied_records(1, [older, newer]) == once
    assert applied_records(1, [newer, older]) == once
    folded = applied.fold(once)
    assert applied.fold(applied_records(1, [newer, older]) or []) == folded
    assert folded.values[("topics/a", "retention.ms")].value == "6000" and folded.last_change == 6


def test_two_different_logs_of_one_broker_are_refused_in_one_line(tmp_path):
    _, newer = older_and_newer(tmp_path)
    other = tmp_path / "other"
    shutil.copytree(newer, other)
    segment = applied.segments(other, 1)[1][-1]
    segment.write_text(segment.read_text().replace('"change_number":6', '"change_number":66'))
    for order in ([newer, other], [other, newer]):
        with pytest.raises(InvalidInput, match=r"disagree") as refused:
            applied_records(1, order)
        assert "\n" not in str(refused.value)
        assert str(newer) in str(refused.value) and str(other) in str(refused.value)


# -- what is not a segment ---------------------------------------------------------------------------


def within_deadline(fifo: Path, call, *args):
    """``call(*args)`` on a worker thread; failing the test (not hanging it) past the deadline."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(call, *args).result(timeout=DEADLINE)
    except concurrent.futures.TimeoutError:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # frees a blocked writer...
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # ...and a blocked reader
        os.close(reader)
        pytest.fail(f"{call.__name__} blocked on a named pipe for {DEADLINE:g}s")
    finally:
        pool.shutdown(wait=False)


def test_a_named_pipe_among_the_segments_is_refused_by_readers_in_one_line(tmp_path):
    _, state = older_and_newer(tmp_path)
    fifo = state / "applied" / applied.segment_name(1, 99)
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput) as refused:
        within_deadline(fifo, applied_records, 1, [state])
    assert str(refused.value).endswith(
        f"{fifo}: not a regular file (a named pipe (FIFO)); refusing to read it"
    )
    with pytest.raises(InvalidInput, match="named pipe"):
        within_deadline(fifo, lambda: list(applied.read(state, 1)))


def test_a_listener_steps_over_a_named_pipe_and_logs_to_a_segment_of_its_own(tmp_path, caplog):
    directory = tmp_path / "applied"
    directory.mkdir()
    (directory / applied.segment_name(1, 1)).write_text("")
    fifo = directory / applied.segment_name(1, 2)
    os.mkfifo(fifo)
    log = AppliedLog(tmp_path, 1, fsync=False)
    with caplog.at_level(logging.WARNING, logger="configctl.listener"):
        within_deadline(fifo, apply, DynamicConfigManager(1, STATIC), log, "1000", 1)
    log.close()
    assert log.path == directory / applied.segment_name(1, 3)
    assert [r.change_number for r in applied.parse_lines(log.path.read_text())] == [1]
    assert any("named pipe" in message for message in caplog.messages)
    assert fifo.is_fifo()  # left as it was: not ours to remove


def test_a_listener_never_appends_through_a_symlink_planted_at_its_segment(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    directory = tmp_path / "applied"
    directory.mkdir()
    (directory / applied.segment_name(1, 1)).symlink_to(victim)
    log = AppliedLog(tmp_path, 1, fsync=False)
    apply(DynamicConfigManager(1, STATIC), log, "1000", 1)
    log.close()
    assert victim.read_text() == "precious\n"
    assert log.path == directory / applied.segment_name(1, 2)
