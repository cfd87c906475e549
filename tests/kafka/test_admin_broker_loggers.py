"""A broker's loggers (``broker-loggers/<id>``) through the Admin API of a real Kafka 3.9 broker.

Kafka keeps a logger's level in the broker's memory only (``RuntimeLoggerManager``, log4j): the
broker answers DescribeConfigs on ConfigResource BROKER_LOGGER with every logger it has, and takes
IncrementalAlterConfigs on it, sent to that very broker. Here configctl reads the loggers as Kafka's
own ConfigCommand does, writes a level through the broker and records it in configctl's history
(the ZooKeeper history every other write through the brokers uses), deletes it (the logger then
inherits again: the root logger's level here), and refuses what Kafka refuses (a level not spelled
as Kafka takes it, a logger the broker does not have, deleting the root logger's level) before
anything is sent, where the broker itself refuses it too. Without ``--bootstrap-server`` configctl
would read ZooKeeper, which has no place for them: refused in one line.
"""

from __future__ import annotations

import json

import pytest

from configctl.adminapi.store import BrokersThroughAdmin
from configctl.entities import Entity, EntityType
from configctl.errors import BrokerRefused, InvalidInput, ValidationFailed
from configctl.handlers import validate
from configctl.store import Change

LOGGER = "kafka.server.KafkaApis"
"""A logger every Kafka 3.9 broker has, with no level of its own in the harness's log4j.properties."""
BROKER_1 = Entity.of(EntityType.BROKER_LOGGERS, "1")
IN_MEMORY = "live only in each broker's memory"


def kafka_levels(fleet, broker: str = "1") -> dict[str, str]:
    """Every logger and its level as Kafka's own ConfigCommand reads them through the broker."""
    done = fleet.cluster.config_command(
        "--describe", "--entity-type", "broker-loggers", "--entity-name", broker
    )
    assert done.returncode == 0, done.stdout + done.stderr
    levels = {}
    for line in done.stdout.splitlines()[1:]:  # "Dynamic configs for broker-logger 1 are:"
        name, _, rest = line.strip().partition("=")
        levels[name] = rest.split(" sensitive=")[0]
    return levels


@pytest.fixture
def through(kafka_one):
    """configctl's writes through the brokers of ``kafka_one`` (with its ZooKeeper for history)."""
    with kafka_one.store() as store:
        writes = BrokersThroughAdmin(store, kafka_one.bootstrap)
        try:
            yield writes
        finally:
            writes.close()


def test_every_logger_is_read_from_the_broker_as_kafkas_own_tool_reads_it(kafka_one):
    with kafka_one.admin() as admin:
        ours = admin.logger_levels(BROKER_1)
        reported = admin.describe_resource(BROKER_1)
    theirs = kafka_levels(kafka_one)
    # log4j never drops a logger, and the broker may make one since: every logger read first is there after
    assert set(ours) <= set(theirs)
    assert {name: theirs[name] for name in ours} == ours
    assert ours["root"] == "INFO" and ours["kafka.request.logger"] == "WARN"  # the harness's log4j.properties
    assert {entry.source for entry in reported.values()} == {"DYNAMIC_BROKER_LOGGER_CONFIG"}


def test_a_level_set_then_deleted_goes_through_the_broker_and_is_recorded(kafka_one, through):
    before = through.read_in_memory(BROKER_1)
    assert before.config[LOGGER] == before.config["root"] == "INFO"  # inherited: no level of its own
    raised = Change(BROKER_1, {**before.config, LOGGER: "TRACE"}, before.version, previous=before.config)
    (committed,) = through.commit([raised], reason="chasing a slow produce")
    try:
        assert committed.change_number is None  # nothing notified: no node holds a logger's level
        assert kafka_levels(kafka_one)[LOGGER] == "TRACE"
        now = through.read_in_memory(BROKER_1)
        assert (now.config[LOGGER], now.version) == ("TRACE", committed.version)
        record = through.inner.history(BROKER_1)[0]
        assert (record.version, record.reason, record.changed[LOGGER]) == (
            committed.version,
            "chasing a slow produce",
            "INFO",
        )
    finally:
        now = through.read_in_memory(BROKER_1)
        unset = {k: v for k, v in now.config.items() if k != LOGGER}
        (deleted,) = through.commit([Change(BROKER_1, unset, now.version, previous=now.config)])
    # deleting a level makes the logger inherit again: the root logger's level (its only ancestor)
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"
    assert through.read_in_memory(BROKER_1).version == deleted.version
    assert through.inner.history(BROKER_1)[0].changed == {LOGGER: "TRACE"}


