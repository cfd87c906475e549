"""``--wait`` never says "applied" for a broker that has not got the change (issue: the loop never lies).

With real ``configctl listener run`` processes (``fleet_of_three``): a known broker whose listener
is down is named (``down``) and the wait cannot exit 0 until it comes back or is retired; with no
live listener at all the wait is not silent; an ``alter`` that changes nothing still reports where
the fleet stands; forged and damaged nodes under ``/configctl`` are not taken at their word.
"""

from __future__ import annotations

import json
import signal

import pytest
from helpers import run_cli

from configctl.znodes import BrokerStateZNode, FleetRecordZNode

pytestmark = pytest.mark.zk


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


def statuses(result) -> dict[int, str]:
    return {b["broker_id"]: b["status"] for b in json.loads(result.stdout)["rollout"]["brokers"]}


def stop(process) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def alter(connect: str, value: str, *extra: str):
    return cli(connect, "alter", "--topic", "orders", "--add-config", f"retention.ms={value}", *extra)


def test_a_broker_whose_listener_is_down_is_named_until_it_is_retired(zk_connect, zk, fleet_of_three):
    stop(fleet_of_three[3])
    assert zk.exists(FleetRecordZNode.path(3)) is not None  # still known from its record
    result = alter(zk_connect, "86400000", "--wait", "3", "-o", "json")
    assert result.returncode == 10, result.stderr
    assert statuses(result) == {1: "applied", 2: "applied", 3: "down"}
    assert "broker(s) 3 (down) had not applied it" in result.stderr
    assert "the write is committed" in result.stderr and result.stderr.count("\n") == 1

    refused = cli(zk_connect, "retire", "1")  # a live broker is not retired
    assert refused.returncode != 0 and "live listener" in refused.stderr
    retired = cli(zk_connect, "retire", "3")
    assert retired.returncode == 0, retired.stderr
    assert zk.exists(FleetRecordZNode.path(3)) is None
    again = cli(zk_connect, "retire", "3")
    assert again.returncode != 0 and "no record" in again.stderr

    result = alter(zk_connect, "90000000", "--wait", "30", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert statuses(result) == {1: "applied", 2: "applied"}
    brokers = {b["broker_id"] for b in json.loads(cli(zk_connect, "status", "-o", "json").stdout)["brokers"]}
    assert brokers == {1, 2}


def test_with_no_live_listener_the_wait_is_not_silent(zk_connect, fleet_of_three):
    for process in fleet_of_three.values():
        stop(process)
    result = alter(zk_connect, "86400000", "--wait", "2", "-o", "json")
    assert result.returncode == 10, result.stderr
    assert statuses(result) == {1: "down", 2: "down", 3: "down"}


def test_a_listener_that_comes_back_during_the_wait_is_followed(zk_connect, fleet_of_three, tmp_path):
    stop(fleet_of_three[1])
    # a wait of 60 s; the listener starts again 1 s in: the wait ends when it has applied the change
    import subprocess
    import sys
    import threading
    import time

    from helpers import REPO_ROOT, child_env

    def restart() -> None:
        time.sleep(1.0)
        fleet_of_three[1] = subprocess.Popen(
            [sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", zk_connect, "--broker-id", "1",
             "--server-properties", str(REPO_ROOT / "examples" / "server-1.properties")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env(),
        )  # fmt: skip

    thread = threading.Thread(target=restart)
    thread.start()
    result = alter(zk_connect, "86400000", "--wait", "60", "-o", "json")
    thread.join()
    assert result.returncode == 0, result.stderr
    assert statuses(result) == {1: "applied", 2: "applied", 3: "applied"}


def test_no_change_with_wait_reports_a_broker_that_still_refuses_the_value(zk_connect, fleet_of_three):
    first = alter(zk_connect, "1000", "--wait", "30", "-o", "json")  # broker 2's plugin refuses it
    assert first.returncode == 9, first.stderr
    again = alter(zk_connect, "1000", "--wait", "30", "-o", "json")
    assert json.loads(again.stdout)["changed"] is False
    assert again.returncode == 9, again.stderr
    assert statuses(again) == {1: "applied", 2: "rejected", 3: "applied"}
    fixed = alter(zk_connect, "86400000", "--wait", "30")
    assert fixed.returncode == 0, fixed.stderr
    unchanged = alter(zk_connect, "86400000", "--wait", "30")
    assert unchanged.returncode == 0, unchanged.stderr
    assert "No change" in unchanged.stdout and "broker 2: applied" in unchanged.stderr


def test_a_forged_persistent_state_node_is_not_a_live_broker(zk_connect, zk, fleet_of_three):
    forged = json.dumps({"last_applied_change": 999999, "problems": []}).encode()
    zk.create(BrokerStateZNode.path(9), forged, makepath=True)  # persistent: nobody's session
    document = json.loads(cli(zk_connect, "status", "-o", "json").stdout)
    assert 9 not in {b["broker_id"] for b in document["brokers"]}
    result = alter(zk_connect, "86400000", "--wait", "30", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert 9 not in statuses(result)


def test_a_damaged_state_node_is_a_live_broker_with_an_unreadable_problem(zk_connect, zk, fleet_of_three):
    zk.create(BrokerStateZNode.path(8), b"\x00garbage", makepath=True, ephemeral=True)
    document = json.loads(cli(zk_connect, "status", "-o", "json").stdout)
    (broker,) = [b for b in document["brokers"] if b["broker_id"] == 8]
    assert broker["live"] is True and broker["last_applied_change"] is None
    assert [p["kind"] for p in broker["problems"]] == ["unreadable"]
    assert "state node cannot be read" in broker["problems"][0]["reason"]


def test_status_takes_a_damaged_fleet_record_field_by_field(zk_connect, zk, fleet_of_three):
    absurd = {"broker_id": "x", "host": ["h"], "last_seen_ms": 10**30, "last_applied_change": "7"}
    zk.create(FleetRecordZNode.path(6), json.dumps(absurd).encode(), makepath=True)
    result = cli(zk_connect, "status", "-o", "json")
    assert result.returncode == 0, result.stderr
    (broker,) = [b for b in json.loads(result.stdout)["brokers"] if b["broker_id"] == 6]
    assert (broker["host"], broker["last_seen_ms"], broker["last_applied_change"]) == (None, None, None)
    table = cli(zk_connect, "status")
    assert table.returncode == 0 and "Traceback" not in table.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "1e9", "soon"])
def test_a_wait_that_is_not_a_number_of_seconds_is_one_line_exit_2(zk_connect, value):
    result = alter(zk_connect, "86400000", f"--wait={value}")
    assert result.returncode == 2, result.stderr
    assert "not a number of seconds" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("given", [["--wait", "-1"], ["--wait=-1"], ["--wait", "-2.5"], ["--wait=-0.5"]])
def test_a_negative_wait_is_refused_as_a_value_not_as_an_unknown_option(zk_connect, given):
    result = alter(zk_connect, "86400000", *given)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: Invalid value for '--wait': '-") and "negative" in result.stderr
    assert "No such option" not in result.stderr and result.stderr.count("\n") == 1


def test_status_says_model_only_figures_are_computed_not_observed(zk_connect, fleet_of_three):
    document = json.loads(cli(zk_connect, "status", "-o", "json").stdout)
    assert {(b["observed"], b["observed_change"]) for b in document["brokers"]} == {(False, None)}
