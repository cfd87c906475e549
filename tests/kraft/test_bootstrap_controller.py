"""``--bootstrap-controller`` on real Kafka 4.4 KRaft clusters, beside Kafka 4's own kafka-configs.sh.

What a controller answers is asked of real ones (the controller-only node 100 of ``kraft_cluster``,
the combined node 1 of ``kraft_combined``); what configctl does there is compared with what
kafka-configs.sh --bootstrap-controller does on the same cluster. Kafka's tool writes configs
through the controllers; configctl does not, since it cannot record the write in its history
topic (brokers serve topics, controllers do not): refused in one line, nothing written.
"""

from __future__ import annotations

import json

import pytest
from helpers import run_cli, wait_for
from kafka.protocol.admin import (
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeUserScramCredentialsRequest,
)

from configctl.adminapi.controllers import ControllerClient
from configctl.adminapi.features import cluster_mode, features_request
from configctl.errors import KafkaUnavailable

# Kafka's API keys (ApiKeys): what a client of the controllers would need for configctl's work.
PRODUCE, FETCH, METADATA, DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 0, 1, 3, 32, 44
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, ALTER_SCRAM, LIST_CONFIG_RESOURCES = 48, 49, 51, 74
DESCRIBE_CLUSTER, DESCRIBE_QUORUM = 60, 55
INVALID_REQUEST, UNSUPPORTED_ENDPOINT_TYPE, UNKNOWN_SERVER_ERROR = 42, 114, -1
BROKER_RESOURCE = 4


def controllers(kraft) -> str:
    return ",".join(kraft.cluster.quorum.values())


def cli(kraft, *args: str, **kwargs):
    """``configctl --bootstrap-controller <the cluster's controllers> ARGS``."""
    return run_cli("--bootstrap-controller", controllers(kraft), *args, **kwargs)


def one_line(done) -> str:
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_the_controllers_say_what_they_are_without_a_metadata_request(kraft):
    with ControllerClient(controllers(kraft)) as client, kraft.admin() as admin:
        mode, quorum = client.mode(), client.quorum()
        assert mode.kraft and mode == cluster_mode(admin)  # the same features as a broker reports
        assert quorum.cluster_id == admin.cluster_id() == kraft.cluster.cluster_id
        assert sorted(quorum.controllers) == sorted(kraft.controller_ids)
        assert quorum.active in kraft.controller_ids
        answer = client.send(features_request(), "ask")
    served = {key.api_key for key in answer.api_keys}
    # What configctl would need and a controller serves ...
    assert {DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, ALTER_CLIENT_QUOTAS, ALTER_SCRAM} <= served
    assert {DESCRIBE_CLUSTER, DESCRIBE_QUORUM} <= served
    # ... and what it does not: no Metadata (kafka-python's bootstrap), no quota reads, no
    # listing of config resources, no Produce (configctl's history records).
    assert not {PRODUCE, METADATA, DESCRIBE_CLIENT_QUOTAS, LIST_CONFIG_RESOURCES} & served
    assert FETCH in served  # the metadata log's own replication, not a topic configctl can read


def test_a_controller_describes_the_default_and_itself_only(kraft_cluster):
    kraft = kraft_cluster
    (controller,) = kraft.controller_ids
    request = DescribeConfigsRequest(
        resources=[(BROKER_RESOURCE, "", None), (BROKER_RESOURCE, str(controller), None)]
        + [(BROKER_RESOURCE, str(b), None) for b in kraft.broker_ids],
        include_synonyms=True,
        min_version=1,
    )
    with ControllerClient(controllers(kraft)) as client:
        answer = client.send(request, "describe")
    errors = {result.resource_name: result.error_code for result in answer.results}
    assert errors.pop("") == 0 and errors.pop(str(controller)) == 0
    assert set(errors.values()) == {INVALID_REQUEST}  # "Unexpected broker id, expected 100 ..."
    described = kraft.config_command(
        "--describe", "--entity-type", "brokers", "--entity-name", str(kraft.broker_ids[0]), controller=True
    )
    assert "doesn't exist" in described.stdout  # Kafka's tool cannot describe a broker there either


def test_a_write_is_refused_where_kafkas_tool_writes_it(kraft_cluster):
    kraft = kraft_cluster
    key = "log.cleaner.backoff.ms"
    default = ("--entity-type", "brokers", "--entity-default")
    done = cli(kraft, "alter", "--broker-defaults", "--add-config", f"{key}=16000", "--reason", "r")
    assert done.returncode == 1
    line = one_line(done)
    assert "over the controllers (--bootstrap-controller" in line
    assert "_configctl_history" in line and "only brokers serve topics" in line
    assert "use --bootstrap-server HOST:PORT" in line and "nothing was written" in line
    assert key not in kraft.config_command("--describe", *default).stdout
    # Kafka's own tool writes the same change through the same controllers (then it is put back).
    written = kraft.config_command("--alter", *default, "--add-config", f"{key}=16000", controller=True)
    try:
        assert written.returncode == 0, written.stderr
        assert f"{key}=16000" in kraft.config_command("--describe", *default).stdout
    finally:
        put_back = kraft.config_command("--alter", *default, "--delete-config", key, controller=True)
        assert put_back.returncode == 0, put_back.stderr


