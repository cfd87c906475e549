"""A rollout whose first write the broker refused wrote nothing, and says so (issue 32 #4.5).

Through ``--bootstrap-server`` a rollout's record goes first (a broker write shares no
ZooKeeper transaction), then the broker writes. A canary whose override the broker refused left
the rollout open, its record claiming the write (an undo entry for it), blocking the next
rollout until ``rollout abort --force``. Now the rollout is closed (aborted) with the broker's
reason, no undo entry and no write claimed, exit 1 as any write the broker refused, and the next
rollout goes ahead. Shown by a real Kafka 3.9 broker (``log.cleaner.threads=9``: more than double
its one thread, which its reconfiguration step refuses).
"""

from __future__ import annotations

import json

import pytest
from conftest import broker_configs_restored, describe_stored

pytestmark = pytest.mark.kafka


def via_broker(fleet, *args: str):
    return fleet.cli("--bootstrap-server", fleet.bootstrap, *args)


def rollouts(fleet) -> list[dict]:
    listed = fleet.cli("rollout", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def assert_closed_without_a_write(fleet, before: list[dict], refused) -> None:
    assert refused.returncode == 1, refused.stdout + refused.stderr
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and refused.stderr.endswith(errors[0] + "\n"), refused.stderr
    assert "the broker refused" in errors[0] and "nothing was written" in errors[0], errors
    new = [r for r in rollouts(fleet) if r["id"] not in {b["id"] for b in before}]
    assert len(new) == 1, new
    assert new[0]["state"] == "aborted", new
    shown = fleet.cli("rollout", "show", new[0]["id"], "-o", "json")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert not record.get("undo"), record
    assert "the broker refused" in (record.get("failure") or ""), record
    assert not any("written on" in str(e.get("text")) for e in record.get("events", [])), record


def test_a_canary_whose_first_write_is_refused_is_closed_and_blocks_nothing(kafka_one):
    with broker_configs_restored(kafka_one):
        before_rollouts = rollouts(kafka_one)
        before = describe_stored(kafka_one, "--broker", "1")
        refused = via_broker(
            kafka_one, "alter", "--broker-defaults", "--add-config", "log.cleaner.threads=9",
            "--canary", "1", "--soak", "1s", "--wait", "30",
        )  # fmt: skip
        assert_closed_without_a_write(kafka_one, before_rollouts, refused)
        assert describe_stored(kafka_one, "--broker", "1") == before
        promoted = via_broker(
            kafka_one, "alter", "--broker-defaults", "--add-config", "log.cleaner.threads=2",
            "--canary", "1", "--soak", "1s", "--wait", "30",
        )  # fmt: skip
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr  # no --force, nothing blocks it


def test_waves_whose_first_write_is_refused_are_closed_and_block_nothing(kafka_one, tmp_path):
    desired = tmp_path / "desired.yaml"
    with broker_configs_restored(kafka_one):
        before_rollouts = rollouts(kafka_one)
        desired.write_text("brokers:\n  '1': {log.cleaner.threads: 9}\n")
        refused = via_broker(kafka_one, "apply", "-f", str(desired), "--yes", "--waves", "1", "--wait", "30")
        assert_closed_without_a_write(kafka_one, before_rollouts, refused)
        desired.write_text("brokers:\n  '1': {log.cleaner.threads: 2}\n")
        accepted = via_broker(kafka_one, "apply", "-f", str(desired), "--yes", "--waves", "1", "--wait", "30")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
