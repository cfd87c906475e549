"""history and rollback against a real ZooKeeper: records, the history JSON (docs/reference/json-output.md), exact-bytes undo."""

from __future__ import annotations

import json

from helpers import run_cli
from kazoo.client import KazooClient


def cli(zk_connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", zk_connect, *args, **kwargs)


def alter(zk_connect: str, *args: str, **kwargs) -> None:
    result = cli(zk_connect, "alter", *args, **kwargs)
    assert result.returncode == 0, result.stderr


def history(zk_connect: str, *selection: str) -> list[dict]:
    result = cli(zk_connect, "history", *selection, "--output", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_history_lists_every_write_newest_first_with_contract_6_fields(zk_connect):
    alter(zk_connect, "--topic", "orders", "--add-config", "retention.ms=1", "--reason", "first")
    alter(
        zk_connect, "--topic", "orders", "--add-config", "retention.ms=2", env={"CONFIGCTL_REASON": "second"}
    )
    alter(zk_connect, "--topic", "orders", "--delete-config", "retention.ms")
    entries = history(zk_connect, "--topic", "orders")
    assert [set(e) for e in entries] == [{"version", "time_ms", "identity", "reason", "config"}] * 3
    assert [(e["version"], e["reason"], e["config"]) for e in entries] == [
        (2, "", {}),
        (1, "second", {"retention.ms": "2"}),
        (0, "first", {"retention.ms": "1"}),
    ]
    assert entries[0]["time_ms"] >= entries[1]["time_ms"] >= entries[2]["time_ms"] > 1_600_000_000_000
    assert all(e["identity"] for e in entries)
    # the generic spelling selects the same entity, and the table names the changes
    assert history(zk_connect, "--entity-type", "topics", "--entity-name", "orders") == entries
    table = cli(zk_connect, "history", "--topic", "orders")
    assert table.returncode == 0 and "-retention.ms" in table.stdout and "second" in table.stdout
    assert history(zk_connect, "--topic", "never-written") == []


def test_history_of_user_client_entities_masks_secrets(zk_connect):
    alter(zk_connect, "--user", "User:bob", "--add-config", "SCRAM-SHA-256=[password=bob-secret]")
    alter(zk_connect, "--user", "User:bob", "--client", "app1", "--add-config", "consumer_byte_rate=10")
    (user,) = history(zk_connect, "--user", "User:bob")
    assert user["config"] == {"SCRAM-SHA-256": "******"}
    (client,) = history(zk_connect, "--user", "User:bob", "--client", "app1")
    assert client["config"] == {"consumer_byte_rate": "10"}


def test_rollback_restores_the_exact_earlier_bytes(zk_connect, zk: KazooClient):
    alter(zk_connect, "--topic", "orders", "--add-config", "retention.ms=1,cleanup.policy=[compact,delete]")
    bytes_at_0 = zk.get("/config/topics/orders")[0]
    alter(zk_connect, "--topic", "orders", "--add-config", "retention.ms=2,segment.ms=3600000")
    alter(zk_connect, "--topic", "orders", "--delete-config", "cleanup.policy")
    assert zk.get("/config/topics/orders")[0] != bytes_at_0

    result = cli(zk_connect, "rollback", "--topic", "orders", "--to", "0", "--yes", "--reason", "bad deploy")
    assert result.returncode == 0, result.stderr
    assert "Restored" in result.stdout and "cleanup.policy" in result.stdout  # the diff was shown
    data, stat = zk.get("/config/topics/orders")
    assert data == bytes_at_0 and stat.version == 3
    newest = history(zk_connect, "--topic", "orders")[0]
    assert newest["version"] == 3 and newest["reason"] == "rollback to 0: bad deploy"
    # the rollback sent a notification like any write
    last = sorted(zk.get_children("/config/changes"))[-1]
    assert json.loads(zk.get(f"/config/changes/{last}")[0]) == {"version": 2, "entity_path": "topics/orders"}
    # and can itself be undone
    assert cli(zk_connect, "rollback", "--topic", "orders", "--to", "2", "--yes").returncode == 0
    assert json.loads(zk.get("/config/topics/orders")[0])["config"] == {
        "retention.ms": "2",
        "segment.ms": "3600000",
    }


def test_rollback_to_the_current_config_writes_nothing(zk_connect, zk):
    alter(zk_connect, "--broker-defaults", "--add-config", "log.retention.ms=5")
    result = cli(zk_connect, "rollback", "--broker-defaults", "--to", "0", "--yes", "--output", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["changed"] is False
    assert zk.get("/config/brokers/<default>")[1].version == 0


def test_rollback_dry_run_and_json(zk_connect, zk):
    alter(zk_connect, "--client", "app1", "--add-config", "producer_byte_rate=1")
    alter(zk_connect, "--client", "app1", "--add-config", "producer_byte_rate=2")
    result = cli(zk_connect, "rollback", "--client", "app1", "--to", "0", "--dry-run", "--output", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["dry_run"] is True and document["version_before"] == 1 and document["version"] is None
    assert document["changes"] == [{"name": "producer_byte_rate", "kind": "change", "old": "2", "new": "1"}]
    assert zk.get("/config/clients/app1")[1].version == 1


def test_rollback_errors_are_one_line(zk_connect, zk):
    alter(zk_connect, "--topic", "orders", "--add-config", "retention.ms=1")
    alter(zk_connect, "--topic", "orders", "--add-config", "retention.ms=2")
    missing = cli(zk_connect, "rollback", "--topic", "orders", "--to", "7", "--yes")
    assert missing.returncode == 6
    assert missing.stderr.strip() == (
        "error: no history record of version 7 for topic orders (recorded versions: 1, 0)"
    )
    unconfirmed = cli(zk_connect, "rollback", "--topic", "orders", "--to", "0")
    assert unconfirmed.returncode == 1 and "pass --yes" in unconfirmed.stderr
    no_entity = cli(zk_connect, "rollback", "--to", "0", "--yes")
    assert no_entity.returncode == 1 and no_entity.stderr.startswith("error: name an entity")
    assert zk.get("/config/topics/orders")[1].version == 1


def test_history_is_bounded(zk_connect, zk):
    env = {"CONFIGCTL_HISTORY_LIMIT": "3"}
    for value in range(5):
        alter(zk_connect, "--topic", "t", "--add-config", f"retention.ms={value}", env=env)
    entries = history(zk_connect, "--topic", "t")
    assert [e["version"] for e in entries] == [4, 3, 2]
    assert len(zk.get_children("/configctl/history/topics/t")) == 3
    too_old = cli(zk_connect, "rollback", "--topic", "t", "--to", "0", "--yes")
    assert too_old.returncode == 6


def test_apply_writes_are_in_history_with_their_reason(zk_connect, tmp_path):
    file = tmp_path / "d.yaml"
    file.write_text("topics: {orders: {retention.ms: 10}}\n")
    assert cli(zk_connect, "apply", "-f", str(file), "--yes").returncode == 0
    file.write_text("topics: {orders: {retention.ms: 20}}\n")
    assert cli(zk_connect, "apply", "-f", str(file), "--yes", "--reason", "OPS-42").returncode == 0
    entries = history(zk_connect, "--topic", "orders")
    assert [(e["version"], e["reason"]) for e in entries] == [(1, "OPS-42"), (0, "apply d.yaml")]
    assert cli(zk_connect, "rollback", "--topic", "orders", "--to", "0", "--yes").returncode == 0
    assert cli(zk_connect, "plan", "-f", str(file)).returncode == 2  # the file no longer matches


def test_history_says_deleted_where_a_write_removed_the_node(zk_connect, zk):
    alter(zk_connect, "--client", "app1", "--add-config", "consumer_byte_rate=10")
    alter(zk_connect, "--client", "app1", "--delete-config", "consumer_byte_rate")
    assert zk.exists("/config/clients/app1") is None  # an emptied quota node is removed, as Kafka does
    table = cli(zk_connect, "history", "--client", "app1")
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "consumer_byte_rate" in line]
    assert len(rows) == 2
    assert rows[0].split()[0] == "deleted" and rows[1].split()[0] == "0"
    assert "no config node now" in " ".join(table.stdout.split())
    # the JSON keeps the store's number: -1 is "no node", as describe's version is null for it
    assert [e["version"] for e in history(zk_connect, "--client", "app1")] == [-1, 0]
