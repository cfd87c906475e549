"""What a listener writes to ZooKeeper per change, against a real ZooKeeper.

Every state node and fleet record write goes through the ensemble's quorum, and at fleet size
each one is multiplied by the number of brokers. These tests count the write requests a
listener's own session sends: one per batch (the fleet record, when due, in the state node's
transaction), and under a burst one per run of batches, never later than the publish bound.
"""

from __future__ import annotations

import json
import time

import pytest
from helpers import count_requests, set_config, wait_for

from configctl import fleet
from configctl.listener import ConfigListener
from configctl.listener.state import FleetRecorder
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zk.session import ZkSession
from configctl.znodes import FleetRecordZNode

STATIC = {"log.retention.hours": "72"}
WRITES = ("SetData", "Transaction")  # the purge lease's Create is not the state's


@pytest.fixture
def store(zk_connect: str):
    with ConfigStore.connect(zk_connect) as opened:
        yield opened


@pytest.fixture
def start_listener(embedded_listeners):
    return embedded_listeners


def record(zk, broker_id: int) -> dict:
    return json.loads(zk.get(FleetRecordZNode.path(broker_id))[0])


def published(store: ConfigStore, broker_id: int, number: int) -> bool:
    state = fleet.broker_state(store, broker_id)
    return state is not None and state["last_applied_change"] == number


def test_one_write_per_batch_carries_the_fleet_record(zk, store, start_listener):
    listener = start_listener(11)
    listener.fleet_record.interval = 0.0  # due after every batch: the most record writes there can be
    counts = count_requests(listener)
    changes = 8
    for i in range(changes):
        last = set_config(store, f"topics/w{i}", **{"retention.ms": str(1000 + i)})
        assert listener.wait_for_change(last, timeout=10)
        wait_for(lambda n=last: published(store, 11, n), timeout=10, message="the state node")
    assert record(zk, 11)["last_applied_change"] == last
    # each batch: one transaction holding the state node and the record, not two writes
    assert sum(counts[kind] for kind in WRITES) == changes, counts
    assert counts["Transaction"] == changes


def test_the_fleet_record_is_written_alone_when_no_batch_carries_it(zk, store, start_listener):
    listener = start_listener(12)
    first = set_config(store, "topics/a", **{"retention.ms": "1"})
    assert listener.wait_for_change(first, timeout=10)
    last = set_config(store, "topics/a", **{"retention.ms": "2"})  # within the interval: not due yet
    assert listener.wait_for_change(last, timeout=10)
    wait_for(lambda: record(zk, 12)["last_applied_change"] == last, timeout=5, message="the timer's write")


def test_a_missing_fleet_record_is_written_again_beside_the_state(zk, store, start_listener):
    listener = start_listener(13)
    listener.fleet_record.interval = 0.0
    zk.delete(FleetRecordZNode.path(13))  # the transaction fails as a whole: nothing half-written
    last = set_config(store, "topics/b", **{"retention.ms": "3"})
    assert listener.wait_for_change(last, timeout=10)
    wait_for(lambda: published(store, 13, last), timeout=10, message="the state node")
    wait_for(
        lambda: zk.exists(FleetRecordZNode.path(13)) and record(zk, 13)["last_applied_change"] == last,
        timeout=5,
        message="the fleet record, recreated",
    )


class SlowPlugin:
    """Takes a while over each topic change, so notifications pile up while it works."""

    name = "slow"

    def reconfigurable_configs(self):
        return {"retention.ms"}

    def validate_reconfiguration(self, update):
        pass

    def reconfigure(self, update):
        time.sleep(0.03)

    def configure(self, context):
        pass

    def close(self):
        pass


def burst(store: ConfigStore, listener: ConfigListener, count: int, prefix: str) -> tuple[int, int, int]:
    """``count`` changes as fast as the writer goes; (batches applied, state writes, last change)."""
    batches = 0
    handler = listener.notifications.handler
    original = handler.process

    def counted(notifications, changed):
        nonlocal batches
        batches += 1
        original(notifications, changed)

    handler.process = counted
    counts = count_requests(listener)
    numbers = [
        set_config(store, f"topics/{prefix}{i}", **{"retention.ms": str(5000 + i)}) for i in range(count)
    ]
    last = numbers[-1]
    assert listener.wait_for_change(last, timeout=30)
    wait_for(lambda: published(store, listener.broker_id, last), timeout=10, message="the last state")
    del handler.process
    return batches, sum(counts[kind] for kind in WRITES), last


def test_a_step_catching_up_is_published_once_not_once_a_batch(store, start_listener, tmp_path):
    listener = start_listener(14, plugins=[SlowPlugin()], state_dir=tmp_path)
    listener.notifications.fetch_batch = 2  # a backlog of a few notifications is several batches
    batches, writes, last = burst(store, listener, 20, "burst")
    assert writes < batches, (writes, batches)
    snapshot = (tmp_path / "broker-14.jsonl").read_text().splitlines()
    assert json.loads(snapshot[0])["change_number"] == last  # the snapshot is never behind the node

    # the bound: a step that goes on for longer publishes as it goes
    listener.notifications.publish_within_s = 0.0
    batches, writes, _ = burst(store, listener, 10, "again")
    assert writes >= batches


def test_a_record_that_fell_due_during_the_state_write_waits_for_the_next_batch(zk, zk_connect):
    """By the time a state node write returns the record's interval may have passed: it is not
    written alone at once then (that was a second write per batch at fleet size), but carried by
    the next batch, or written by the timer when none comes."""
    offset = [0.0]
    progress = [1]
    with ZkSession(zk_connect) as session:
        recorder = FleetRecorder(
            session, 15, lambda: progress[0], grace=0.2, clock=lambda: time.monotonic() + offset[0]
        )
        recorder.write()
        progress[0] = 2  # a batch, not due: the state node is written alone
        assert recorder.due() is None
        offset[0] = 1.5  # its write took long: the interval has passed since
        recorder.later()
        assert recorder.writes == 1  # nothing written alone at once
        assert recorder.due() is not None  # the next batch carries it ...
        wait_for(lambda: recorder.writes == 2, timeout=5, message="... or the timer writes it")
        assert record(zk, 15)["last_applied_change"] == 2
        recorder.close()


def test_batches_closer_than_the_timer_never_cost_a_record_write_of_their_own(zk, zk_connect):
    progress = [1]
    with ZkSession(zk_connect) as session:
        recorder = FleetRecorder(session, 16, lambda: progress[0], interval=0.5, grace=0.5)
        recorder.write()
        started = time.monotonic()
        progress[0] = 2
        recorder.later()  # a batch the record was not due for: the timer is set
        time.sleep(0.6)
        progress[0] = 3
        recorder.later()  # another, 0.6 s later: the timer waits a second after it
        time.sleep(max(0.0, started + 1.3 - time.monotonic()))
        assert recorder.writes == 1  # the first timer did not write: a batch had come since
        wait_for(lambda: recorder.writes == 2, timeout=5, message="the timer, once batches stopped")
        assert record(zk, 16)["last_applied_change"] == 3
        recorder.close()
