"""A broker's loggers as a family: the entity, its checks, and the rules that read what a broker reports.

What Kafka does with them is shown against real brokers (tests/kafka/test_admin_broker_loggers.py
for 3.9, tests/kraft/test_kraft_broker_loggers.py for 4.4). Here, without I/O: the entity table's
row (named by broker id, no ``<default>``, in no listing of stored configs), the level check as
Kafka spells levels, the requests a change becomes (a logger the broker lacks and the root's
deletion refused before anything is sent), what a write's read-back must hold, the version
history gives, and the command line's one-line refusal without ``--bootstrap-server``.
"""

from __future__ import annotations

import pytest
from helpers import run_cli

from configctl.adminapi import families
from configctl.entities import TYPE_ORDER, ZOOKEEPER_TYPES, Entity, EntityType, parse_entity_type
from configctl.errors import InvalidInput
from configctl.handlers import handler_for
from configctl.handlers.brokerlogger import history_version, levels, levels_hold, levels_taken
from configctl.handlers.validate import validate_config
from configctl.store import Change, Stored
from configctl.znodes import HistoryRecord

pytestmark = pytest.mark.unit

BROKER_1 = Entity.of(EntityType.BROKER_LOGGERS, "1")
REPORTED = {"root": "INFO", "kafka.server.KafkaApis": "INFO", "kafka.request.logger": "WARN"}


def test_the_entity_is_a_broker_id_kept_in_that_brokers_memory_and_in_no_listing():
    assert (BROKER_1.path, BROKER_1.label, BROKER_1.type.singular) == (
        "broker-loggers/1",
        "broker-loggers/1",
        "broker-logger",
    )
    assert BROKER_1.type.in_broker_memory and not BROKER_1.type.kraft_only and not BROKER_1.type.has_default
    assert parse_entity_type("broker-logger") is EntityType.BROKER_LOGGERS
    assert EntityType.BROKER_LOGGERS not in TYPE_ORDER and EntityType.BROKER_LOGGERS not in ZOOKEEPER_TYPES
    assert Entity.from_path("broker-loggers/2") == Entity.of(EntityType.BROKER_LOGGERS, "2")
    assert sorted([BROKER_1, Entity.of(EntityType.CLIENT_METRICS, "m")])[-1] == BROKER_1
    for bad, says in (("x", "must be a non-negative integer broker id"), ("", "have no <default> entity")):
        with pytest.raises(InvalidInput, match=says):
            Entity.named(EntityType.BROKER_LOGGERS, bad)


def test_a_level_is_checked_as_kafka_spells_it_and_a_logger_name_is_the_brokers():
    assert levels() == ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")
    assert validate_config(BROKER_1, {"any.logger.Name": "DEBUG", "root": "OFF"}) == []
    (problem,) = validate_config(BROKER_1, {"kafka.server.KafkaApis": "debug"})
    assert "'debug' is not a log level Kafka takes" in problem
    assert handler_for(BROKER_1).follows(BROKER_1, 1) and not handler_for(BROKER_1).follows(BROKER_1, 2)


def change(config: dict[str, str], previous: dict[str, str] = REPORTED) -> Change:
    return Change(BROKER_1, config, 0, previous=previous)


def test_only_what_the_operator_changed_is_sent_and_a_logger_the_broker_lacks_is_refused():
    now = Stored(BROKER_1, {**REPORTED, "kafka.Born.Since": "INFO"}, 0)  # a logger made since the read
    asked = families.requests_of(change({**REPORTED, "kafka.server.KafkaApis": "DEBUG"}), now)
    assert (asked.set_keys, asked.delete_keys) == ({"kafka.server.KafkaApis": "DEBUG"}, [])
    unset = {k: v for k, v in REPORTED.items() if k != "kafka.server.KafkaApis"}
    asked = families.requests_of(change(unset), now)
    assert (asked.set_keys, asked.delete_keys) == ({}, ["kafka.server.KafkaApis"])
    with pytest.raises(InvalidInput, match=r"invalid broker logger\(s\) no.such.Logger.*nothing was written"):
        families.requests_of(change({**REPORTED, "no.such.Logger": "DEBUG"}), now)
    rootless = {k: v for k, v in REPORTED.items() if k != "root"}
    with pytest.raises(InvalidInput, match="root logger's level cannot be deleted"):
        families.requests_of(change(rootless), now)


def test_they_always_go_through_their_broker_and_never_to_zookeeper():
    assert families.goes_through(change(REPORTED), running=set())  # the client refuses a broker not listed
    with pytest.raises(InvalidInput, match=r"live only in each broker's memory.*ZooKeeper has no place"):
        families.for_zookeeper(change(REPORTED))


def test_a_write_holds_when_every_level_it_set_is_reported():
    asked = {**REPORTED, "root": "WARN", "kafka.server.KafkaApis": "DEBUG"}
    # on Kafka 4 a root level moves every logger that inherits it: not the write's to check
    moved = {
        "root": "WARN",
        "kafka.server.KafkaApis": "DEBUG",
        "kafka.request.logger": "WARN",
        "kafka.Other": "WARN",
    }
    assert levels_taken(asked, REPORTED, moved)
    assert not levels_taken(asked, REPORTED, {**moved, "kafka.server.KafkaApis": "INFO"})
    # a deleted level: the logger stays, at what it inherits
    unset = {k: v for k, v in REPORTED.items() if k != "kafka.server.KafkaApis"}
    assert levels_taken(unset, REPORTED, REPORTED)


def record(version: int, config: dict[str, str]) -> HistoryRecord:
    return HistoryRecord("broker-loggers/1", version, 1000 + version, "me@here", "", config, {})


def test_the_version_is_the_newest_records_while_its_levels_hold():
    assert history_version([], REPORTED) == 0
    records = [record(0, REPORTED), record(1, {**REPORTED, "kafka.server.KafkaApis": "DEBUG"})]
    running = {**REPORTED, "kafka.server.KafkaApis": "DEBUG", "kafka.Born.Since": "INFO"}
    assert levels_hold(records[1].config, running)
    assert history_version(records, running) == 1  # a logger made since is no write
    assert history_version(records, REPORTED) == 2  # a restart (or a write outside configctl) forgot it


@pytest.mark.parametrize(
    "command",
    [
        ("describe", "--broker-logger", "1"),
        ("alter", "--broker-logger", "1", "--add-config", "root=DEBUG"),
        ("alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--delete-config", "kafka"),
    ],
)
def test_without_bootstrap_server_the_command_line_refuses_in_one_line(command):
    code, out, err = run_cli("--zookeeper", "127.0.0.1:1", *command)
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()
    assert "broker-loggers live only in each broker's memory" in line and "--bootstrap-server" in line


def test_every_broker_loggers_at_once_is_not_a_listing():
    code, out, err = run_cli(
        "--bootstrap-server", "127.0.0.1:1", "describe", "--entity-type", "broker-loggers"
    )
    assert code == 1 and out == ""
    assert "name the broker-logger: --entity-name" in err