def test_a_level_kafka_does_not_take_is_refused_by_configctl_and_by_the_broker(kafka_one):
    with pytest.raises(ValidationFailed, match="'debug' is not a log level Kafka takes"):
        validate.check(BROKER_1, {LOGGER: "debug"})
    with kafka_one.admin() as admin, pytest.raises(BrokerRefused, match="not a supported log level"):
        admin.alter_resource(BROKER_1, {LOGGER: "debug"}, validate_only=True)
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"


def test_a_logger_the_broker_lacks_is_refused_as_kafkas_tool_refuses_it(kafka_one, through):
    before = through.read_in_memory(BROKER_1)
    recorded = len(through.inner.history(BROKER_1))
    unknown = Change(
        BROKER_1, {**before.config, "no.such.Logger": "DEBUG"}, before.version, previous=before.config
    )
    with pytest.raises(InvalidInput, match=r"invalid broker logger\(s\) no.such.Logger.*nothing was written"):
        through.commit([unknown])
    with (
        kafka_one.admin() as admin,
        pytest.raises(BrokerRefused, match=r"Logger no\.such\.Logger does not exist"),
    ):
        admin.alter_resource(BROKER_1, {"no.such.Logger": "DEBUG"}, validate_only=True)
    kafkas = kafka_one.cluster.config_command(
        "--alter",
        "--entity-type",
        "broker-loggers",
        "--entity-name",
        "1",
        "--add-config",
        "no.such.Logger=DEBUG",
    )
    assert (
        kafkas.returncode != 0 and "Invalid broker logger(s): no.such.Logger" in kafkas.stdout + kafkas.stderr
    )
    assert "no.such.Logger" not in kafka_levels(kafka_one)
    assert len(through.inner.history(BROKER_1)) == recorded  # nothing recorded


def test_the_root_loggers_level_cannot_be_deleted(kafka_one, through):
    before = through.read_in_memory(BROKER_1)
    rootless = {k: v for k, v in before.config.items() if k != "root"}
    with pytest.raises(InvalidInput, match="root logger's level cannot be deleted"):
        through.commit([Change(BROKER_1, rootless, before.version, previous=before.config)])
    with kafka_one.admin() as admin, pytest.raises(BrokerRefused, match="Removing the log level of the root"):
        admin.alter_resource(BROKER_1, {}, ["root"], validate_only=True)
    assert kafka_levels(kafka_one)["root"] == "INFO"


def test_a_dry_run_asks_the_broker_and_changes_nothing(kafka_one, through):
    before = through.read_in_memory(BROKER_1)
    through.validate(
        [Change(BROKER_1, {**before.config, LOGGER: "DEBUG"}, before.version, previous=before.config)]
    )
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"


def test_a_broker_that_is_not_running_cannot_be_asked(kafka_one):
    with kafka_one.admin() as admin, pytest.raises(InvalidInput, match="broker 7 is not running"):
        admin.logger_levels(Entity.of(EntityType.BROKER_LOGGERS, "7"))


@pytest.mark.parametrize(
    "command",
    [
        ("describe", "--broker-logger", "1"),
        ("alter", "--broker-logger", "1", "--add-config", f"{LOGGER}=DEBUG"),
        ("alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--delete-config", LOGGER),
    ],
)
def test_without_bootstrap_server_it_is_refused_in_one_line(kafka_one, command):
    done = kafka_one.cli(*command)
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert IN_MEMORY in line and "--bootstrap-server" in line and "nothing was written" in line
    with kafka_one.store() as store:
        assert "broker-loggers" not in store.session.children("/config")
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"


