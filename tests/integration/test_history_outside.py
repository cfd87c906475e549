"""Writes outside configctl on a real ZooKeeper, as ``kafka-configs.sh --zookeeper`` makes them (the
config node set, then a change notification): ``history`` shows them, ``blame`` and ``--at`` answer
from them, a gap nobody can date is said, and the console's entity page shows them.

What a real broker does with ``--bootstrap-server`` is in tests/kafka/test_outside_writers.py."""

from __future__ import annotations

import json
import time

import pytest
from helpers import run_cli
from kazoo.client import KazooClient

from configctl.audit.timeline_outside import mark_from_store
from configctl.console import views
from configctl.documents.history import entity_history, keys_changed
from configctl.entities import Entity
from configctl.timeref import iso
from configctl.zk.configstore import ZooKeeperStore
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PREFIX, encode_entity_config, encode_notification

pytestmark = pytest.mark.zk

ORDERS = Entity.from_path("topics/orders")


def cli(zk_connect: str, *args: str) -> list | dict:
    result = run_cli("--zookeeper", zk_connect, *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def kafka_configs_zookeeper(zk: KazooClient, config: dict[str, str], *, notify: bool = True) -> None:
    """What Kafka's ConfigCommand (--zookeeper) does: set the node, then announce it."""
    zk.set(f"/config/{ORDERS.path}", encode_entity_config(config))
    if notify:
        zk.create(f"{CHANGES_PATH}/{NOTIFICATION_PREFIX}", encode_notification(ORDERS), sequence=True)


def test_a_write_outside_configctl_is_in_history_blame_and_the_console(
    zk_connect, zk, embedded_listeners
) -> None:
    embedded_listeners(1)
    cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000", "--yes")
    kafka_configs_zookeeper(zk, {"retention.ms": "3600000"})
    entries = cli(zk_connect, "history", "--topic", "orders")
    assert [(e["version"], e.get("written_outside_configctl", False)) for e in entries] == [
        (1, True),
        (0, False),
    ]
    assert entries[0]["changed"] == {"retention.ms": "1000"}
    assert entries[0]["config"] == {"retention.ms": "3600000"} and entries[0]["change_number"] == 1
    text = run_cli("--zookeeper", zk_connect, "history", "--topic", "orders").stdout
    assert "outside configctl" in text and "1 write(s) outside configctl" in " ".join(text.split())

    # an entity configctl never wrote is in the fleet's feed too (version 0: its creation)
    zk.create("/config/topics/payments", encode_entity_config({"retention.ms": "60000"}), makepath=True)
    payments = Entity.from_path("topics/payments")
    zk.create(f"{CHANGES_PATH}/{NOTIFICATION_PREFIX}", encode_notification(payments), sequence=True)
    feed = cli(zk_connect, "history", "--since", "-1h")
    assert [(e["entity_path"], e["version"], e.get("change_number"), e["keys"]) for e in feed] == [
        ("topics/payments", 0, 2, ["retention.ms"]),
        ("topics/orders", 1, 1, ["retention.ms"]),
        ("topics/orders", 0, None, ["retention.ms"]),
    ]

    blamed = cli(zk_connect, "blame", "--broker", "1", "--topic", "orders", "--key", "retention.ms")
    assert blamed["value"] == "3600000"
    assert [(link["version"], link.get("written_outside_configctl", False)) for link in blamed["chain"]] == [
        (1, True),
        (0, False),
    ]

    interval = {
        "entity_path": ORDERS.path,
        "key": "retention.ms",
        "opened_by_change": 1,
        "closed_by_change": 0,
    }
    with ZooKeeperStore.connect(zk_connect) as store:
        document = entity_history(store, ORDERS)
        timeline = mark_from_store({"intervals": [interval]}, store)  # audit --timeline's document
    (marked,) = timeline["intervals"]
    assert (marked["opened_outside_configctl"], marked["closed_outside_configctl"]) == (True, False)
    assert timeline["outside_writes"]["1"]["keys"] == ["retention.ms"]
    shown = [
        {**e, "keys_changed": keys_changed(entry)}
        for e, entry in zip(document.to_json(), document.entries, strict=True)
    ]
    page = views._render("entity.html", page="entity", versions={}, live="", doc={
        "entity_label": "topic orders", "entity_path": "topics/orders", "stored": {"config": {}, "version": 1},
        "latest_change_number": None, "applied": [], "effective_omitted": 0, "effective_unavailable": [],
    }, keys=[], by_broker=[], history=shown, problem=None)  # fmt: skip
    assert (
        page.count('<tr class="outside">') == 1
        and "written outside configctl (change 1)" in page
        and "<code>retention.ms</code>" in page
    )


def test_a_gap_nothing_dates_is_said_and_a_moment_inside_it_is_unknown(
    zk_connect, zk, embedded_listeners
) -> None:
    embedded_listeners(1)
    cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1000", "--yes")
    kafka_configs_zookeeper(zk, {"retention.ms": "2000"}, notify=False)
    kafka_configs_zookeeper(zk, {"retention.ms": "3000"}, notify=False)
    time.sleep(0.05)
    cli(zk_connect, "alter", "--topic", "orders", "--add-config", "segment.ms=60000", "--yes")
    entries = cli(zk_connect, "history", "--topic", "orders")
    (gap,) = [e for e in entries if e.get("written_outside_configctl")]
    assert (gap["version"], gap["writes"], gap["time_ms"], gap["changed"]) == (
        2,
        2,
        None,
        {"retention.ms": "1000"},
    )
    assert gap["summary"] == "2 writes outside configctl, not recorded"
    feed = cli(zk_connect, "history", "--since", "-1h")
    assert [(e["version"], e.get("written_outside_configctl", False)) for e in feed] == [
        (3, False),
        (2, True),
        (0, False),
    ]
    between = (entries[-1]["time_ms"] + entries[0]["time_ms"]) // 2
    inside = run_cli(
        "--zookeeper",
        zk_connect,
        "describe",
        "--effective",
        "--broker",
        "1",
        "--topic",
        "orders",
        "--at",
        iso(between),
    )
    assert inside.returncode == 13 and "2 write(s) outside configctl, not recorded" in inside.stderr
    now = cli(zk_connect, "describe", "--effective", "--broker", "1", "--topic", "orders", "--at", "-0s")
    assert {c["name"]: c["value"] for c in now["configs"]}["retention.ms"] == "3000"