def test_reads_needing_history_or_brokers_are_refused_in_one_line(kraft_cluster, unique):
    kraft = kraft_cluster
    topic = unique("ctl")
    kraft.create_topics(topic)
    for args, what in [
        (("describe", "--topic", topic), "cannot list the topics (a controller serves no Metadata request)"),
        (
            ("describe", "--broker-defaults"),
            "cannot list the running brokers (a controller's DescribeCluster",
        ),
        (
            ("describe", "--entity-type", "users"),
            "cannot list the users (a controller serves no DescribeClientQuotas",
        ),
        (("history", "--topic", topic), f"cannot read topic '{topic}'"),
        (
            ("alter", "--topic", topic, "--add-config", "retention.ms=1000", "--dry-run"),
            f"cannot read topic '{topic}'",
        ),
        (("export", "--file", "-"), "cannot"),
    ]:
        done = cli(kraft, *args)
        assert done.returncode == 1, (args, done.stderr)
        assert what in one_line(done), (args, done.stderr)
        assert "use --bootstrap-server" in done.stderr
    # Kafka's tool cannot describe a topic over the controllers either (it lists the topics first).
    theirs = kraft.config_command(
        "--describe", "--entity-type", "topics", "--entity-name", topic, controller=True
    )
    assert theirs.returncode != 0
    assert (
        "not yet supported when communicating directly with the controller quorum"
        in theirs.stderr + theirs.stdout
    )
    assert (
        "retention.ms"
        not in kraft.config_command("--describe", "--entity-type", "topics", "--entity-name", topic).stdout
    )


def test_both_options_and_a_broker_given_as_a_controller_are_refused_as_kafka_refuses_them(kraft_cluster):
    kraft = kraft_cluster
    both = run_cli(
        "--bootstrap-server",
        kraft.bootstrap,
        "--bootstrap-controller",
        controllers(kraft),
        "describe",
        "--broker-defaults",
    )
    assert (
        both.returncode == 1
        and "give only one of --bootstrap-server or --bootstrap-controller" in one_line(both)
    )
    theirs = kraft.cluster.tool(
        "org.apache.kafka.tools.ConfigCommand",
        "--bootstrap-server", kraft.bootstrap, "--bootstrap-controller", controllers(kraft),
        "--describe", "--entity-type", "brokers", "--entity-default",
    )  # fmt: skip
    assert theirs.returncode != 0
    assert (
        "Only one of --bootstrap-server or --bootstrap-controller can be specified"
        in theirs.stdout + theirs.stderr
    )
    broker = kraft.bootstrap.split(",")[0]
    done = run_cli("--bootstrap-controller", broker, "describe", "--broker-defaults")
    assert done.returncode == 1
    assert (
        f"--bootstrap-controller {broker}: that is a Kafka broker's listener, not a controller's"
        in one_line(done)
    )
    assert "give it to --bootstrap-server" in done.stderr


def test_an_explicit_zookeeper_is_refused_beside_the_controllers(kraft_combined):
    done = cli(kraft_combined, "describe", "--broker-defaults", env={"CONFIGCTL_ZOOKEEPER": "127.0.0.1:2181"})
    assert done.returncode == 1
    line = one_line(done)
    assert "--zookeeper 127.0.0.1:2181: the controllers at" in line and "drop --zookeeper" in line


