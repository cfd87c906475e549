"""Canaries and waves on a real Kafka 4.4 KRaft cluster: the record in the cluster, each step judged by the brokers.

A KRaft cluster has no ZooKeeper to keep a rollout's record and no listener state to watch, so
the record lives in configctl's rollout topic (docs/reference/rollout-topic.md) and each step is
judged by asking every broker what it reports (and whether the controllers still register it).
Everything here is checked against what Kafka's own kafka-configs.sh reads from the cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from helpers import run_cli

pytestmark = pytest.mark.kafka

KEY = "log.cleaner.backoff.ms"
"""A cluster-wide dynamic broker config every 4.4 broker applies at once (a cleaner setting)."""


def cli(kraft, *args: str):
    return run_cli("--bootstrap-server", kraft.bootstrap, *args)


def described(kraft, *selector: str) -> str:
    done = kraft.config_command("--describe", *selector)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rollouts(kraft) -> list[dict]:
    listed = cli(kraft, "rollout", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def only_new(kraft, before: list[dict]) -> dict:
    new = [r for r in rollouts(kraft) if r["id"] not in {b["id"] for b in before}]
    assert len(new) == 1, new
    return new[0]


@pytest.fixture
def default_restored(kraft_cluster):
    """The cluster, with :data:`KEY` removed from brokers/<default>, /1 and /2 afterwards."""
    yield kraft_cluster
    cli(kraft_cluster, "alter", "--broker-defaults", "--delete-config", KEY)
    for b in (1, 2):
        cli(kraft_cluster, "alter", "--broker", str(b), "--delete-config", KEY)


def test_a_canary_on_kraft_is_proved_by_the_canary_broker_then_promoted(default_restored):
    kraft = default_restored
    before = rollouts(kraft)
    done = cli(
        kraft, "alter", "--broker-defaults", "--add-config", f"{KEY}=16000",
        "--canary", "1", "--soak", "2s", "--wait", "30", "--reason", "canary on kraft", "-o", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "promoted", report
    waited = [s for s in report["steps"] if s.get("part") == "wait"]
    assert waited and [b["broker_id"] for b in waited[0]["brokers"]] == [1], waited
    assert waited[0]["brokers"][0]["status"] == "applied", waited
    soaked = [s for s in report["steps"] if s.get("part") == "soak"]
    assert soaked and soaked[0]["ok"] and soaked[0]["seconds"] >= 2, soaked
    assert {b["broker_id"]: b["status"] for b in report["rollout"]["brokers"]} == {1: "applied", 2: "applied"}
    # Kafka's own tool: the default holds it, broker 1 keeps no override.
    assert f"{KEY}=16000" in described(kraft, "--entity-type", "brokers", "--entity-default")
    assert KEY not in described(kraft, "--entity-type", "brokers", "--entity-name", "1")
    record = only_new(kraft, before)
    assert record["state"] == "promoted", record
    history = cli(kraft, "history", "--broker", "1", "-o", "json")
    assert history.returncode == 0, history.stderr
    reasons = [h.get("reason", "") for h in json.loads(history.stdout)]
    assert any("canary on broker(s) 1" in r for r in reasons), reasons
    assert any("canary promoted" in r for r in reasons), reasons


def test_a_failing_check_aborts_the_canary_and_restores_the_canary_broker(default_restored):
    kraft = default_restored
    before = rollouts(kraft)
    done = cli(
        kraft, "alter", "--broker-defaults", "--add-config", f"{KEY}=17000",
        "--canary", "2", "--check", "echo unhealthy; exit 3", "--wait", "30",
    )  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert "the check exited 3: unhealthy" in done.stdout + done.stderr
    assert KEY not in described(kraft, "--entity-type", "brokers", "--entity-name", "2")
    assert KEY not in described(kraft, "--entity-type", "brokers", "--entity-default")
    record = only_new(kraft, before)
    assert record["state"] == "aborted", record
    shown = cli(kraft, "rollout", "show", record["id"], "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert not json.loads(shown.stdout).get("undo"), shown.stdout


def test_a_canary_on_an_unregistered_broker_is_refused_with_nothing_written(default_restored):
    kraft = default_restored
    before = rollouts(kraft)
    done = cli(kraft, "alter", "--broker-defaults", "--add-config", f"{KEY}=18000", "--canary", "7")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "canary broker(s) 7 are not registered" in done.stderr
    assert [r["id"] for r in rollouts(kraft)] == [r["id"] for r in before]


def test_waves_on_kraft_go_out_wave_by_wave_and_complete(kraft_cluster, unique, tmp_path):
    kraft = kraft_cluster
    first, second = unique("wave-a"), unique("wave-b")
    kraft.create_topics(first, second)
    desired = tmp_path / "desired.yaml"
    desired.write_text(
        f"topics:\n  {first}: {{retention.ms: '3600000'}}\n  {second}: {{retention.ms: '7200000'}}\n"
    )
    before = rollouts(kraft)
    done = cli(kraft, "apply", "-f", str(desired), "--yes", "--waves", "2", "--wait", "30", "-o", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    record = only_new(kraft, before)
    assert record["state"] == "completed", record
    assert "retention.ms=3600000" in described(kraft, "--entity-type", "topics", "--entity-name", first)
    assert "retention.ms=7200000" in described(kraft, "--entity-type", "topics", "--entity-name", second)


def test_an_abort_from_another_process_stops_a_soaking_canary_and_restores_it(default_restored):
    kraft = default_restored
    before = rollouts(kraft)
    running = subprocess.Popen(
        [
            sys.executable, "-m", "configctl", "--bootstrap-server", kraft.bootstrap, "alter",
            "--broker-defaults", "--add-config", f"{KEY}=19000", "--canary", "1", "--soak", "60s",
            "--wait", "30",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        record = wait_for_soak(kraft, before)
        aborted = cli(kraft, "rollout", "abort", record["id"])
        assert aborted.returncode == 0, aborted.stdout + aborted.stderr
        out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode != 0, out + err
    assert "aborted by someone else" in out + err
    assert KEY not in described(kraft, "--entity-type", "brokers", "--entity-name", "1")
    assert KEY not in described(kraft, "--entity-type", "brokers", "--entity-default")
    assert only_new(kraft, before)["state"] == "aborted"


def test_a_killed_canary_is_resumed_from_its_record_and_promoted(default_restored):
    kraft = default_restored
    before = rollouts(kraft)
    running = subprocess.Popen(
        [
            sys.executable, "-m", "configctl", "--bootstrap-server", kraft.bootstrap, "alter",
            "--broker-defaults", "--add-config", f"{KEY}=21000", "--canary", "2", "--soak", "10s",
            "--wait", "30",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        record = wait_for_soak(kraft, before)
    finally:
        running.kill()
        running.wait(timeout=30)
    shown = cli(kraft, "rollout", "show", record["id"], "-o", "json")
    assert json.loads(shown.stdout)["state"] == "running", shown.stdout  # its owner died with it
    resumed = cli(kraft, "rollout", "resume", record["id"], "-o", "json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["outcome"] == "promoted"
    assert f"{KEY}=21000" in described(kraft, "--entity-type", "brokers", "--entity-default")
    assert KEY not in described(kraft, "--entity-type", "brokers", "--entity-name", "2")


def test_a_canary_whose_first_write_a_broker_refuses_is_closed_and_blocks_nothing(kraft_cluster):
    kraft = kraft_cluster
    before = rollouts(kraft)
    refused = cli(
        kraft, "alter", "--broker-defaults", "--add-config", "log.cleaner.threads=9", "--canary", "1",
        "--soak", "1s", "--wait", "30",
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout + refused.stderr
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "nothing was written" in errors[0], refused.stderr
    record = only_new(kraft, before)
    assert record["state"] == "aborted", record
    assert "log.cleaner.threads" not in described(kraft, "--entity-type", "brokers", "--entity-name", "1")
    again = cli(kraft, "alter", "--broker-defaults", "--add-config", "log.cleaner.threads=2", "--canary", "1")
    assert again.returncode == 0, again.stdout + again.stderr  # nothing blocks the next one
    cli(kraft, "alter", "--broker-defaults", "--delete-config", "log.cleaner.threads")


def wait_for_soak(kraft, before: list[dict]) -> dict:
    """The new rollout's listing once its record says it is soaking."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = [r for r in rollouts(kraft) if r["id"] not in {b["id"] for b in before}]
        if new and "soak" in str(new[0].get("step", {}).get("activity", "")):
            return new[0]
        time.sleep(0.3)
    raise AssertionError("the canary never reached its soak")


def test_a_failing_wave_is_reverted_with_revert_on_failure(kraft_cluster, unique, tmp_path):
    kraft = kraft_cluster
    first, second = unique("revert-a"), unique("revert-b")
    kraft.create_topics(first, second)
    desired = tmp_path / "desired.yaml"
    desired.write_text(
        f"topics:\n  {first}: {{retention.ms: '3600000'}}\n  {second}: {{retention.ms: '7200000'}}\n"
    )
    before = rollouts(kraft)
    done = cli(
        kraft, "apply", "-f", str(desired), "--yes", "--waves", "2", "--wait", "30",
        "--check", "test \"$CONFIGCTL_WAVE\" = 1", "--revert-on-failure",
    )  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert "the check exited 1" in done.stdout + done.stderr
    record = only_new(kraft, before)
    assert record["state"] == "aborted", record
    for topic in (first, second):  # wave 1 went out and came back; wave 2 went out, failed, came back
        assert "retention.ms=" not in described(kraft, "--entity-type", "topics", "--entity-name", topic)
