"""What Kafka writes is read correctly by every configctl command and by the listener beside it.

Each test writes with Kafka's own ``kafka-configs.sh`` (``kafka.admin.ConfigCommand`` from the
brokers' jars), through the broker (``--bootstrap-server``: IncrementalAlterConfigs,
AlterClientQuotas, AlterUserScramCredentials) or, where Kafka 3.9 still allows it, straight to
ZooKeeper (``--zookeeper``, SCRAM credentials), then asks configctl: ``describe`` (the stored
config), ``describe --effective`` (beside what the broker reports), ``export`` then ``plan``
(nothing to change), ``history`` (the current version is not configctl's) and ``status`` with the
listener's state node (the listener applied Kafka's notification).
"""

from __future__ import annotations

import ipaddress
import json
import random
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import (
    KafkaFleet,
    broker_configs_restored,
    describe_stored,
    differences,
    effective,
    until_agree,
)
from helpers import wait_for

from configctl.entities import Entity
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.znodes import CHANGES_PATH, decode_notification

pytestmark = pytest.mark.kafka

QUOTAS = "producer_byte_rate=1048576,consumer_byte_rate=2048,request_percentage=12.5"
QUOTAS_STORED = {"producer_byte_rate": "1048576", "consumer_byte_rate": "2048", "request_percentage": "12.5"}


def kafka_configs(fleet: KafkaFleet, *args: str, zookeeper: bool = False) -> subprocess.CompletedProcess[str]:
    """kafka-configs.sh ARGS; it must succeed."""
    result = fleet.cluster.config_command(*args, zookeeper=zookeeper)
    assert result.returncode == 0, f"kafka-configs.sh {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def kafka_notified(fleet: KafkaFleet, entity_path: str) -> int:
    """The number of Kafka's newest change notification, which must be about ``entity_path``."""
    with fleet.store() as store:
        number = store.latest_change_number()
        assert number is not None
        data, _ = store.session.get(f"{CHANGES_PATH}/config_change_{number:010d}")
        assert decode_notification(data).path == entity_path
        return number


