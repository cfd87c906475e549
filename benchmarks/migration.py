"""``configctl migration check`` on a real migrated cluster: what the proof costs, beside the raw reads and Kafka's tool.

The gate before finalizing reads two whole config stores and compares them, so it must stay cheap
enough to run again after every fix. One run, on one real cluster this script starts and stops:
a Kafka 3.9.2 broker on its own ZooKeeper (from ``build/kafka/libs`` and pyspark's jars), with
``--topics`` topics each holding two configs and ``--users`` users each with a quota, written in
ZooKeeper mode; then Kafka's own migration (:mod:`configctl.localmigration`) up to a KRaft broker
in dual-write, the state in which an operator runs the check.

Measured, each ``--runs`` times (median, min, max):

- ``configctl migration check`` as a whole command (a process, as an operator runs it), twice:
  while the broker still runs ZooKeeper mode in migration (the KRaft side is then what the
  controller reports: topics and the broker default), and once it runs as a KRaft broker;
- inside it: the read of ZooKeeper's ``/config`` (topics and users), the read of the KRaft side
  (the KRaft store's reads) and the comparison;
- the raw limit of the reads, in the same run: every topic's and user's node read from ZooKeeper
  with kazoo's pipelined ``get_async`` (no decoding), and one DescribeConfigs request for every
  topic plus one DescribeClientQuotas for every user, sent with kafka-python (no decoding); for
  the check during dual-write, one DescribeConfigs request for every topic sent to the controller;
- the real peer: Kafka's own ``kafka-configs.sh --bootstrap-server ... --describe --entity-type
  topics`` (every topic's config, one side only, its JVM start included).

Then, on the same cluster, the listeners' applied logs carried across
(``migration carry --applied-log``): a simulated fleet's logs (``--applied-brokers`` brokers,
``--applied-days`` days of 48 changes, written by :mod:`configctl.audit.timeline_simulate`), sent
once and carried again (nothing to send), beside the raw limit: the same lines sent by a bare
``KafkaProducer`` (acks from every replica, idempotent) after reading the files. And what it is
for: ``describe --effective --broker 1 --at T`` reading broker 1's log from the cluster, beside
the same command reading it from its state directory (``--applied-log``).

Target: each whole check, and the first carry, within 3x the raw work plus a Python start (the
process's fixed cost, measured as ``python -m configctl --version``). Not part of the test suite. With
``CONFIGCTL_BENCH_RESULTS`` set (``make bench``), the target row is appended there.

    python benchmarks/migration.py                     # about 2 minutes on 2 cores
    python benchmarks/migration.py --topics 2000 --users 200
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.kafka_peer import create_topics  # noqa: E402
from benchmarks.peer_tables import text_table  # noqa: E402
from benchmarks.results import format_table, machine, record_rows  # noqa: E402
from configctl.entities import EntityType  # noqa: E402
from configctl.kraft.choice import kraft_store  # noqa: E402
from configctl.kraft.store import OWN_TOPICS  # noqa: E402
from configctl.localkafka import CONFIG_COMMAND, KafkaCluster, kafka_version  # noqa: E402
from configctl.localmigration import KRaftMigration  # noqa: E402
from configctl.localzk import LocalZooKeeper  # noqa: E402
from configctl.localzk.client import ClientSettings  # noqa: E402
from configctl.localzk.ports import pick_free_ports  # noqa: E402
from configctl.migrationcheck import prove  # noqa: E402
from configctl.zk.configstore import ZooKeeperStore  # noqa: E402
from configctl.zkconnection import ConnectionSettings  # noqa: E402

KAFKA_HOME = REPO_ROOT / "build" / "kafka"
TYPES = (EntityType.TOPICS, EntityType.USERS)
TARGET_RATIO = 3.0


def timed(action: Callable[[], Any], runs: int) -> tuple[dict[str, float], Any]:
    """``action`` ``runs`` times: median, min and max seconds, and its last result."""
    took, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        took.append(time.perf_counter() - started)
    return {"median_s": statistics.median(took), "min_s": min(took), "max_s": max(took)}, result


def run(command: list[str], what: str, ok: tuple[int, ...] = (0,)) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode not in ok:
        raise SystemExit(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-1500:]}")


def fill(cluster: KafkaCluster, topics: int, users: int) -> None:
    """``topics`` topics with two configs each, ``users`` users with a quota each: through the broker."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    from configctl.adminapi.client import KafkaAdmin
    from configctl.entities import Entity

    names = [f"mig-{i:05d}" for i in range(topics)]
    create_topics(cluster.bootstrap, names)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=120_000)
    try:
        for start in range(0, topics, 200):
            admin.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC,
                        name,
                        configs={"retention.ms": "86400000", "segment.ms": "3600000"},
                    )
                    for name in names[start : start + 200]
                ]
            )
    finally:
        admin.close()
    with KafkaAdmin(cluster.bootstrap, timeout=120) as ours:
        for i in range(users):
            ours.alter_client_quotas(
                Entity.named(EntityType.USERS, f"user-{i:04d}"), {"producer_byte_rate": "1048576"}
            )


