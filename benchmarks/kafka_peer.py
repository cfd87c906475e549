"""A real peer: configctl beside Kafka's own ``kafka-configs.sh`` and a real Kafka 3.9 broker.

In one run, on a real ZooKeeper and real Kafka 3.9 brokers (ZooKeeper mode, from
``build/kafka/libs``, ``make kafka``) that this script starts and stops itself:

1. **One change**: ``configctl alter --topic T --add-config retention.ms=...`` as a process,
   beside ``kafka-configs.sh --bootstrap-server ... --alter --entity-type topics`` (the JVM's
   ``kafka.admin.ConfigCommand``, as the script runs it). Wall time per invocation, min / median
   / max of ``--runs``. Raw limits of the same run: a bare ``python -c pass`` and a bare JVM
   (``java -version`` with the tool's options); and ``ConfigCommand --help`` (the JVM with
   Kafka's classes loaded, no request).
2. **1,000 topic changes**: one ``configctl apply -f desired.yaml --yes`` for ``--topics``
   topics (median of ``--apply-rounds``, each round new values), beside Kafka's way:
   ConfigCommand takes one entity per invocation, so 1,000 changes are 1,000 JVM starts. That
   is too slow to run here: ``--kafka-invocations`` of them are measured (distinct topics) and
   the median is multiplied by the topic count, printed as **extrapolated**. Raw limit for
   configctl: raw kazoo multis of the same config + notification nodes (into a chroot no broker
   watches); for Kafka: the topic count times a bare JVM start. Also: the time from ``apply``
   returning to the broker having processed the last of the changes (its own log line).
3. **Propagation**, twice: before part 2 (few change notifications in ZooKeeper) and after it
   (thousands younger than the 15-minute expiry). ``--changes`` commits through configctl's
   write path, ``--pause-ms`` apart; for each, from the commit returning (a consumer can see it
   before the writer's call returns: a sample may be negative) to: the broker reporting the
   value through DescribeConfigs (``KafkaAdmin`` polled every ``--poll-ms``); every broker
   logging "Processing override" for it; ``configctl listener run`` (as broker 1, on that
   broker's own ``server.properties``) publishing ``last_applied_change`` >= the change in
   ``/configctl/brokers/1`` (and logging "applied change N"). Raw limit: a child watch on
   ``/config/changes`` (and the listing it triggers) in a separate process. Beside it, the time
   to stat every notification in turn: what a Kafka broker does after each change it processes
   (``purgeObsoleteNotifications``), so the next change waits behind it.

In ZooKeeper mode a broker answers DescribeConfigs for a topic by reading ``/config/topics/T``
from ZooKeeper (Kafka's ``ZkConfigRepository``), not from what it applied: the run proves it
(a config node written with no notification is reported at once, though the broker never
processed it), so the broker's log line is the figure for "the broker applied it".

The topics are created first with kafka-python's ``KafkaAdminClient.create_topics`` (1
partition, replication factor 1): configctl, like Kafka, refuses config for a topic Kafka does
not know. Everything started is stopped on the way out, failure or not.

    python benchmarks/kafka_peer.py                       # 1-1.5 minutes on 2 cores
    python benchmarks/kafka_peer.py --kafka-brokers 3 --kafka-invocations 50 --changes 100 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.bulk_apply import raw_multi, stored_form  # noqa: E402
from benchmarks.peer_tables import beside_kafka_configs, beside_peer, min_median_max, p50_p99, text_table  # noqa: E402
from benchmarks.propagation import APPLIED_RE, READY, child_env, percentile  # noqa: E402
from benchmarks.results import format_table, record_rows, write_json  # noqa: E402
from configctl.desired import syntax  # noqa: E402
from configctl.entities import Entity, EntityType  # noqa: E402
from configctl.localkafka import (  # noqa: E402
    BASE_PROPERTIES,
    CONFIG_COMMAND,
    TOOL_JVM_OPTIONS,
    KafkaCluster,
    kafka_version,
)
from configctl.localzk import ClientSettings, LocalZooKeeper, port_is_free  # noqa: E402
from configctl.writer import alter, prepare_change  # noqa: E402
from configctl.zk.configstore import ZooKeeperStore  # noqa: E402
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PREFIX, BrokerStateZNode  # noqa: E402

KAFKA_HOME = REPO_ROOT / "build" / "kafka"  # absolute: localkafka runs each broker in its own directory
# Kafka 3.9 refuses to start with log.cleaner.dedupe.buffer.size of 1 MiB or less per cleaner
# thread ("must be at least 1MB per cleaner thread"); localkafka's BASE_PROPERTIES had 1048576.
BROKER_PROPERTIES = (
    {"log.cleaner.dedupe.buffer.size": "2097152"}
    if int(BASE_PROPERTIES.get("log.cleaner.dedupe.buffer.size", 2**21)) <= 2**20
    else {}
)
OVERRIDE_RE = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO Processing override for entityPath: "
    r"topics/(\S+) with config: \S*?\((.*)\) \(kafka\.server\.ZkConfigManager\)"
)
TOPIC_PREFIX = "peer-"


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def spread(seconds: list[float]) -> dict[str, float]:
    """min / median / max of wall times, in seconds."""
    return {
        "min_s": round(min(seconds), 3),
        "median_s": round(statistics.median(seconds), 3),
        "max_s": round(max(seconds), 3),
        "runs": len(seconds),
    }


def latency(values_ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values_ms, 50), 2),
        "p99_ms": round(percentile(values_ms, 99), 2),
        "max_ms": round(max(values_ms), 2) if values_ms else float("nan"),
        "samples": len(values_ms),
    }


def configctl_command(connect: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "configctl", "--zookeeper", connect, *args]


def timed_run(command: list[str], what: str, env: dict[str, str] | None = None) -> float:
    """Wall time of one process; a failure stops the benchmark with its output."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=600)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:800]}")
    return took