def listener_applied(fleet: KafkaFleet, number: int, broker_id: int = 1) -> None:
    """The configctl listener beside the broker applied change ``number``: ``status`` says it is not
    behind and has no problem with that change or a later one (the brokers are shared: an earlier
    test's problem is that test's)."""
    with fleet.store() as store:
        wait_for(
            lambda: _state_node(store, broker_id).get("last_applied_change", -1) >= number,
            timeout=30,
            message=f"broker {broker_id}'s listener applies change {number}",
        )
    result = fleet.cli("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["latest_change_number"] >= number
    broker = next(b for b in document["brokers"] if b["broker_id"] == broker_id)
    assert (broker["live"], broker["behind"], broker["last_applied_change"]) == (
        True,
        0,
        document["latest_change_number"],
    )
    assert [p for p in broker["problems"] if (p["change_number"] or 0) >= number] == []


def _state_node(store: ConfigStore, broker_id: int) -> dict:
    """The state the listener beside broker ``broker_id`` publishes (``{}`` while it has none)."""
    found = store.session.get(f"/configctl/brokers/{broker_id}")
    return json.loads(found[0]) if found is not None else {}


def export_then_plan(fleet: KafkaFleet, tmp_path: Path, entity_type: str) -> str:
    """``export --entity-type T --file F`` then ``plan -f F``: exit 0, no changes. The export's text."""
    exported = tmp_path / f"{entity_type}.yaml"
    result = fleet.cli("export", "--entity-type", entity_type, "--file", str(exported))
    assert result.returncode == 0, result.stderr
    plan = fleet.cli("plan", "-f", str(exported), "-o", "json")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert json.loads(plan.stdout)["changes"] == 0
    return exported.read_text(encoding="utf-8")


def plan_of(fleet: KafkaFleet, tmp_path: Path, text: str) -> tuple[int, dict]:
    desired = tmp_path / "desired.yaml"
    desired.write_text(text, encoding="utf-8")
    result = fleet.cli("plan", "-f", str(desired), "-o", "json")
    assert result.returncode in (0, 2), result.stderr
    return result.returncode, json.loads(result.stdout)


def history_table(fleet: KafkaFleet, *selector: str) -> tuple[list[str], str]:
    """``history`` as people see it: the version column of each row, and the text as one line."""
    result = fleet.cli("history", *selector)
    assert result.returncode == 0, result.stderr
    cells = [line.split("│")[0].strip() for line in result.stdout.splitlines() if "│" in line]
    rows = [cell for cell in cells if cell]  # a folded row goes on with an empty version cell
    return rows, " ".join(result.stdout.split())  # the notes, whatever the terminal width


def reported_topic(fleet: KafkaFleet, topic: str) -> dict:
    with fleet.admin() as admin:
        return {name: entry.to_json() for name, entry in admin.describe_topic(topic).items()}


def reported_broker(fleet: KafkaFleet, broker_id: int) -> dict:
    with fleet.admin() as admin:
        return {name: entry.to_json() for name, entry in admin.describe_broker(broker_id).items()}


def agree(ours, theirs) -> None:
    left, right = until_agree(ours, theirs)
    assert left == right, "configctl and the broker disagree:\n" + "\n".join(differences(left, right))


# -- topics ------------------------------------------------------------------------------------


def test_a_topic_config_kafka_wrote_is_read_by_every_command(kafka_one, unique, tmp_path):
    topic = unique("kafka-wrote")
    kafka_one.create_topics(topic)
    kafka_configs(
        kafka_one,
        *("--entity-type", "topics", "--entity-name", topic, "--alter"),
        *("--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete],max.message.bytes=2097152"),
    )
    number = kafka_notified(kafka_one, f"topics/{topic}")

    result = kafka_one.cli("describe", "--topic", topic, "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {
            "entity_type": "topics",
            "entity_name": topic,
            "entity_path": f"topics/{topic}",
            "config": {
                "cleanup.policy": "compact,delete",
                "max.message.bytes": "2097152",
                "retention.ms": "86400000",
            },
            "version": 1,  # 0 is the empty config Kafka wrote when it created the topic
        }
    ]
    agree(lambda: effective(kafka_one, 1, "--topic", topic), lambda: reported_topic(kafka_one, topic))
    assert reported_topic(kafka_one, topic)["cleanup.policy"]["value"] == "compact,delete"
    listener_applied(kafka_one, number)
    exported = export_then_plan(kafka_one, tmp_path, "topics")
    assert topic in exported
    # nothing configctl wrote: history shows Kafka's writes (the topic's creation, then its
    # alter) as written outside configctl, with what they changed
    entries = json.loads(kafka_one.cli("history", "--topic", topic, "-o", "json").stdout)
    assert [
        (e["version"], e["writes"], e["change_number"], e["written_outside_configctl"]) for e in entries
    ] == [(1, 2, number, True)]
    assert entries[0]["changed"] == {"cleanup.policy": None, "max.message.bytes": None, "retention.ms": None}
    rows, text = history_table(kafka_one, "--topic", topic)
    assert rows == ["0-1"]
    # (the row's reason may wrap in the table's column: the summary below the table does not)
    assert "2 write(s) outside configctl" in text


def test_history_does_not_show_a_version_kafka_wrote_as_configctl_s(kafka_one, unique):
    topic = unique("history")
    kafka_one.create_topics(topic)
    assert kafka_one.cli("alter", "--topic", topic, "--add-config", "segment.ms=3600000").returncode == 0
    rows, text = history_table(kafka_one, "--topic", topic)
    assert rows == ["1 *"] and "* current version (1)" in text and "outside" not in text

    kafka_configs(
        kafka_one,
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--alter",
        "--add-config",
        "retention.ms=7200000",
    )
    entries = json.loads(kafka_one.cli("history", "--topic", topic, "-o", "json").stdout)
    assert [(e["version"], e["config"], e.get("written_outside_configctl", False)) for e in entries] == [
        (2, {"retention.ms": "7200000", "segment.ms": "3600000"}, True),
        (1, {"segment.ms": "3600000"}, False),
    ]
    assert entries[0]["changed"] == {"retention.ms": None}
    rows, text = history_table(kafka_one, "--topic", topic)
    assert rows == ["2", "1"] and "current version (" not in text
    assert "1 write(s) outside configctl" in text
    # a configctl write on top of Kafka's is current again, recorded with Kafka's key in it
    assert kafka_one.cli("alter", "--topic", topic, "--add-config", "segment.ms=7200000").returncode == 0
    entries = json.loads(kafka_one.cli("history", "--topic", topic, "-o", "json").stdout)
    assert entries[0]["version"] == 3
    assert entries[0]["config"] == {"retention.ms": "7200000", "segment.ms": "7200000"}
    rows, text = history_table(kafka_one, "--topic", topic)
    assert rows == ["3 *", "2", "1"] and "* current version (3)" in text


