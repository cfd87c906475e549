"""A broker's loggers (``broker-loggers/<id>``) on a real Kafka 4.4 KRaft cluster.

Kafka 4 keeps a logger's level in the broker's memory only (Log4j 2, ``LoggingController``): not
in the metadata log, so the brokers alone answer for them, each for its own, and a restart
forgets them. configctl reads every logger as Kafka 4's own kafka-configs.sh reads it, sends a
level to that broker alone, records the write in its history topic, asks the broker to judge a
dry run, and refuses in one line what Kafka refuses (a level not spelled as Kafka takes it, a
logger the broker does not have, the root logger's deletion), nothing written.
"""

from __future__ import annotations

import json

import pytest
from helpers import run_cli, wait_for

from configctl.entities import Entity, EntityType

LOGGER = "kafka.server.KafkaApis"
"""A logger every Kafka 4.4 broker has, with no level of its own in the harness's configuration."""


def cli(bootstrap: str, *args: str):
    return run_cli("--bootstrap-server", bootstrap, *args)


def configctl_levels(bootstrap: str, broker: str = "1") -> tuple[dict[str, str], int]:
    done = cli(bootstrap, "describe", "--broker-logger", broker, "-o", "json")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    return entry["config"], entry["version"]


def records(bootstrap: str, broker: str) -> list[dict]:
    """configctl's history of broker ``broker``'s loggers, newest first."""
    done = cli(bootstrap, "history", "--broker-logger", broker, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kafka_levels(kraft, broker: str = "1") -> dict[str, str]:
    """Every logger and its level as Kafka 4's own kafka-configs.sh reads them from the broker."""
    done = kraft.config_command("--describe", "--entity-type", "broker-loggers", "--entity-name", broker)
    assert done.returncode == 0, done.stdout + done.stderr
    levels = {}
    for line in done.stdout.splitlines()[1:]:  # "Dynamic configs for broker-logger 1 are:"
        name, _, rest = line.strip().partition("=")
        levels[name] = rest.split(" sensitive=")[0]
    return levels


def test_every_logger_is_read_from_the_broker_as_kafkas_own_tool_reads_it(kraft_combined):
    ours, _ = configctl_levels(kraft_combined.bootstrap)
    theirs = kafka_levels(kraft_combined)
    assert set(ours) <= set(theirs)  # the broker may make a logger since, never drops one
    assert {name: theirs[name] for name in ours} == ours
    assert (ours["root"], ours["kafka.request.logger"]) == ("INFO", "WARN")  # the harness's configuration


def test_a_level_set_goes_to_the_broker_and_is_recorded(kraft_combined):
    bootstrap = kraft_combined.bootstrap
    dry = cli(bootstrap, "alter", "--broker-logger", "1", "--add-config", f"{LOGGER}=DEBUG", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert kafka_levels(kraft_combined)[LOGGER] == "INFO"

    done = cli(
        bootstrap, "alter", "--broker-logger", "1", "--add-config", f"{LOGGER}=TRACE", "--reason", "OPS-33"
    )
    assert done.returncode == 0, done.stderr
    assert "Completed updating config for broker-logger 1" in done.stdout
    try:
        assert kafka_levels(kraft_combined)[LOGGER] == "TRACE"
        assert [r["config"][LOGGER] for r in records(bootstrap, "1") if r["reason"] == "OPS-33"] == ["TRACE"]
    finally:  # put it back as Kafka's own tool would (a level set to what it inherited)
        kraft_combined.config_command(
            "--alter",
            "--entity-type",
            "broker-loggers",
            "--entity-name",
            "1",
            "--add-config",
            f"{LOGGER}=INFO",
        )


@pytest.mark.parametrize(
    ("change", "says", "kafka_says"),
    [
        (("--add-config", f"{LOGGER}=debug"), "not a log level Kafka takes", "not a supported log level"),
        (
            ("--add-config", "no.such.Logger=DEBUG"),
            "invalid broker logger(s) no.such.Logger",
            "Invalid broker logger",
        ),
        (
            ("--delete-config", "root"),
            "root logger's level cannot be deleted",
            "Removing the log level of the root",
        ),
    ],
)
def test_what_kafka_refuses_is_refused_in_one_line_with_nothing_written(
    kraft_combined, change, says, kafka_says
):
    before = kafka_levels(kraft_combined)
    done = cli(kraft_combined.bootstrap, "alter", "--broker-logger", "1", *change)
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert says in line
    kafkas = kraft_combined.config_command(
        "--alter", "--entity-type", "broker-loggers", "--entity-name", "1", *change
    )
    assert kafkas.returncode != 0 and kafka_says in kafkas.stdout + kafkas.stderr
    after = kafka_levels(kraft_combined)
    assert {name: after[name] for name in before} == before


def test_a_broker_the_cluster_does_not_list_is_refused_in_one_line(kraft_combined):
    done = cli(kraft_combined.bootstrap, "describe", "--broker-logger", "7")
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert "broker 7 is not running" in line and "live in its memory only" in line


def test_a_deleted_level_inherits_again_and_a_root_level_moves_every_logger_that_inherits(kraft_combined):
    bootstrap = kraft_combined.bootstrap
    assert cli(bootstrap, "alter", "--broker-logger", "1", "--add-config", f"{LOGGER}=DEBUG").returncode == 0
    try:
        root = cli(bootstrap, "alter", "--broker-logger", "1", "--add-config", "root=WARN")
        assert root.returncode == 0, root.stderr
        levels = kafka_levels(kraft_combined)
        assert (levels[LOGGER], levels["kafka.server.ReplicaManager"]) == ("DEBUG", "WARN")  # set, inherited
        unset = cli(bootstrap, "alter", "--broker-logger", "1", "--delete-config", LOGGER)
        assert unset.returncode == 0, unset.stderr
        assert kafka_levels(kraft_combined)[LOGGER] == "WARN"  # the root logger's, inherited again
    finally:
        kraft_combined.config_command(
            "--alter", "--entity-type", "broker-loggers", "--entity-name", "1",
            "--add-config", f"root=INFO,{LOGGER}=INFO",
        )  # fmt: skip


def test_each_broker_has_its_own_and_a_restart_forgets_them(kraft_cluster):
    """Sent to broker 2 alone; broker 2 restarted runs its configuration's levels again, and
    configctl's history then no longer accounts for what it runs (one version past its record)."""
    bootstrap = kraft_cluster.bootstrap
    done = cli(
        bootstrap, "alter", "--broker-logger", "2", "--add-config", f"{LOGGER}=TRACE", "--reason", "restart"
    )
    assert done.returncode == 0, done.stderr
    assert (kafka_levels(kraft_cluster, "2")[LOGGER], kafka_levels(kraft_cluster, "1")[LOGGER]) == (
        "TRACE",
        "INFO",
    )
    (recorded,) = [r["version"] for r in records(bootstrap, "2") if r["reason"] == "restart"]

    kraft_cluster.cluster.stop([2])
    kraft_cluster.cluster.start(ids=[2])
    with kraft_cluster.admin() as admin:
        wait_for(lambda: admin.broker_ids() == [1, 2], timeout=60, message="broker 2 registered again")
        assert admin.logger_levels(Entity.of(EntityType.BROKER_LOGGERS, "2"))[LOGGER] == "INFO"
    levels, version = configctl_levels(bootstrap, "2")
    assert (levels[LOGGER], version) == ("INFO", recorded + 1)
