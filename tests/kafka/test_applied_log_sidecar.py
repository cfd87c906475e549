"""Beside a real Kafka 3.9 broker, the applied log keeps what the broker *reported*, and
``describe --effective --at`` answers with it.

``kafka_one``'s listener for broker 1 is replaced, for this module, by a sidecar
(``--bootstrap-server``) with a state directory; a reconfiguration the broker vetoes (nine
cleaner threads: it keeps one) is logged as an ``observed`` record, and the past shows the value
the broker ran, with the written one beside it.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import KafkaFleet, broker_configs_restored
from helpers import wait_for
from test_sidecar import _start, _stop, mismatches, state

from configctl import applied

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def sidecar_with_log(kafka_one: KafkaFleet, tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("sidecar-log")
    _stop(kafka_one.listeners[1])
    wait_for(lambda: state(kafka_one) == {}, timeout=30, message="the plain listener gone")
    process = _start(
        kafka_one,
        work / "sidecar.log",
        "--bootstrap-server",
        kafka_one.bootstrap,
        "--state-dir",
        str(work / "state"),
    )
    try:
        wait_for(lambda: state(kafka_one).get("observed_at_ms"), timeout=90, message="the sidecar observing")
        yield kafka_one, work / "state"
    finally:
        _stop(process)
        wait_for(lambda: state(kafka_one) == {}, timeout=30, message="the sidecar gone")
        kafka_one.start_listener(1, work / "listener-again.log")
        kafka_one.wait_listeners()


def test_a_vetoed_value_is_logged_as_reported_and_the_past_shows_what_the_broker_ran(sidecar_with_log):
    fleet_, state_dir = sidecar_with_log
    with broker_configs_restored(fleet_):
        result = fleet_.cli(
            "alter",
            "--broker",
            "1",
            "--add-config",
            "log.cleaner.threads=9",
            "--allow-running-brokers",
            "-o",
            "json",
        )
        assert result.returncode == 0, result.stderr
        number = json.loads(result.stdout)["change_number"]
        wait_for(lambda: mismatches(state(fleet_)), timeout=30, message="the mismatch")
        observed = wait_for(
            lambda: [r for r in applied.read(state_dir, 1) if r.kind == "observed"],
            timeout=10,
            message="logged",
        )
        assert [
            (r.entity_path, r.extra["key"], r.extra["expected"], r.extra["reported"]) for r in observed
        ] == [("brokers/1", "log.cleaner.threads", "9", "1")]
        time.sleep(0.01)
        past = fleet_.cli(
            "describe",
            "--effective",
            "--broker",
            "1",
            "--at",
            "-0s",
            "--applied-log",
            str(state_dir),
            "-o",
            "json",
        )
        assert past.returncode == 0, past.stderr
        document = json.loads(past.stdout)
        (entry,) = [c for c in document["configs"] if c["name"] == "log.cleaner.threads"]
        assert (entry["value"], entry["stored"]) == ("1", "9")
        (difference,) = document["applied_log"]["differences"]
        assert difference["reported_by_broker"] is True and difference["change_number"] == number