def test_a_controller_reports_its_own_config_as_kafkas_tool_shows_it(kraft):
    """The one read that needs no configctl version: ``describe --effective --broker <controller>``."""
    controller = kraft.controller_ids[0]
    done = cli(kraft, "-o", "json", "describe", "--effective", "--broker", str(controller))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["truth"] == "reported" and document["entity_path"] == f"brokers/{controller}"
    values = {entry["name"]: entry for entry in document["configs"]}
    assert values["node.id"]["value"] == str(controller)
    assert "controller" in values["process.roles"]["value"].split(",")
    theirs = kraft.config_command(
        "--describe", "--all", "--entity-type", "brokers", "--entity-name", str(controller), controller=True
    )
    assert theirs.returncode == 0, theirs.stderr
    shown = dict(
        line.strip().split(" sensitive=")[0].split("=", 1)
        for line in theirs.stdout.splitlines()[1:]
        if "=" in line and " sensitive=false" in line
    )
    for key in ("node.id", "process.roles", "min.insync.replicas", "log.cleaner.threads"):
        assert values[key]["value"] == shown[key], key
    # The cluster-wide default as this controller holds it, with its source, as Kafka's tool says it.
    assert values["min.insync.replicas"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"


def test_a_broker_or_the_fleet_is_not_asked_through_the_controllers(kraft_cluster):
    kraft = kraft_cluster
    broker = kraft.broker_ids[0]
    done = cli(kraft, "describe", "--effective", "--broker", str(broker))
    assert done.returncode == 1
    line = one_line(done)
    assert f"cannot ask node {broker} (it is not one of the controllers ({kraft.controller_ids[0]})" in line
    assert "use --bootstrap-server" in line
    done = cli(kraft, "status")
    assert done.returncode == 1
    assert (
        "cannot report the fleet's status (a controller's DescribeCluster names the controllers only)"
        in one_line(done)
    )


def test_what_a_controller_answers_for_configs_and_refuses(kraft_cluster, unique):
    """docs/kraft.md's table of what a 4.4.0 controller serves, request by request."""
    kraft = kraft_cluster
    topic, group, subscription = unique("ctl"), unique("grp"), unique("cm")
    kraft.create_topics(topic)
    resources = [(2, topic, None), (32, group, None), (16, subscription, None)]
    with ControllerClient(controllers(kraft), timeout=3.0) as client:
        described = client.send(DescribeConfigsRequest(resources=resources, min_version=1), "describe")
        brokers = client.send(
            DescribeClusterRequest(
                include_cluster_authorized_operations=False, endpoint_type=1, min_version=1
            ),
            "describe",
        )
        scram = client.send(DescribeUserScramCredentialsRequest(users=[(kraft.scram_user,)]), "describe")
        with pytest.raises(KafkaUnavailable):  # every user: the controller never answers (its own NPE)
            client.send(DescribeUserScramCredentialsRequest(users=None), "describe every credential")
    assert [r.error_code for r in described.results] == [0, 0, 0]
    assert brokers.error_code == UNSUPPORTED_ENDPOINT_TYPE
    assert [r.error_code for r in scram.results] == [UNKNOWN_SERVER_ERROR]  # "Unsupported ApiKey"


def test_a_broker_config_written_through_the_controllers_skips_the_brokers_own_check(kraft_cluster):
    """Why a write through the brokers is the one configctl trusts: through the controllers,
    Kafka's tool stores a broker config that broker refuses to run (it keeps its value)."""
    kraft = kraft_cluster
    broker = kraft.broker_ids[0]
    selector = ("--entity-type", "brokers", "--entity-name", str(broker))
    through_brokers = kraft.config_command("--alter", *selector, "--add-config", "log.cleaner.threads=9")
    assert through_brokers.returncode != 0
    assert "at least 1MB per cleaner thread" in through_brokers.stdout + through_brokers.stderr
    written = kraft.config_command(
        "--alter", *selector, "--add-config", "log.cleaner.threads=9", controller=True
    )
    try:
        assert written.returncode == 0, written.stderr
        with kraft.admin() as admin:

            def stored_but_not_run():
                found = admin.describe_broker(broker, ["log.cleaner.threads"])["log.cleaner.threads"]
                synonyms = {s.source: s.value for s in found.synonyms}
                return synonyms.get("DYNAMIC_BROKER_CONFIG") == "9" and found

            found = wait_for(stored_but_not_run, timeout=20, message="the write reaches the broker")
            assert found.value != "9"  # the broker runs what it ran before
    finally:
        put_back = kraft.config_command(
            "--alter", *selector, "--delete-config", "log.cleaner.threads", controller=True
        )
        assert put_back.returncode == 0, put_back.stderr


def test_a_quota_write_fails_in_kafkas_tool_and_is_refused_by_configctl(kraft_cluster, unique):
    kraft = kraft_cluster
    user = unique("alice")
    selector = ("--entity-type", "users", "--entity-name", user)
    theirs = kraft.config_command(
        "--alter", *selector, "--add-config", "consumer_byte_rate=2048", controller=True
    )
    assert theirs.returncode != 0  # kafka-configs.sh reads the quotas first (DescribeClientQuotas)
    assert (
        "not yet supported when communicating directly with the controller quorum"
        in theirs.stdout + theirs.stderr
    )
    done = cli(kraft, "alter", "--user", user, "--add-config", "consumer_byte_rate=2048")
    assert done.returncode == 1
    assert f"cannot read user '{user}'" in one_line(done) and "nothing was written" in done.stderr
    assert "consumer_byte_rate" not in kraft.config_command("--describe", *selector).stdout


def test_an_answer_larger_than_a_megabyte_is_read_whole(kraft_cluster):
    # A controller's answer for many topics (migration check asks it for every topic) runs past
    # kafka-python's bare connection limit of 1 MB: the client reads it as the Admin client would.
    from configctl.adminapi.client import UNKNOWN_TOPIC, describe_request

    names = [f"absent-{i:04d}-" + "x" * 230 for i in range(5000)]
    with ControllerClient(controllers(kraft_cluster)) as client:
        answer = client.send(describe_request(2, names), "describe 5,000 topics")
    assert len(answer.results) == len(names)
    assert {result.error_code for result in answer.results} == {UNKNOWN_TOPIC}
    assert (
        sum(len(result.resource_name) + len(result.error_message or "") for result in answer.results)
        > 1_000_000
    )
