"""A change a KRaft broker refuses to apply after its controllers committed it, shown by a real Kafka 4.4 cluster.

Kafka validates a cluster-wide broker default on the broker that receives it, against that
broker's own static config; every other broker applies the committed record against its own,
and one whose static config makes the value invalid logs an ERROR, keeps its old value and tells
no writer (DescribeConfigs then reports the value it kept, the held one only among the
synonyms). Here broker 2 has half the dedupe buffer broker 1 has, so two cleaner threads are
valid on broker 1 and refused by broker 2: configctl's ``--wait`` says so at once (exit 9, not a
timeout), and ``status`` names the key.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from conftest import KAFKA4_HOME, KRaftFleet
from helpers import CliResult, run_cli, wait_for
from test_flight_recorder import Sidecar
from test_kraft_console import consoles as consoles  # the fixture: every console stopped with SIGTERM
from test_kraft_console import start as start_console

from configctl.console.views import entity_url
from configctl.entities import Entity, EntityType
from configctl.localkraft import KRaftCluster
from configctl.localspark import standalone_cluster

HALF_BUFFER = {"log.cleaner.dedupe.buffer.size": "1572864"}
"""1.5 MiB: one cleaner thread is valid (at least 1 MiB each), two are not."""
REFUSED_ON_WRITE = "must be at least 1MB per cleaner thread"


@pytest.fixture(scope="module")
def uneven(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftFleet]:
    work = tmp_path_factory.mktemp("kraft-uneven")
    with KRaftCluster(KAFKA4_HOME, work, brokers=2, combined=False, per_node={2: HALF_BUFFER}) as cluster:
        fleet = KRaftFleet(cluster, work / "unused.properties")
        with fleet.admin() as admin:
            wait_for(lambda: admin.broker_ids() == [1, 2], timeout=60, message="both brokers registered")
        yield fleet


@pytest.fixture(scope="module")
def refusing(uneven: KRaftFleet) -> tuple[KRaftFleet, CliResult, float]:
    """``alter --broker-defaults log.cleaner.threads=2 --wait 60`` once it was committed: the
    fleet, what configctl answered, and how long it took."""
    fleet = uneven
    # The default goes to any broker; it is committed only when broker 1 is the one that validates it.
    for _ in range(12):
        started = time.monotonic()
        done = run_cli("--bootstrap-server", fleet.bootstrap, "alter", "--broker-defaults",
                       "--add-config", "log.cleaner.threads=2", "--wait", "60")  # fmt: skip
        if REFUSED_ON_WRITE not in done.stderr or done.returncode == 9:
            break
        assert "nothing written" in done.stderr.lower() or done.returncode != 0, done.stderr
    else:
        pytest.fail("broker 2 validated the default every time: " + done.stderr)
    return fleet, done, time.monotonic() - started


def test_a_broker_that_refuses_a_committed_default_is_named_at_once(refusing, consoles):
    fleet, done, took = refusing
    assert done.returncode == 9, (done.stdout, done.stderr)
    assert "broker 2 holds log.cleaner.threads=2 (DYNAMIC_DEFAULT_BROKER_CONFIG) but runs 1" in done.stderr
    assert took < 45, took  # named as soon as broker 2 answered, not when the 60 s ran out

    # Kafka's own account: broker 2 logged the failure and runs its old value; broker 1 runs 2.
    log = (fleet.cluster.nodes[2].dir / "server.log").read_text()
    assert "Cluster default configs could not be applied" in log and REFUSED_ON_WRITE in log
    described = fleet.config_command("--describe", "--entity-type", "brokers", "--entity-name", "2", "--all")
    assert "log.cleaner.threads=1 " in described.stdout, described.stdout

    status = run_cli("--bootstrap-server", fleet.bootstrap, "status", "-o", "json")
    assert status.returncode == 0, status.stderr
    brokers = {b["broker_id"]: b for b in json.loads(status.stdout)["brokers"]}
    assert brokers[1]["not_applied"] == []
    (refused,) = [n for n in brokers[2]["not_applied"] if n["key"] == "log.cleaner.threads"]
    assert refused == {
        "key": "log.cleaner.threads",
        "held": "2",
        "layer": "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "running": "1",
        "source": "DEFAULT_CONFIG",
    }
    # describe --effective --broker 2: broker 2's own answer, the key it refused named under it.
    effective = run_cli(
        "--bootstrap-server", fleet.bootstrap, "describe", "--effective", "--broker", "2", "-o", "json"
    )
    assert effective.returncode == 0, effective.stderr
    (problem,) = [p for p in json.loads(effective.stdout)["problems"] if p["key"] == "log.cleaner.threads"]
    assert (problem["kind"], problem["expected"], problem["reported"]) == ("mismatch", "2", "1"), problem
    assert problem["entity_path"] == "brokers/<default>"

    shown = run_cli("--bootstrap-server", fleet.bootstrap, "status")
    assert "broker 2 refused log.cleaner.threads=2" in " ".join(shown.stdout.split()), shown.stdout

    # The console's page of the default: broker 2's verdict is its refusal, in its own words.
    console = start_console(fleet)
    consoles.append(console)
    page = console.json("/api" + entity_url(Entity.named(EntityType.BROKERS, "").path))
    verdicts = {a["broker_id"]: a for a in page["applied"]}
    assert verdicts[1]["status"] == "applied" and verdicts[2]["status"] == "mismatch", verdicts
    assert "refused log.cleaner.threads=2" in verdicts[2]["reason"], verdicts[2]


def test_the_audit_reads_the_recorders_state_from_kafka_with_sparks_kafka_source(refusing, tmp_path):
    """Each broker's recorder publishes what its broker runs; the audit reads it with Spark's own
    Kafka source and names broker 2's refusal as drift."""
    fleet = refusing[0]
    sidecars = [Sidecar(fleet, broker, tmp_path / f"recorder-{broker}.log").start() for broker in (1, 2)]
    for sidecar in sidecars:
        sidecar.stop()  # each publishes its last progress, with its broker's answer, as it stops
    done = run_cli("--bootstrap-server", fleet.bootstrap, "audit", "recorders", "--fail-on-drift", "-o", "json",
                   timeout=300)  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    doc = json.loads(done.stdout)
    assert doc["recorders"] == 2 and doc["writes_recorded"] >= 1 and doc["drift"] is True
    assert [d["broker_id"] for d in doc["divergent"]] in ([2], [1])  # two brokers: neither is "most"
    (refused,) = doc["not_applied"]
    assert (refused["broker_id"], refused["key"], refused["held"], refused["running"]) == (
        2, "log.cleaner.threads", "2", "1",
    )  # fmt: skip
    assert doc["stale"] == [] and doc["gaps"] == []
    # The same on a real Spark standalone cluster: the executors read Kafka, with the jars shipped to them.
    with standalone_cluster(tmp_path / "spark", cores=1) as master:
        shown = run_cli(
            "--bootstrap-server", fleet.bootstrap, "audit", "recorders", "--master", master, timeout=300
        )
    assert shown.returncode == 0, shown.stderr
    assert "not applied broker 2 holds log.cleaner.threads=2" in " ".join(shown.stdout.split()), shown.stdout