def test_a_scram_write_asks_for_the_controller_once_per_client(kafka_one, unique, monkeypatch):
    from configctl.adminapi.scram import upsertion

    user = unique("scram-cached")
    with kafka_one.admin() as admin:
        asked = []
        real = admin.controller_id
        monkeypatch.setattr(admin, "controller_id", lambda: asked.append(1) or real())
        admin.alter_scram_credentials(user, [upsertion("SCRAM-SHA-256", "iterations=4096,password=one")])
        admin.alter_scram_credentials(user, [upsertion("SCRAM-SHA-512", "iterations=4096,password=two")])
        admin.alter_scram_credentials(user, deletions=["SCRAM-SHA-256", "SCRAM-SHA-512"])
        assert len(asked) == 1
        assert admin.scram_credentials(user) == {}


def test_the_command_line_through_the_brokers_of_a_zookeeper_mode_cluster(kafka_one):
    """``describe``/``alter``/``history --broker-logger 1 --bootstrap-server``, as an operator types them."""
    via = ("--bootstrap-server", kafka_one.bootstrap)
    shown = kafka_one.cli(*via, "describe", "--broker-logger", "1", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    (entry,) = json.loads(shown.stdout)
    assert entry["entity_path"] == "broker-loggers/1"
    assert entry["config"][LOGGER] == "INFO" and entry["config"]["root"] == "INFO"

    dry = kafka_one.cli(*via, "alter", "--broker-logger", "1", "--add-config", f"{LOGGER}=DEBUG", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"

    done = kafka_one.cli(
        *via, "alter", "--broker-logger", "1", "--add-config", f"{LOGGER}=TRACE", "--reason", "OPS-33"
    )
    try:
        assert done.returncode == 0, done.stderr
        assert "Completed updating config for broker-logger 1" in done.stdout
        assert kafka_levels(kafka_one)[LOGGER] == "TRACE"
        history = kafka_one.cli(*via, "history", "--broker-logger", "1", "-o", "json")
        assert history.returncode == 0, history.stderr
        newest = json.loads(history.stdout)[0]
        assert (newest["reason"], newest["config"][LOGGER]) == ("OPS-33", "TRACE")
    finally:
        unset = kafka_one.cli(*via, "alter", "--broker-logger", "1", "--delete-config", LOGGER)
    assert unset.returncode == 0, unset.stderr
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"  # inherited from the root logger again

    for bad, says in (
        (f"{LOGGER}=debug", "not a log level Kafka takes"),
        ("no.such.Logger=DEBUG", "invalid broker logger"),
    ):
        refused = kafka_one.cli(*via, "alter", "--broker-logger", "1", "--add-config", bad)
        assert refused.returncode == 1, refused.stdout
        (line,) = refused.stderr.strip().splitlines()
        assert says in line


def test_a_change_built_on_zookeepers_empty_reading_is_refused_with_nothing_written(kafka_one, through):
    """ZooKeeper has no node for a broker's loggers: a change read from there (version absent, no
    logger at all) is refused before anything is sent, whatever reads the store was composed with."""
    with kafka_one.store() as store:
        from_zookeeper = store.read(BROKER_1, strict=False)
    assert (from_zookeeper.config, from_zookeeper.version) == ({}, -1)
    change = Change(BROKER_1, {LOGGER: "DEBUG"}, from_zookeeper.version, previous={})
    with pytest.raises(InvalidInput, match="read from ZooKeeper, which has no place for them"):
        through.commit([change])
    with pytest.raises(InvalidInput, match="read from ZooKeeper, which has no place for them"):
        through.validate([change])
    assert kafka_levels(kafka_one)[LOGGER] == "INFO"
