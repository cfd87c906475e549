"""A listener never applies a config read taken before the notification it is credited to.

Issue 36 #1: with the tree watch, a check reads the new notifications and the config nodes the
watch saw change in one multiRead, beside the notification directory's stat. When that stat
disagreed with the events in hand, the check listed the directory *after* the multiRead, and a
notification that listing showed could describe a write the reads had not seen: the listener
applied the old value, credited the newest change with it, and never looked again. These tests
force that interleaving on a real ZooKeeper (a write made between the check's reads and what
follows them), run bursts of writes to one topic a few milliseconds apart, and show the
periodic re-check repairing a value that differs from ZooKeeper's.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from pathlib import Path

import pytest
from helpers import set_config, wait_for, zookeeper_truth

from configctl import applied
from configctl.entities import Entity
from configctl.zk import treewatch
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zk.configtree import ConfigTree
from configctl.zk.session import PendingRead
from configctl.znodes import CHANGES_PATH


@pytest.fixture
def store(zk_connect: str):
    with ConfigStore.connect(zk_connect) as opened:
        yield opened


class WriteAfterRead(PendingRead):
    """The listener's reads, collected; then, once, a write on another session before anything
    else the check does (it runs on the listener's worker, so the write has landed when the check
    goes on)."""

    def __init__(self, session, paths, sent, write) -> None:
        super().__init__(session, paths, sent)
        self._write = write

    def result(self, *, node_errors: bool = False):
        answers = super().result(node_errors=node_errors)
        self._write()
        return answers


def retention(listener, topic: str) -> str | None:
    found = listener.topic_config(topic).get("retention.ms")
    return found.value if found is not None else None


def applied_retention(state_dir: Path, topic: str) -> list[tuple[int | None, str | None]]:
    """(change number, stored retention.ms) of each applied record of ``topics/<topic>``."""
    return [
        (record.change_number, key.stored)
        for record in applied.applied_changes(applied.read(state_dir, 1), f"topics/{topic}")
        for key in record.keys
        if key.key == "retention.ms"
    ]


@pytest.mark.parametrize("unseen", ["notification", "other child"])
def test_a_write_landing_after_the_reads_is_never_applied_stale(
    store, zk, zk_connect, embedded_listeners, tmp_path: Path, unseen: str
):
    """The check's stat disagrees (an event never arrived: a notification's, which leaves a gap
    below the ones told, or another child's, which does not), and a write to the same topic
    lands between the check's multiRead and what the check does next: the listener must end
    with the newest value, each change credited with its own, without waiting for a re-check."""
    listener = embedded_listeners(1, recheck_s=600, state_dir=tmp_path)
    first = set_config(store, "topics/hot", **{"retention.ms": "1000"})
    assert listener.wait_for_change(first, timeout=10)

    watch = listener.notifications.watch
    deliver = watch._on_tree_event
    dropped: list[str] = []
    hot = Entity.from_path("topics/hot").znode
    heard: list[str] = []
    lost = f"{CHANGES_PATH}/config_change_" if unseen == "notification" else f"{CHANGES_PATH}/lock"

    def lossy(kind: int, path: str) -> None:
        if not dropped and kind == treewatch.CREATED and path.startswith(lost):
            dropped.append(path)  # as if ZooKeeper never sent it: the next stat counts one more
            return
        heard.append(path)
        deliver(kind, path)

    watch._on_tree_event = lossy
    watch._tree._listener = lossy

    newest: list[int] = []
    session = listener.session
    plain = session.read_later

    def write_once() -> None:
        if newest:
            return
        with ConfigStore.connect(zk_connect) as other:
            newest.append(set_config(other, "topics/hot", **{"retention.ms": "4000"}))

    def hooked(paths):
        if newest or hot not in paths:
            return plain(paths)
        return WriteAfterRead(session, paths, session._send(paths), write_once)

    if unseen == "notification":
        second = set_config(
            store, "topics/hot", **{"retention.ms": "2000"}
        )  # heard of, but not its notification
        wait_for(lambda: dropped and hot in heard, message="the hot topic's change, without its notification")
        session.read_later = hooked
        set_config(store, "topics/cold", **{"retention.ms": "3000"})  # wakes the listener
    else:
        zk.create(f"{CHANGES_PATH}/lock")
        wait_for(lambda: dropped, message="the other child, unheard of")
        session.read_later = hooked
        second = set_config(store, "topics/hot", **{"retention.ms": "2000"})
    try:
        wait_for(lambda: newest, message="the write between the reads and what follows them")
        assert second < newest[0]
        assert listener.wait_for_change(newest[0], timeout=10)
        assert retention(listener, "hot") == "4000"
    finally:
        session.read_later = plain
    records = applied_retention(tmp_path, "hot")
    assert records[-1] == (newest[0], "4000"), records
    written = {"1000": first, "2000": second, "4000": newest[0]}
    assert all(written[value] >= number for number, value in records if value is not None), records


@pytest.mark.parametrize("seed", [36, 1136])
def test_bursts_to_one_topic_leave_every_value_and_credit_right(
    store, zk_connect, embedded_listeners, tmp_path: Path, seed: int
):
    """Bursts of writes to one topic a few milliseconds apart, among writes to other topics, on a
    real ZooKeeper with a real listener (no re-check in the run: it must not be what repairs):
    every topic ends with ZooKeeper's value, and no applied record credits a change with a
    value older than that change's own."""
    listener = embedded_listeners(1, recheck_s=600, state_dir=tmp_path)
    rng = random.Random(seed)
    hot = [f"hot{i}" for i in range(4)]
    cold = [f"cold{i}" for i in range(40)]
    values = itertools.count(60_000)
    lock = threading.Lock()
    written: dict[str, tuple[int, str]] = {}  # value -> (change number, topic)
    failures: list[BaseException] = []
    stop = time.monotonic() + 6.0

    def write(target: ConfigStore, topic: str) -> None:
        with lock:
            value = str(next(values))
        number = set_config(target, f"topics/{topic}", **{"retention.ms": value})
        with lock:
            written[value] = (number, topic)

    def bursts(seed: int) -> None:
        pick = random.Random(seed)
        try:
            with ConfigStore.connect(zk_connect) as own:
                while time.monotonic() < stop:
                    topic = pick.choice(hot)
                    for _ in range(pick.randint(2, 6)):
                        write(own, topic)
                        time.sleep(pick.uniform(0.001, 0.005))
                    time.sleep(pick.uniform(0.0, 0.02))
        except BaseException as exc:  # reported by the test, not lost on a thread
            failures.append(exc)

    def others(seed: int) -> None:
        pick = random.Random(seed)
        try:
            with ConfigStore.connect(zk_connect) as own:
                while time.monotonic() < stop:
                    write(own, pick.choice(cold + hot))
                    time.sleep(pick.uniform(0.0, 0.01))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=bursts, args=(rng.random(),)) for _ in range(3)]
    threads += [threading.Thread(target=others, args=(rng.random(),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    latest = max(number for number, _ in written.values())
    assert listener.wait_for_change(latest, timeout=30)

    truth = {path: config for path, config in zookeeper_truth(store, 1).items() if path.startswith("topics/")}
    mine = {path: config for path, config in listener.configs().items() if path.startswith("topics/")}
    assert mine == truth

    topic_of = {number: topic for number, topic in written.values()}
    for topic in hot + cold:
        records = applied_retention(tmp_path, topic)
        for number, value in records:
            assert number is not None and topic_of[number] == topic, (topic, number)
            assert value is not None
            made_by = written[value][0]
            assert made_by >= number, (
                f"{topic}: change {number} credited with change {made_by}'s value {value}"
            )
        if records:
            assert records[-1][1] == truth[f"topics/{topic}"]["retention.ms"], (topic, records[-1])


class StaleOnce(ConfigTree):
    """The listener's reads of ``/config``, except that one node is answered once with bytes
    ZooKeeper held earlier (what a read taken before its notification would have found)."""

    def __init__(self, session, path: str, earlier: bytes) -> None:
        super().__init__(session)
        self.path, self.earlier, self.served = path, earlier, False

    def read(self, entities, *, known=None):
        found = super().read(entities, known=known)
        for index, entity in enumerate(entities):
            if entity.znode == self.path and not self.served:
                self.served = True
                found[index] = self.earlier
        return found


def test_the_recheck_repairs_a_value_that_differs_from_zookeeper(store, embedded_listeners, tmp_path: Path):
    """Whatever left it there, a value in force that differs from what ZooKeeper holds for a
    change already applied is put right by the next periodic re-check, credited to that change
    (the 30 s re-check only listed notifications: with none new it compared nothing)."""
    listener = embedded_listeners(1, recheck_s=1.0, state_dir=tmp_path)
    path = Entity.from_path("topics/drifted").znode
    first = set_config(store, "topics/drifted", **{"retention.ms": "1000"})
    assert listener.wait_for_change(first, timeout=10)
    earlier = store.session.get(path)[0]
    handler = listener.notifications.handler
    handler.tree = StaleOnce(listener.session, path, earlier)
    number = set_config(store, "topics/drifted", **{"retention.ms": "5000"})
    assert listener.wait_for_change(number, timeout=10)
    rechecks = listener.notifications.stats["rechecks"]
    assert handler.tree.served and retention(listener, "drifted") == "1000"  # the stale read applied
    wait_for(lambda: retention(listener, "drifted") == "5000", timeout=10, message="the re-check's repair")
    assert listener.notifications.stats["rechecks"] > rechecks
    assert listener.last_applied_change == number
    assert applied_retention(tmp_path, "drifted")[-1] == (number, "5000")


def test_topics_made_again_after_their_directory_was_deleted_are_never_applied_deleted(
    store, zk, zk_connect, embedded_listeners, tmp_path: Path
):
    """``/config/topics`` deleted and made again, then 100 creations: the tree watch saw every
    topic node deleted, and a check reading those nodes must not hand their absence to a
    notification that made them again with a value in its own transaction."""
    listener = embedded_listeners(1, recheck_s=600, state_dir=tmp_path)
    for i in range(20):
        number = set_config(store, f"topics/t{i}", **{"retention.ms": str(1000 + i)})
    assert listener.wait_for_change(number, timeout=10)
    zk.delete("/config/topics", recursive=True)
    zk.create("/config/topics")
    made: list[int] = []

    def create(first: int) -> None:  # four writers at once, as a bulk creation runs
        with ConfigStore.connect(zk_connect) as own:
            for i in range(first, 100, 4):
                number = set_config(own, f"topics/t{i}", **{"retention.ms": str(2000 + i)})
                made.append(number)

    writers = [threading.Thread(target=create, args=(first,)) for first in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert len(made) == 100
    assert listener.wait_for_change(max(made), timeout=30)
    for i in range(100):
        records = applied_retention(tmp_path, f"t{i}")
        assert all(value is not None for number, value in records if number >= min(made)), (i, records)
        assert retention(listener, f"t{i}") == str(2000 + i)
