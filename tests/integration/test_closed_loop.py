"""Closing the loop (see docs/reference/state-and-fleet-nodes.md), with three real ``configctl listener run`` processes.

``--wait`` after alter/apply/rollback, ``configctl status``, and ``describe --effective``'s
progress: a change every broker applies, one a broker's plugin rejects, a frozen broker, a node
the listeners may not read, poison JSON, and a broker that is down.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess

import pytest
from helpers import run_cli
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

pytestmark = pytest.mark.zk


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


def with_signal(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, sig)


def rollout(result) -> dict[int, dict]:
    return {b["broker_id"]: b for b in json.loads(result.stdout)["rollout"]["brokers"]}


def test_a_change_every_broker_applies_waits_and_exits_0(zk_connect, fleet_of_three):
    result = cli(
        zk_connect,
        "alter",
        "--topic",
        "orders",
        "--add-config",
        "retention.ms=86400000",
        "--wait",
        "30",
        "-o",
        "json",
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["rollout"]["change_number"] == document["change_number"]
    assert {b: s["status"] for b, s in rollout(result).items()} == {1: "applied", 2: "applied", 3: "applied"}
    # and as people see it, piped: one line per broker
    piped = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=90000000", "--wait")
    assert piped.returncode == 0, piped.stderr
    assert all(f"broker {b}: applied" in piped.stderr for b in (1, 2, 3))


def test_a_plugin_rejection_is_named_with_its_reason_and_the_write_stays_committed(
    zk_connect, zk, fleet_of_three
):
    result = cli(
        zk_connect,
        "alter",
        "--topic",
        "orders",
        "--add-config",
        "retention.ms=1000",
        "--wait",
        "30",
        "-o",
        "json",
    )
    assert result.returncode == 9, result.stderr
    statuses = rollout(result)
    assert statuses[2]["status"] == "rejected" and "below the minimum" in statuses[2]["reason"]
    assert statuses[1]["status"] == statuses[3]["status"] == "applied"
    assert "the write is committed" in result.stderr and result.stderr.count("\n") == 1
    assert json.loads(zk.get("/config/topics/orders")[0])["config"] == {"retention.ms": "1000"}
    # status names the refusal too, with its reason
    detail = cli(zk_connect, "status", "--broker", "2", "-o", "json")
    assert detail.returncode == 0
    problems = json.loads(detail.stdout)["problems"]
    assert [(p["kind"], p["entity_path"]) for p in problems] == [("rejected", "topics/orders")]
    # describe --effective says broker 2 still runs the old value, and why
    effective = json.loads(
        cli(zk_connect, "describe", "--effective", "--broker", "2", "--topic", "orders", "-o", "json").stdout
    )
    assert effective["problems"][0]["kind"] == "rejected" and effective["pending"] is False
    (retention,) = [c for c in effective["configs"] if c["name"] == "retention.ms"]
    assert retention["value"] != "1000" and retention["source"] != "topics/orders"  # what it kept
    assert retention["stored"] == "1000"  # beside it, the value stored and refused
    assert all("stored" not in c for c in effective["configs"] if c["name"] != "retention.ms")
    table = cli(zk_connect, "describe", "--effective", "--broker", "2", "--topic", "orders")
    assert "stored (not in force)" in table.stdout
    # the other brokers run what is stored: nothing beside it
    other = json.loads(
        cli(zk_connect, "describe", "--effective", "--broker", "1", "--topic", "orders", "-o", "json").stdout
    )
    assert [c["value"] for c in other["configs"] if c["name"] == "retention.ms"] == ["1000"]
    assert all("stored" not in c for c in other["configs"])


def test_a_frozen_broker_is_pending_and_the_wait_times_out_with_exit_10(zk_connect, fleet_of_three):
    frozen = fleet_of_three[3]
    with_signal(frozen, signal.SIGSTOP)
    try:
        result = cli(
            zk_connect,
            "alter",
            "--topic",
            "t",
            "--add-config",
            "retention.ms=86400000",
            "--wait",
            "3",
            "-o",
            "json",
        )
        assert result.returncode == 10, result.stderr
        statuses = rollout(result)
        assert statuses[3]["status"] == "pending"
        assert statuses[1]["status"] == statuses[2]["status"] == "applied"
        assert "broker(s) 3 (pending) had not applied it" in result.stderr
        effective = json.loads(
            cli(zk_connect, "describe", "--effective", "--broker", "3", "--topic", "t", "-o", "json").stdout
        )
        assert effective["pending"] is True
    finally:
        with_signal(frozen, signal.SIGCONT)


def test_a_node_the_listeners_may_not_read_is_unreadable_for_each_and_never_stalls(
    zk_connect, zk, fleet_of_three
):
    zk.ensure_path("/config/users")  # open parents, as configctl creates them without --zk-auth
    zk.ensure_path("/config/changes")
    owner = KazooClient(hosts=zk_connect, auth_data=[("digest", "admin:secret")])
    owner.start(timeout=30)
    try:
        owner.create(
            "/config/users/mallory",
            b'{"version":1,"config":{"producer_byte_rate":"1"}}',
            acl=[make_digest_acl("admin", "secret", all=True)],
            makepath=True,
        )
        owner.create(
            "/config/changes/config_change_",
            b'{"version":2,"entity_path":"users/mallory"}',
            sequence=True,
            makepath=True,
        )
    finally:
        owner.stop()
        owner.close()
    # a later change still reaches every broker
    later = cli(
        zk_connect, "alter", "--topic", "after", "--add-config", "retention.ms=86400000", "--wait", "30"
    )
    assert later.returncode == 0, later.stderr
    status = json.loads(cli(zk_connect, "status", "-o", "json").stdout)
    for broker in status["brokers"]:
        kinds = {(p["kind"], p["entity_path"]) for p in broker["problems"]}
        assert ("unreadable", "users/mallory") in kinds, broker


def test_poison_json_is_reported_and_later_changes_apply(zk_connect, zk, fleet_of_three):
    zk.create("/config/changes/config_change_", b"{not json", sequence=True, makepath=True)
    later = cli(
        zk_connect, "alter", "--client", "app", "--add-config", "producer_byte_rate=1024", "--wait", "30"
    )
    assert later.returncode == 0, later.stderr
    status = json.loads(cli(zk_connect, "status", "-o", "json").stdout)
    assert all(any(p["kind"] == "poison" for p in b["problems"]) for b in status["brokers"])


def test_status_lists_live_brokers_and_kafka_brokers_without_a_listener(zk_connect, zk, fleet_of_three):
    zk.create("/brokers/ids/7", b"{}", makepath=True, ephemeral=True)
    result = cli(zk_connect, "status", "-o", "json")
    assert result.returncode == 0
    document = json.loads(result.stdout)
    live = {b["broker_id"]: b["live"] for b in document["brokers"]}
    assert live == {1: True, 2: True, 3: True, 7: False}
    table = cli(zk_connect, "status")
    assert table.returncode == 0 and "Fleet status" in table.stdout