def test_history_of_a_quota_node_kafka_removed_and_created_again(kafka_one, unique):
    """Kafka 3.5+ deletes an emptied quota node; created again, it is at version 0 once more."""
    client = unique("app")
    assert (
        kafka_one.cli("alter", "--client", client, "--add-config", "producer_byte_rate=1024").returncode == 0
    )
    name = ("--entity-type", "clients", "--entity-name", client, "--alter")
    kafka_configs(kafka_one, *name, "--delete-config", "producer_byte_rate")
    assert (
        json.loads(kafka_one.cli("describe", "--client", client, "-o", "json").stdout)[0]["version"] is None
    )
    rows, text = history_table(kafka_one, "--client", client)
    assert rows == ["deleted", "0"] and "config node removed outside configctl" in text

    kafka_configs(kafka_one, *name, "--add-config", "consumer_byte_rate=4096")
    assert describe_stored(kafka_one, "--client", client) == {"consumer_byte_rate": "4096"}
    # configctl's record of version 0 is of the node Kafka deleted, not of this version 0
    number = kafka_notified(kafka_one, f"clients/{client}")
    entries = json.loads(kafka_one.cli("history", "--client", client, "-o", "json").stdout)
    assert [(e["version"], e["config"], e.get("written_outside_configctl", False)) for e in entries] == [
        (0, {"consumer_byte_rate": "4096"}, True),
        (-1, {}, True),
        (0, {"producer_byte_rate": "1024"}, False),
    ]
    assert entries[0]["change_number"] == number
    rows, text = history_table(kafka_one, "--client", client)
    assert rows == ["0", "deleted", "0"] and "current version (" not in text
    listener_applied(kafka_one, number)


# -- brokers: per broker and <default> ---------------------------------------------------------