def wait(condition, timeout: float, what: str, interval: float = 0.01):
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def kazoo(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=30)
    client.start(timeout=60)
    return client


class Values:
    """Distinct retention.ms values for the whole run, so each change is recognisable everywhere."""

    def __init__(self) -> None:
        self._next = 86_400_000

    def __call__(self) -> int:
        self._next += 1
        return self._next


# ----------------------------------------------------------------------------------------------
# what the brokers logged: "Processing override for entityPath: topics/T with config: ..."
# ----------------------------------------------------------------------------------------------


class BrokerLogs:
    """Each broker's server.log, read incrementally: when it processed which topic override.

    The times are the broker's own log4j timestamps (millisecond resolution, local time, the
    same clock as ours): when its notification handler started on the change, before applying it.
    """

    def __init__(self, cluster: KafkaCluster) -> None:
        self.files = {broker_id: broker.log_file for broker_id, broker in cluster.brokers.items()}
        self.offsets = dict.fromkeys(self.files, 0)
        self.partial = dict.fromkeys(self.files, "")
        self.seen: dict[int, dict[tuple[str, str], float]] = {broker_id: {} for broker_id in self.files}

    def poll(self) -> None:
        for broker_id, path in self.files.items():
            with open(path, encoding="utf-8", errors="replace") as log:
                log.seek(self.offsets[broker_id])
                text = self.partial[broker_id] + log.read()
                self.offsets[broker_id] = log.tell()
            lines = text.split("\n")
            self.partial[broker_id] = lines.pop()
            for line in lines:
                match = OVERRIDE_RE.match(line)
                if not match:
                    continue
                stamp, millis, topic, config = match.groups()
                at = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000
                value = dict(part.split(" -> ", 1) for part in config.split(", ") if " -> " in part)
                self.seen[broker_id][(topic, value.get("retention.ms", ""))] = at

    def applied_everywhere(self, topic: str, value: int) -> float | None:
        """When the last broker processed ``retention.ms=value`` for ``topic`` (None: not all yet)."""
        key = (topic, str(value))
        times = [seen.get(key) for seen in self.seen.values()]
        return None if None in times else max(times)  # type: ignore[type-var]