def raw_zookeeper(connect: str) -> Callable[[], int]:
    """Every topic's and user's config node, read with kazoo's pipelined gets (no decoding)."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=connect)
    client.start(timeout=30)

    def read() -> int:
        total = 0
        for family in ("topics", "users"):
            names = client.get_children(f"/config/{family}")
            pending = [client.get_async(f"/config/{family}/{name}") for name in names]
            total += sum(len(p.get()[0]) for p in pending)
        return total

    read.client = client  # type: ignore[attr-defined]
    return read


def raw_kafka(bootstrap: str, topics: list[str]) -> tuple[Callable[[], int], Callable[[], None]]:
    """One DescribeConfigs for every topic (kafka-python's client) and one DescribeClientQuotas for
    every entity (the protocol request alone, on configctl's connection: kafka-python has no quota
    call), each answer left undecoded into configctl's terms; and the closer of both clients."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.protocol.admin import DescribeClientQuotasRequest

    from configctl.adminapi.client import KafkaAdmin

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=120_000)
    quotas = KafkaAdmin(bootstrap, timeout=120)

    def read() -> int:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in topics])
        answer = quotas._send(DescribeClientQuotasRequest(components=[], strict=False), None, "raw")
        return len(described) + len(answer.entries or ())

    def close() -> None:
        admin.close()
        quotas.close()

    return read, close