def test_broker_configs_kafka_wrote_are_read_by_every_command(kafka_one, tmp_path):
    with broker_configs_restored(kafka_one):
        kafka_configs(
            kafka_one,
            *("--entity-type", "brokers", "--entity-default", "--alter"),
            *("--add-config", "log.retention.ms=7200000,log.cleaner.backoff.ms=20000"),
        )
        kafka_configs(
            kafka_one,
            *("--entity-type", "brokers", "--entity-name", "1", "--alter"),
            *("--add-config", "log.cleaner.threads=2,log.cleaner.io.max.bytes.per.second=1048576"),
        )
        number = kafka_notified(kafka_one, "brokers/1")
        defaults = describe_stored(kafka_one, "--broker-defaults")
        assert {k: defaults.get(k) for k in ("log.retention.ms", "log.cleaner.backoff.ms")} == {
            "log.retention.ms": "7200000",
            "log.cleaner.backoff.ms": "20000",
        }
        own = describe_stored(kafka_one, "--broker", "1")
        assert {k: own.get(k) for k in ("log.cleaner.threads", "log.cleaner.io.max.bytes.per.second")} == {
            "log.cleaner.threads": "2",
            "log.cleaner.io.max.bytes.per.second": "1048576",
        }
        agree(lambda: effective(kafka_one, 1), lambda: reported_broker(kafka_one, 1))
        reported = reported_broker(kafka_one, 1)
        assert reported["log.cleaner.threads"]["source"] == "DYNAMIC_BROKER_CONFIG"
        assert reported["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        listener_applied(kafka_one, number)
        exported = export_then_plan(kafka_one, tmp_path, "brokers")
        assert "log.cleaner.io.max.bytes.per.second: 1048576" in exported
        assert "written outside configctl" in history_table(kafka_one, "--broker", "1")[1]


# -- quotas: users, clients, users+clients, defaults, IPs --------------------------------------

# (kafka-configs.sh entity flags, configctl selector); {u} and {c} are this test's own names
QUOTA_CASES = [
    (("--entity-type", "users", "--entity-name", "{u}"), ("--user", "{u}")),
    (("--entity-type", "users", "--entity-name", "CN={u} one"), ("--user", "CN={u} one")),
    (("--entity-type", "clients", "--entity-name", "{c}"), ("--client", "{c}")),
    (
        (
            "--entity-type",
            "users",
            "--entity-name",
            "{u}",
            "--entity-type",
            "clients",
            "--entity-name",
            "{c}",
        ),
        ("--user", "{u}", "--client", "{c}"),
    ),
    (
        ("--entity-type", "users", "--entity-name", "{u}", "--entity-type", "clients", "--entity-default"),
        ("--user", "{u}", "--client-defaults"),
    ),
]


@pytest.mark.parametrize(("kafka", "selector"), QUOTA_CASES, ids=lambda s: " ".join(s))
def test_quotas_kafka_wrote_are_read_by_every_command(kafka_one, unique, tmp_path, kafka, selector):
    names = {"u": unique("user"), "c": unique("app")}
    kafka_args = tuple(part.format(**names) for part in kafka)
    args = tuple(part.format(**names) for part in selector)
    kafka_configs(kafka_one, *kafka_args, "--alter", "--add-config", QUOTAS)
    entity = _entity(args)
    number = kafka_notified(kafka_one, entity.path)

    result = kafka_one.cli("describe", *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    (document,) = json.loads(result.stdout)
    assert (document["entity_path"], document["config"], document["version"]) == (
        entity.path,
        QUOTAS_STORED,
        0,
    )
    if entity.client is None:
        assert document["entity_name"] == entity.name  # shown plain, as the user typed it
    with kafka_one.admin() as admin:
        assert admin.client_quotas(entity) == QUOTAS_STORED
    listener_applied(kafka_one, number)
    if "--client-defaults" not in args:
        ours = effective(kafka_one, 1, *args)
        assert {k: ours[k]["value"] for k in QUOTAS_STORED} == QUOTAS_STORED
    export_then_plan(kafka_one, tmp_path, "clients" if entity.type.value == "clients" else "users")


DEFAULT_CASES = [
    (("--entity-type", "users", "--entity-default"), ("--user-defaults",), ("--user", "{u}")),
    (("--entity-type", "clients", "--entity-default"), ("--client-defaults",), ("--client", "{c}")),
    (
        ("--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"),
        ("--user-defaults", "--client-defaults"),
        ("--user", "{u}", "--client", "{c}"),
    ),
]


@pytest.mark.parametrize(("kafka", "selector", "follower"), DEFAULT_CASES, ids=lambda s: " ".join(s))
def test_default_quotas_kafka_wrote_are_read_by_every_command(
    kafka_one, unique, tmp_path, kafka, selector, follower
):
    names = {"u": unique("user"), "c": unique("app")}
    kafka_configs(kafka_one, *kafka, "--alter", "--add-config", "consumer_byte_rate=4096")
    try:
        entity = _entity(selector)
        listener_applied(kafka_one, kafka_notified(kafka_one, entity.path))
        assert describe_stored(kafka_one, *selector) == {"consumer_byte_rate": "4096"}
        with kafka_one.admin() as admin:
            assert admin.client_quotas(entity) == {"consumer_byte_rate": "4096"}
        # a user or client with nothing of its own gets the default
        ours = effective(kafka_one, 1, *(part.format(**names) for part in follower))
        assert ours["consumer_byte_rate"]["value"] == "4096"
        export_then_plan(kafka_one, tmp_path, "clients" if selector == ("--client-defaults",) else "users")
    finally:  # other tests compare the defaults exactly
        result = kafka_one.cli("alter", *selector, "--delete-config", "consumer_byte_rate")
        assert result.returncode == 0, result.stderr


def test_an_ipv4_connection_rate_kafka_wrote_is_read_by_every_command(kafka_one, tmp_path):
    ip = f"192.0.2.{random.randint(1, 254)}"  # TEST-NET-1: nothing connects from there
    kafka_configs(
        kafka_one,
        "--entity-type",
        "ips",
        "--entity-name",
        ip,
        "--alter",
        "--add-config",
        "connection_creation_rate=25",
    )
    entity = Entity.of("ips", ip)
    listener_applied(kafka_one, kafka_notified(kafka_one, f"ips/{ip}"))
    result = kafka_one.cli("describe", "--ip", ip, "-o", "json")
    assert result.returncode == 0, result.stderr
    (document,) = json.loads(result.stdout)
    assert (document["entity_name"], document["config"]) == (ip, {"connection_creation_rate": "25"})
    with kafka_one.admin() as admin:
        assert admin.client_quotas(entity) == {"connection_creation_rate": "25"}
    assert effective(kafka_one, 1, "--ip", ip)["connection_creation_rate"]["value"] == "25"
    assert f"{ip}:\n    connection_creation_rate: 25" in export_then_plan(kafka_one, tmp_path, "ips")


def test_an_ip_default_kafka_wrote_is_read_by_every_command(kafka_one, tmp_path):
    kafka_configs(
        kafka_one,
        "--entity-type",
        "ips",
        "--entity-default",
        "--alter",
        "--add-config",
        "connection_creation_rate=1000",
    )
    try:
        listener_applied(kafka_one, kafka_notified(kafka_one, "ips/<default>"))
        assert describe_stored(kafka_one, "--ip-defaults") == {"connection_creation_rate": "1000"}
        with kafka_one.admin() as admin:
            assert admin.client_quotas(Entity.of("ips", "<default>")) == {"connection_creation_rate": "1000"}
        assert effective(kafka_one, 1, "--ip", "192.0.2.1")["connection_creation_rate"]["value"] == "1000"
        export_then_plan(kafka_one, tmp_path, "ips")
    finally:
        result = kafka_one.cli("alter", "--ip-defaults", "--delete-config", "connection_creation_rate")
        assert result.returncode == 0, result.stderr


def test_kafka_3_9_cannot_write_or_look_up_an_ipv6_entity_through_the_broker(kafka_one):
    """AlterClientQuotas URL-encodes the IP before checking it (``::1`` → ``%3A%3A1``), so Kafka 3.9
    refuses every IPv6 entity and writes nothing; an exact lookup misses one configctl wrote."""
    ip = str(ipaddress.IPv6Address(f"fd00::{random.randint(1, 0xFFFF):x}"))
    encoded = quote(ip, safe="")
    refused = kafka_one.cluster.config_command(
        "--entity-type", "ips", "--entity-name", ip, "--alter", "--add-config", "connection_creation_rate=25"
    )
    assert refused.returncode != 0
    assert f"InvalidRequestException: {encoded} is not a valid IP or resolvable host." in refused.stderr
    with kafka_one.store() as store:
        assert not {ip, encoded} & set(store.session.children("/config/ips"))
    listed = json.loads(kafka_one.cli("describe", "--entity-type", "ips", "-o", "json").stdout)
    assert not [d for d in listed if d["entity_name"] in (ip, encoded)]
    with kafka_one.admin() as admin:
        assert admin.client_quotas(Entity.of("ips", ip)) == {}

    # written by configctl as typed (ips/fd00::...), the broker lists it, kafka-configs.sh finds
    # it in the listing but not by its name
    assert kafka_one.cli("alter", "--ip", ip, "--add-config", "connection_creation_rate=25").returncode == 0
    try:
        with kafka_one.admin() as admin:
            wait_for(
                lambda: admin.client_quotas(Entity.of("ips", ip)) == {"connection_creation_rate": "25"},
                timeout=30,
                message="the broker lists the IPv6 entity",
            )
        every = kafka_configs(kafka_one, "--entity-type", "ips", "--describe").stdout
        assert f"Quota configs for ip '{ip}' are connection_creation_rate=25.0" in every
        named = kafka_configs(kafka_one, "--entity-type", "ips", "--entity-name", ip, "--describe").stdout
        assert ip not in named and "connection_creation_rate" not in named
    finally:
        assert (
            kafka_one.cli("alter", "--ip", ip, "--delete-config", "connection_creation_rate").returncode == 0
        )


def _entity(args: tuple[str, ...]) -> Entity:
    user = client = None
    it = iter(args)
    for flag in it:
        if flag == "--user":
            user = next(it)
        elif flag == "--user-defaults":
            user = "<default>"
        elif flag == "--client":
            client = next(it)
        elif flag == "--client-defaults":
            client = "<default>"
    if user is None:
        return Entity.of("clients", client)
    return Entity.of("users", user, client)


# -- SCRAM credentials -------------------------------------------------------------------------


@pytest.mark.parametrize("through", ["zookeeper", "bootstrap-server"])
def test_a_scram_credential_kafka_wrote_is_read_by_every_command(kafka_one, unique, tmp_path, through):
    user = unique("CN=scram") + " one" if through == "bootstrap-server" else unique("scram")
    password = unique("pw")
    kafka_configs(
        kafka_one,
        *("--entity-type", "users", "--entity-name", user, "--alter"),
        *("--add-config", f"SCRAM-SHA-256=[iterations=8192,password={password}]"),
        zookeeper=through == "zookeeper",
    )
    entity = Entity.of("users", user)
    listener_applied(kafka_one, kafka_notified(kafka_one, entity.path))
    assert describe_stored(kafka_one, "--user", user) == {"SCRAM-SHA-256": "******"}
    with kafka_one.admin() as admin:
        wait_for(
            lambda: admin.scram_credentials(user) == {"SCRAM-SHA-256": 8192}, timeout=30, message="credential"
        )
    # configctl checks a plain password against the credential Kafka stored
    yaml_user = json.dumps(user)
    code, plan = plan_of(
        kafka_one,
        tmp_path,
        f"users:\n  {yaml_user}: {{SCRAM-SHA-256: [iterations=8192, password={password}]}}\n",
    )
    assert (code, plan["changes"]) == (0, 0)
    code, plan = plan_of(
        kafka_one, tmp_path, f"users:\n  {yaml_user}: {{SCRAM-SHA-256: [iterations=8192, password=other]}}\n"
    )
    assert (code, plan["changes"]) == (2, 1)
    exported = export_then_plan(kafka_one, tmp_path, "users")
    assert ",iterations=8192" in exported


# -- the audit: the broker's own report beside what configctl reads from ZooKeeper -------------


def test_the_audit_s_inputs_agree_on_what_kafka_wrote(kafka_one, unique, tmp_path):
    """The audit compares the brokers' snapshots with the desired state configctl reads from
    ZooKeeper (``missed_changes``). The fixture's listener keeps no state directory, so the
    snapshot is ``configctl snapshot --bootstrap-server`` (the broker's own report); both inputs
    must hold what Kafka wrote, so a Kafka node read wrong (a name, a value) would be a missed
    change. The Spark job itself is left to tests/kafka/test_snapshot.py (10-25 s a run)."""
    topic, user, client = unique("audited"), unique("CN=audit") + " one", unique("app")
    kafka_one.create_topics(topic)
    as_user = ("--entity-type", "users", "--entity-name", user)
    writes = {  # entity path: (kafka-configs.sh entity flags, the config it adds)
        f"topics/{topic}": (("--entity-type", "topics", "--entity-name", topic), "retention.ms=7200000"),
        Entity.of("users", user).path: (as_user, "producer_byte_rate=4096"),
        Entity.of("users", user, client).path: (
            (*as_user, "--entity-type", "clients", "--entity-name", client),
            "consumer_byte_rate=2048",
        ),
    }
    for entity, config in writes.values():
        kafka_configs(kafka_one, *entity, "--alter", "--add-config", config)
    expected = {path: dict([config.split("=")]) for path, (_, config) in writes.items()}

    result = kafka_one.cli("audit", "desired-state", "-o", "json")
    assert result.returncode == 0, result.stderr
    desired = json.loads(result.stdout)["expected"]
    assert {
        path: {e["name"]: e["value"] for e in desired if e["entity_path"] == path} for path in expected
    } == expected

    out = tmp_path / "snapshots"
    result = kafka_one.cli("--bootstrap-server", kafka_one.bootstrap, "snapshot", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in (out / "broker-1.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {
        path: {line["name"]: line["value"] for line in lines if line["entity_path"] == path}
        for path in expected
    } == expected