# ----------------------------------------------------------------------------------------------
# configctl's listener as a process, its state node, and the raw child watch
# ----------------------------------------------------------------------------------------------


class ListenerProcess:
    """``configctl listener run`` as broker ``broker_id``, on that Kafka broker's server.properties."""

    def __init__(self, connect: str, broker_id: int, properties: Path) -> None:
        self.process = subprocess.Popen(
            configctl_command(
                connect,
                "--zk-timeout",
                "30",
                "listener",
                "run",
                "--broker-id",
                str(broker_id),
                "--server-properties",
                str(properties),
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        self.applied: dict[int, float] = {}
        self.ready = threading.Event()
        self.problems: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            now = time.time()
            match = APPLIED_RE.search(line)
            if match:
                self.applied[int(match.group(1))] = now
            elif READY in line:
                self.ready.set()
            elif " WARNING " in line or " ERROR " in line or "error:" in line:
                self.problems.append(line.rstrip())

    def applied_at(self, number: int) -> float | None:
        later = [at for n, at in self.applied.items() if n >= number]
        return min(later) if later else None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class StateWatch:
    """A data watch on ``/configctl/brokers/<id>``: when each ``last_applied_change`` was published."""

    def __init__(self, client: KazooClient, broker_id: int) -> None:
        self.published: list[tuple[int, float]] = []
        self.active = True
        client.DataWatch(BrokerStateZNode.path(broker_id), self._changed)

    def _changed(self, data: bytes | None, _stat: Any) -> bool:
        now = time.time()
        if not self.active:
            return False  # kazoo drops the watch
        if data:
            number = BrokerStateZNode.decode(data).get("last_applied_change")
            if isinstance(number, int):
                self.published.append((number, now))
        return True

    def published_at(self, number: int) -> float | None:
        return next((at for n, at in self.published if n >= number), None)


def raw_watch_main(connect: str) -> None:
    """Child mode: a child watch on /config/changes; print ``<newest change number> <time>`` per event."""
    client = kazoo(connect)
    client.ensure_path(CHANGES_PATH)

    def changed(children: list[str]) -> None:
        now = time.time()
        numbers = [
            int(name[len(NOTIFICATION_PREFIX) :]) for name in children if name.startswith(NOTIFICATION_PREFIX)
        ]
        sys.stdout.write(f"{max(numbers, default=-1)} {now:.6f}\n")
        sys.stdout.flush()

    client.ChildrenWatch(CHANGES_PATH, changed)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the parent closes our stdin
    client.stop()
    client.close()


class RawWatch:
    def __init__(self, connect: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "raw-watch", connect],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        self.events: list[tuple[int, float]] = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip() == "ready":
                self.ready.set()
                continue
            number, at = line.split()
            self.events.append((int(number), float(at)))

    def seen_at(self, number: int) -> float | None:
        return next((at for n, at in self.events if n >= number), None)

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# ----------------------------------------------------------------------------------------------
# the parts
# ----------------------------------------------------------------------------------------------


def create_topics(bootstrap: str, names: list[str], batch: int = 200) -> float:
    """Create the topics through the Admin API (1 partition, RF 1); returns the seconds it took."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=120_000)
    try:
        started = time.perf_counter()
        for start in range(0, len(names), batch):
            admin.create_topics(
                [
                    NewTopic(name, num_partitions=1, replication_factor=1)
                    for name in names[start : start + batch]
                ],
                timeout_ms=120_000,
            )
        return time.perf_counter() - started
    finally:
        admin.close()


def reported(admin: Any, topic: str) -> str | None:
    return admin.describe_topic(topic, ["retention.ms"])["retention.ms"].value


def one_change(ctx: Context, runs: int) -> dict:
    """configctl alter (CLI process) beside kafka-configs.sh, one topic, ``runs`` times each."""
    topic = ctx.topics[0]
    env = child_env()
    bare_python = [timed_run([sys.executable, "-c", "pass"], "python -c pass", env) for _ in range(runs)]
    bare_jvm = [
        timed_run([ctx.cluster.java, *TOOL_JVM_OPTIONS, "-version"], "java -version") for _ in range(runs)
    ]
    help_runs = []
    for _ in range(min(runs, 3)):
        started = time.perf_counter()
        ctx.cluster.tool(CONFIG_COMMAND, "--help")  # exits 0 or 1 by version; only the time matters
        help_runs.append(time.perf_counter() - started)
    configctl_runs, kafka_runs = [], []
    for i in range(runs):
        # alternate which goes first, so neither always follows the other's broker work
        order = ("configctl", "kafka") if i % 2 == 0 else ("kafka", "configctl")
        for who in order:
            value = ctx.value()
            if who == "configctl":
                command = configctl_command(
                    ctx.connect, "alter", "--topic", topic, "--add-config", f"retention.ms={value}"
                )
                configctl_runs.append(timed_run(command, "configctl alter", env))
            else:
                kafka_runs.append(kafka_configs(ctx, topic, value))
            if reported(ctx.admin, topic) != str(value):
                raise SystemExit(f"{who}: the broker does not report retention.ms={value} for {topic}")
    return {
        "topic": topic,
        "configctl_alter": spread(configctl_runs),
        "kafka_configs_alter": spread(kafka_runs),
        "bare_interpreter": spread(bare_python),
        "bare_jvm": spread(bare_jvm),
        "kafka_configs_help": spread(help_runs),
    }


def kafka_configs(ctx: Context, topic: str, value: int) -> float:
    started = time.perf_counter()
    done = ctx.cluster.config_command(
        "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", f"retention.ms={value}"
    )
    took = time.perf_counter() - started
    if done.returncode != 0 or "Completed" not in done.stdout:
        raise SystemExit(
            f"kafka-configs.sh failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:800]}"
        )
    return took


def bulk(ctx: Context, invocations: int, rounds: int) -> dict:
    """``apply -f`` of every topic (``rounds`` times, new values each) beside ConfigCommand per topic."""
    count = len(ctx.topics)
    kafka_runs = []
    for topic in ctx.topics[1 : invocations + 1]:
        kafka_runs.append(kafka_configs(ctx, topic, ctx.value()))
    apply_runs, broker_done, raw_runs = [], [], []
    for round_index in range(rounds):
        values = {topic: ctx.value() for topic in ctx.topics}
        document = {"topics": {topic: {"retention.ms": value} for topic, value in values.items()}}
        desired = ctx.work / f"desired-{round_index}.yaml"
        desired.write_text(syntax.dump(document), encoding="utf-8")
        # the raw limit: the same config + notification multis into a chroot no broker watches
        raw_runs.append(raw_multi(ctx.fresh_chroot(f"raw-{round_index}"), stored_form(document["topics"])))
        command = configctl_command(ctx.connect, "apply", "-f", str(desired), "--yes", "--summary")
        apply_runs.append(timed_run(command, "configctl apply", child_env()))
        returned = time.time()
        # the broker processes the notifications in order: wait for the last one on every broker
        last = ctx.last_notified_topic()
        ctx.logs.poll()
        done_at = wait(
            lambda t=last, v=values[last]: (ctx.logs.poll(), ctx.logs.applied_everywhere(t, v))[1],
            300,
            f"the brokers to process {count} changes",
            interval=0.02,
        )
        broker_done.append(done_at - returned)
        missing = [t for t, v in values.items() if ctx.logs.applied_everywhere(t, v) is None]
        if missing:
            raise SystemExit(f"the brokers did not process {len(missing)} of the changes, e.g. {missing[:3]}")
    for topic in ctx.topics[:: max(1, count // 10)]:  # and DescribeConfigs agrees (a sample)
        if reported(ctx.admin, topic) != str(values[topic]):
            raise SystemExit(f"the broker does not report the applied retention.ms for {topic}")
    per_call = statistics.median(kafka_runs)
    bare_jvm = ctx.results["one_change"]["bare_jvm"]["median_s"] if "one_change" in ctx.results else None
    return {
        "topics": count,
        "configctl_apply": spread(apply_runs),
        "raw_multi_same_nodes": spread(raw_runs),
        "apply_returned_to_brokers_processed_last_s": spread(broker_done),
        "kafka_configs_measured_invocations": spread(kafka_runs),
        "kafka_configs_extrapolated_s": round(per_call * count, 1),
        "bare_jvm_times_topics_s": None if bare_jvm is None else round(bare_jvm * count, 1),
    }


def describe_reads_zookeeper(ctx: Context) -> bool:
    """Does DescribeConfigs report a config node the broker never processed (no notification)?"""
    topic = ctx.topics[-1]
    value = ctx.value()
    payload = json.dumps({"version": 1, "config": {"retention.ms": str(value)}}).encode()
    ctx.zk.set(f"/config/topics/{topic}", payload)
    try:
        return bool(wait(lambda: reported(ctx.admin, topic) == str(value), 2, "", interval=0.05))
    except SystemExit:
        return False
    finally:  # put it right through configctl, notification included, so the broker agrees again
        with ZooKeeperStore.connect(ctx.connect) as store:
            entity = Entity.of(EntityType.TOPICS, topic)
            alter(store, entity, prepare_change(entity, {"retention.ms": str(ctx.value())}))


def kafka_style_purge_scan(ctx: Context) -> tuple[int, float]:
    """How many notifications there are, and the ms to stat each in turn (what a Kafka broker does
    after every change it processes: ``purgeObsoleteNotifications`` reads every notification)."""
    names = ctx.zk.get_children(CHANGES_PATH)
    started = time.perf_counter()
    for name in names:
        ctx.zk.exists(f"{CHANGES_PATH}/{name}")
    return len(names), (time.perf_counter() - started) * 1000


def propagation(ctx: Context, changes: int, poll_ms: float, pause_ms: float) -> dict:
    """Commit ``changes`` alters; time each to DescribeConfigs, the brokers' log, the listener, a raw watch."""
    notifications, scan_ms = kafka_style_purge_scan(ctx)
    properties = ctx.cluster.brokers[1].dir / "server.properties"
    started = time.time()
    listener = ListenerProcess(ctx.connect, 1, properties)
    raw = RawWatch(ctx.connect)
    state = StateWatch(ctx.zk, 1)
    try:
        if not listener.ready.wait(120):
            raise SystemExit(f"the listener did not start: {listener.problems or listener.process.poll()}")
        listener_start = time.time() - started
        if not raw.ready.wait(60):
            raise SystemExit("the raw watcher did not start")
        time.sleep(0.5)
        topics = ctx.topics[: min(10, len(ctx.topics))]
        samples: dict[str, list[float]] = {
            "describe": [],
            "broker_log": [],
            "state_node": [],
            "listener_log": [],
            "raw": [],
        }
        polls = []
        with ZooKeeperStore.connect(ctx.connect) as store:
            for k in range(changes):
                topic = topics[k % len(topics)]
                value = ctx.value()
                entity = Entity.of(EntityType.TOPICS, topic)
                result = alter(store, entity, prepare_change(entity, {"retention.ms": str(value)}))
                committed = time.time()
                number = result.committed.change_number
                tries = 0
                while True:
                    tries += 1
                    if reported(ctx.admin, topic) == str(value):
                        samples["describe"].append((time.time() - committed) * 1000)
                        break
                    if time.time() - committed > 30:
                        raise SystemExit(f"DescribeConfigs never reported change {number}")
                    time.sleep(poll_ms / 1000)
                polls.append(tries)
                broker_at = wait(
                    lambda t=topic, v=value: (ctx.logs.poll(), ctx.logs.applied_everywhere(t, v))[1],
                    30,
                    f"the brokers to process change {number}",
                )
                state_at = wait(
                    lambda n=number: state.published_at(n), 30, f"the listener's state node at {number}"
                )
                log_at = wait(lambda n=number: listener.applied_at(n), 30, f"the listener's log of {number}")
                raw_at = wait(lambda n=number: raw.seen_at(n), 30, f"the raw watch of {number}")
                samples["broker_log"].append((broker_at - committed) * 1000)
                samples["state_node"].append((state_at - committed) * 1000)
                samples["listener_log"].append((log_at - committed) * 1000)
                samples["raw"].append((raw_at - committed) * 1000)
                time.sleep(pause_ms / 1000)
    finally:
        state.active = False
        raw.stop()
        listener.stop()
    return {
        "changes": changes,
        "brokers": len(ctx.cluster.brokers),
        "poll_ms": poll_ms,
        "pause_ms": pause_ms,
        "notifications_in_zookeeper": notifications,
        "stat_of_each_notification_in_turn_ms": round(scan_ms, 1),
        "listener_start_s": round(listener_start, 2),
        "commit_to_describe_configs_reports_it": latency(samples["describe"]),
        "describe_polls_per_change_median": statistics.median(polls),
        "commit_to_brokers_log_processing_it": latency(samples["broker_log"]),
        "commit_to_listener_state_node": latency(samples["state_node"]),
        "commit_to_listener_log_applied": latency(samples["listener_log"]),
        "raw_child_watch_and_listing": latency(samples["raw"]),
        "samples_ms": {key: [round(v, 1) for v in values] for key, values in samples.items()},
        "listener_warnings": listener.problems[:10],
    }


# ----------------------------------------------------------------------------------------------
# the run
# ----------------------------------------------------------------------------------------------


class Context:
    """What every part uses: the servers, clients, topics and the stack that stops them all."""

    def __init__(self, stack: contextlib.ExitStack, work: Path, root: str, brokers: int, topics: int) -> None:
        self.stack = stack
        self.work = work
        self.root = root
        self.run_id = uuid.uuid4().hex[:6]
        self.connect = self.fresh_chroot("kafka")
        self.zk = kazoo(self.connect)
        stack.callback(self._close, self.zk)
        self.value = Values()
        self.results: dict[str, Any] = {}
        print(
            f"starting {brokers} Kafka {kafka_version(KAFKA_HOME)} broker(s) on {self.connect} ...",
            flush=True,
        )
        started = time.perf_counter()
        self.cluster = KafkaCluster(
            KAFKA_HOME,
            work / "kafka",
            ClientSettings(connect=self.connect),
            brokers=brokers,
            properties=BROKER_PROPERTIES,
        )
        stack.callback(self.cluster.stop)
        self.cluster.start(timeout=180)
        self.broker_start_s = time.perf_counter() - started
        self.logs = BrokerLogs(self.cluster)
        from configctl.adminapi.client import KafkaAdmin

        self.admin = KafkaAdmin(self.cluster.bootstrap)
        stack.callback(self.admin.close)
        self.topics = [f"{TOPIC_PREFIX}{i:05d}" for i in range(topics)]
        print(f"creating {topics} topics ...", flush=True)
        self.create_topics_s = create_topics(self.cluster.bootstrap, self.topics)
        wait(lambda: len(self.zk.get_children("/brokers/topics")) >= topics, 120, "the topics in ZooKeeper")

    def fresh_chroot(self, name: str) -> str:
        client = kazoo(self.root)
        try:
            path = f"/kafka-peer-{self.run_id}/{name}"
            client.ensure_path(path)
        finally:
            self._close(client)
        return self.root + path

    def last_notified_topic(self) -> str:
        """The topic of the newest change notification (the last one a broker will process)."""
        names = [n for n in self.zk.get_children(CHANGES_PATH) if n.startswith(NOTIFICATION_PREFIX)]
        data, _ = self.zk.get(f"{CHANGES_PATH}/{max(names)}")
        return json.loads(data)["entity_path"].split("/", 1)[1]

    @staticmethod
    def _close(client: KazooClient) -> None:
        client.stop()
        client.close()


PROPAGATION_PARTS = {
    "propagation": "few notifications",
    "propagation_after_bulk": "after the applies",
}


def figures(results: dict) -> list[dict]:
    """configctl's figures with the raw limit of this run, and Kafka's way as the target to beat."""
    rows = []
    if "one_change" in results:
        part = results["one_change"]
        rows.append(
            beside_kafka_configs(
                "one topic change: configctl alter, CLI process",
                part["configctl_alter"]["median_s"],
                part["bare_interpreter"]["median_s"],
                part["kafka_configs_alter"]["median_s"],
            )
        )
    if "bulk" in results:
        part = results["bulk"]
        n = part["topics"]
        rows.append(
            beside_kafka_configs(
                f"{n:,} topic changes: configctl apply -f, CLI process",
                part["configctl_apply"]["median_s"],
                part["raw_multi_same_nodes"]["median_s"],
                part["kafka_configs_extrapolated_s"],
                changes=n,
            )
        )
    for key, when in PROPAGATION_PARTS.items():
        if key not in results:
            continue
        part = results[key]
        peer = part["commit_to_brokers_log_processing_it"]["p99_ms"]
        rows.append(
            beside_peer(
                f"propagation p99, {part['changes']} changes, {when} "
                f"({part['notifications_in_zookeeper']:,}): configctl listener's state node",
                part["commit_to_listener_state_node"]["p99_ms"],
                "ms",
                part["raw_child_watch_and_listing"]["p99_ms"],
                f"<= a real broker processing it ({peer:g} ms)",
                peer,
            )
        )
    return rows


def side_by_side(results: dict) -> str:
    """The figures as one table: configctl, Kafka, and the raw limits of the same run."""
    lines: list[tuple[str, str, str, str]] = [("", "configctl", "Kafka 3.9", "raw limit, same run")]

    if "one_change" in results:
        p = results["one_change"]
        lines.append(
            (
                f"one topic change, min / median / max of {p['configctl_alter']['runs']}",
                min_median_max(p["configctl_alter"]),
                min_median_max(p["kafka_configs_alter"]),
                f"python -c pass {p['bare_interpreter']['median_s']:.3f} s; java -version "
                f"{p['bare_jvm']['median_s']:.3f} s; ConfigCommand --help {p['kafka_configs_help']['median_s']:.3f} s",
            )
        )
    if "bulk" in results:
        p = results["bulk"]
        n = p["topics"]
        k = p["kafka_configs_measured_invocations"]
        jvms = (
            ""
            if p["bare_jvm_times_topics_s"] is None
            else f"; {n:,} bare JVMs {p['bare_jvm_times_topics_s']:g} s"
        )
        lines.append(
            (
                f"{n:,} topic changes, median of {p['configctl_apply']['runs']} applies",
                f"{p['configctl_apply']['median_s']:.3f} s, one apply -f",
                f"{p['kafka_configs_extrapolated_s']:g} s EXTRAPOLATED: {n:,} x the median of "
                f"{k['runs']} invocations ({k['median_s']:.3f} s)",
                f"raw multis, same nodes {p['raw_multi_same_nodes']['median_s']:.3f} s{jvms}",
            )
        )
        lines.append(
            (
                f"  apply returned -> every broker processed the last of {n:,}",
                f"{p['apply_returned_to_brokers_processed_last_s']['median_s']:.3f} s",
                "",
                "",
            )
        )
    for key, when in PROPAGATION_PARTS.items():
        if key not in results:
            continue
        p = results[key]
        raw = f"child watch + list {p50_p99(p['raw_child_watch_and_listing'])}"
        lines.append(
            (
                f"propagation, {p['changes']} changes, {when} ({p['notifications_in_zookeeper']:,}): "
                "listener state node / broker log",
                p50_p99(p["commit_to_listener_state_node"]),
                p50_p99(p["commit_to_brokers_log_processing_it"]),
                raw,
            )
        )
        lines.append(
            (
                "  listener log 'applied' / broker DescribeConfigs reports it",
                p50_p99(p["commit_to_listener_log_applied"]),
                p50_p99(p["commit_to_describe_configs_reports_it"]),
                f"stat of each notification in turn {p['stat_of_each_notification_in_turn_ms']:g} ms",
            )
        )
    return text_table(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka-brokers", type=int, default=1, help="Kafka brokers to start (1 or 3)")
    parser.add_argument("--runs", type=int, default=5, help="invocations of each tool for one change")
    parser.add_argument("--topics", type=int, default=1000, help="topics for the bulk part")
    parser.add_argument(
        "--kafka-invocations", type=int, default=20, help="ConfigCommand runs measured in bulk"
    )
    parser.add_argument("--apply-rounds", type=int, default=3)
    parser.add_argument("--changes", type=int, default=20, help="changes timed in each propagation part")
    parser.add_argument("--poll-ms", type=float, default=2.0, help="DescribeConfigs poll interval")
    parser.add_argument("--pause-ms", type=float, default=50.0, help="pause between propagation changes")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=["one_change", "propagation", "bulk", "propagation_after_bulk"],
    )
    parser.add_argument("--json", type=Path, help="also write every figure here as JSON ('-': stdout)")
    args = parser.parse_args()
    if args.topics < args.kafka_invocations + 2:
        parser.error("--topics must exceed --kafka-invocations by 2")
    if min(args.runs, args.apply_rounds, args.changes) < 1:
        parser.error("--runs, --apply-rounds and --changes must be at least 1")

    results: dict[str, Any] = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    begun = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="configctl-kafka-peer-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        port = next(p for p in range(26_000 + os.getpid() % 5000, 65_000) if port_is_free(p))
        server = LocalZooKeeper(work / "zk", port=port)
        stack.callback(server.stop)
        server.start(timeout=120)
        ctx = Context(stack, work, server.connect_string, args.kafka_brokers, args.topics)
        ctx.results = results
        results["setup"] = {
            "kafka_version": kafka_version(KAFKA_HOME),
            "brokers": args.kafka_brokers,
            "broker_start_s": round(ctx.broker_start_s, 2),
            "create_topics_s": round(ctx.create_topics_s, 2),
            "topics": args.topics,
            "describe_configs_reads_zookeeper": describe_reads_zookeeper(ctx),
        }
        print(json.dumps(results["setup"]), flush=True)
        parts = [
            ("one_change", lambda: one_change(ctx, args.runs)),
            ("propagation", lambda: propagation(ctx, args.changes, args.poll_ms, args.pause_ms)),
            ("bulk", lambda: bulk(ctx, args.kafka_invocations, args.apply_rounds)),
            ("propagation_after_bulk", lambda: propagation(ctx, args.changes, args.poll_ms, args.pause_ms)),
        ]
        for name, run in parts:
            if name in args.skip:
                continue
            started = time.perf_counter()
            print(f"== {name}", flush=True)
            results[name] = run()
            results[name]["part_took_s"] = round(time.perf_counter() - started, 1)
            print(
                json.dumps({k: v for k, v in results[name].items() if k != "samples_ms"}, indent=2),
                flush=True,
            )
    results["took_s"] = round(time.perf_counter() - begun, 1)
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(f"\n== configctl beside kafka-configs.sh and a real broker (whole run {results['took_s']} s)")
    print(side_by_side(results))
    if results["setup"]["describe_configs_reads_zookeeper"]:
        print(
            "(DescribeConfigs reported a config node the broker never processed: in ZooKeeper mode it "
            "reads ZooKeeper, so the broker's log line is the figure for applied)"
        )
    rows = figures(results)
    results["targets"] = rows
    print("\n== configctl's figures: measured, raw limit of this run, Kafka's way as the target")
    print(format_table(rows))
    record_rows(rows)
    write_json(results, args.json)


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # so every ``finally`` and the exit stack stop what we started


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "raw-watch":
        raw_watch_main(sys.argv[2])
    else:
        signal.signal(signal.SIGTERM, _terminate)
        main()