def raw_controller(address: str, topics: list[str], runs: int) -> dict[str, float]:
    """One DescribeConfigs request for every topic, sent to the controller at ``address`` on
    kafka-python's connection (the answer left undecoded): what a controller-side read costs at least."""
    from configctl.adminapi.client import describe_request
    from configctl.adminapi.controllers import ControllerClient
    from configctl.kafkacodes import RESOURCE_TYPE_OF

    with ControllerClient(address, None, 120) as client:
        request = describe_request(RESOURCE_TYPE_OF[EntityType.TOPICS], topics)
        took, answer = timed(lambda: client.send(request, "raw"), runs)
    assert len(answer.results) == len(topics)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--applied-brokers", type=int, default=50)
    parser.add_argument("--applied-days", type=int, default=60)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="configctl-bench-migration-"))
    zk = LocalZooKeeper(work / "zk", port=pick_free_ports(1)[0])
    migration: KRaftMigration | None = None
    try:
        zk.start(timeout=60)
        connect = f"{zk.connect_string}/kafka"
        cluster = KafkaCluster(KAFKA_HOME, work / "kafka", ClientSettings(connect), 1)
        cluster.start()
        started = time.perf_counter()
        fill(cluster, args.topics, args.users)
        filled = time.perf_counter() - started
        migration = KRaftMigration(cluster)
        started = time.perf_counter()
        migration.start_controllers()
        migration.brokers_into_migration()
        migration.wait_migrated()
        bootstrap = cluster.bootstrap
        check = [sys.executable, "-m", "configctl", "--zookeeper", connect, "--bootstrap-server", bootstrap]
        names = [f"mig-{i:05d}" for i in range(args.topics)]
        during, _ = timed(
            lambda: run([*check, "migration", "check"], "migration check in dual-write"), args.runs
        )
        raw_controller_read = raw_controller(next(iter(migration.quorum.values())), names, args.runs)
        migration.brokers_to_kraft()
        migrated = time.perf_counter() - started
        print(
            f"Kafka {kafka_version(KAFKA_HOME)}: {args.topics} topics (2 configs each) and {args.users} user "
            f"quotas written in {filled:.1f} s; migrated to a KRaft broker in dual-write in {migrated:.1f} s"
        )

        whole, _ = timed(lambda: run([*check, "migration", "check"], "migration check"), args.runs)
        python, _ = timed(lambda: run([sys.executable, "-m", "configctl", "--version"], "version"), args.runs)

        settings = ConnectionSettings(connect)
        with ZooKeeperStore.connect(settings) as store:
            zk_read, ours = timed(
                lambda: [s for t in TYPES for s in store.read_type(t, strict=False)], args.runs
            )
        kraft = kraft_store(bootstrap, None, zookeeper=None, timeout=60)
        assert kraft is not None
        with kraft:
            kraft_read, theirs = timed(
                lambda: [s for t in TYPES for s in kraft.read_type(t, strict=False)], args.runs
            )
            running = kraft.running_brokers()
        compare, proof = timed(lambda: prove(ours, theirs, running, OWN_TOPICS), args.runs)
        if not proof.equal:
            raise SystemExit(f"the migrated cluster is not equal: {[d.line for d in proof.differences[:3]]}")

        raw_zk = raw_zookeeper(connect)
        raw_zk_read, _ = timed(raw_zk, args.runs)
        raw_zk.client.stop()  # type: ignore[attr-defined]
        raw_k, close = raw_kafka(bootstrap, names)
        raw_kafka_read, _ = timed(raw_k, args.runs)
        close()

        peer, _ = timed(
            lambda: _tool(cluster, "--bootstrap-server", bootstrap, "--describe", "--entity-type", "topics"),
            max(1, args.runs // 2),
        )
        carried = carry_applied(check, bootstrap, work, args.applied_brokers, args.applied_days, args.runs)
    finally:
        if migration is not None:
            migration.stop()
        zk.stop()
        shutil.rmtree(work, ignore_errors=True)

    rows = [
        ("migration check, ZooKeeper-mode broker (the controller asked)", during),
        ("raw: one DescribeConfigs of every topic to the controller", raw_controller_read),
        ("migration check, KRaft broker (the command)", whole),
        ("  of which a Python start (configctl --version)", python),
        ("  read of ZooKeeper's /config (topics, users)", zk_read),
        ("  read of the KRaft side (KRaft store)", kraft_read),
        ("  comparison", compare),
        ("raw: kazoo pipelined gets of the same nodes", raw_zk_read),
        ("raw: one DescribeConfigs + one DescribeClientQuotas", raw_kafka_read),
        ("peer: kafka-configs.sh --describe --entity-type topics", peer),
    ]
    print(
        text_table(
            [
                ["figure", "median", "min", "max"],
                *(
                    [name, f"{t['median_s']:.3f} s", f"{t['min_s']:.3f} s", f"{t['max_s']:.3f} s"]
                    for name, t in rows
                ),
            ]
        )
    )
    records = carried["records"]
    carry_rows = [
        (f"migration carry --applied-log, {records} records (all sent)", carried["first"]),
        ("raw: the same lines read and sent by a bare KafkaProducer", carried["raw"]),
        ("migration carry --applied-log again (nothing to send)", carried["again"]),
        ("describe --effective --at, broker 1's log from the cluster", carried["at_topic"]),
        ("describe --effective --at, broker 1's log from --applied-log", carried["at_files"]),
    ]
    print(
        text_table(
            [
                ["figure", "median", "min", "max"],
                *(
                    [name, f"{t['median_s']:.3f} s", f"{t['min_s']:.3f} s", f"{t['max_s']:.3f} s"]
                    for name, t in carry_rows
                ),
            ]
        )
    )
    sizes = f"{args.topics} topics + {args.users} users"
    limits = {
        f"migration check (dual-write, ZooKeeper-mode broker), {sizes}": (
            during,
            raw_zk_read["median_s"] + raw_controller_read["median_s"],
        ),
        f"migration check (KRaft broker), {sizes}": (
            whole,
            raw_zk_read["median_s"] + raw_kafka_read["median_s"],
        ),
        f"migration carry --applied-log, {records} records": (carried["first"], carried["raw"]["median_s"]),
    }
    target = []
    for figure, (measured, raw) in limits.items():
        limit = raw + python["median_s"]
        ratio = measured["median_s"] / limit
        target.append(
            {
                "figure": figure,
                "measured": measured["median_s"],
                "unit": "s",
                "limit": limit,
                "ratio": ratio,
                "target": f"<= {TARGET_RATIO:g}x raw reads + Python start",
                "met": ratio <= TARGET_RATIO,
            }
        )
    print(format_table(target))
    print(machine())
    record_rows(target)


def carry_applied(
    check: list[str], bootstrap: str, work: Path, brokers: int, days: int, runs: int
) -> dict[str, Any]:
    """The applied-log carry and the ``--at`` it serves (see the module's docstring)."""
    from configctl import applied
    from configctl.audit.timeline_simulate import START_MS, AppliedSpec, simulate_applied
    from configctl.timeref import iso
    from kafka import KafkaProducer

    fleet = simulate_applied(AppliedSpec(brokers=brokers, days=days, changes_per_day=48), work / "applied")
    dirs = sorted(str(p) for p in fleet.directory.iterdir())
    given = [arg for d in dirs for arg in ("--applied-log", d)]
    first, _ = timed(lambda: run([*check, "migration", "carry", *given], "migration carry --applied-log"), 1)
    again, _ = timed(lambda: run([*check, "migration", "carry", *given], "migration carry again"), runs)

    def raw() -> int:
        producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", enable_idempotence=True)
        try:
            sent = 0
            for directory in dirs:
                for segments in applied.segments(directory).values():
                    for segment in segments:
                        for line in segment.read_bytes().splitlines(keepends=True):
                            producer.send("bench-raw-applied", key=line[:40], value=line)
                            sent += 1
            producer.flush()
            return sent
        finally:
            producer.close()

    raw_send, sent = timed(raw, 1)
    assert sent == fleet.records, (sent, fleet.records)
    kafka = [sys.executable, "-m", "configctl", "--bootstrap-server", bootstrap]
    run([*kafka, "alter", "--topic", "mig-00001", "--add-config", "retention.ms=7200000"], "alter")
    moment = iso(int(time.time() * 1000))  # within the simulated logs (START_MS on), after the write
    assert int(time.time() * 1000) > START_MS
    at = [*kafka, "describe", "--effective", "--broker", "1", "--topic", "mig-00001", "--at", moment]
    topic_read, _ = timed(lambda: run(at, "describe --at from the cluster"), runs)
    file_read, _ = timed(lambda: run([*at, "--applied-log", dirs[0]], "describe --at from files"), runs)
    return {
        "records": fleet.records,
        "first": first,
        "again": again,
        "raw": raw_send,
        "at_topic": topic_read,
        "at_files": file_read,
    }


def _tool(cluster: KafkaCluster, *args: str) -> None:
    done = cluster.tool(CONFIG_COMMAND, *args)
    if done.returncode != 0:
        raise SystemExit(f"kafka-configs.sh failed: {done.stderr.strip()[:400]}")


if __name__ == "__main__":
    main()
