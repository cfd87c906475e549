"""The KRaft flight recorder (``configctl.kraft.recorder``): how soon a write is everywhere, what recording it costs, how fast a recorder catches up.

The recorder beside a KRaft broker copies every committed config write from the broker's own
metadata log into ``_configctl_metadata``. Whether that is worth running rests on three figures,
all measured in one run, on one real Kafka 4.4 cluster (brokers 1, 2, 3 and a controller of their
own, node 100, from ``build/kafka4/libs``, ``make kafka``) that this script starts and stops:

1. **Commit to applied on every broker.** ``--changes`` sequential writes of one topic's
   ``retention.ms`` (each a new value) through configctl's Admin API client. From each write's
   response four streams poll at once, each on a client of its own, sleeping ``--poll-ms``
   between requests: (a) DescribeQuorum (Kafka's own progress of each replica: its metadata log
   end offset, as the quorum leader last saw it) and (b) for each broker, DescribeConfigs sent to
   that broker itself. The write's metadata offset is found after the fact in broker 1's log (the
   ConfigRecord carrying the write's value); (a) is when the slowest broker's log end offset was
   first seen past it, (b) when the slowest broker first reported the value. Every figure
   includes the polling granularity (the sleep plus one request, whose mean time is printed).
   (a) is the floor for (b): a broker cannot apply a record it has not fetched.
2. **The recorder's cost per change.** CPU only, on broker 1's real log (as the sequential writes
   left it, and whole after the bulk writes of 3), the cluster stopped:
   ``read_log`` alone, then with the fold (``MetadataState.apply_batch`` per batch), then with
   ``recordertopic.encode_change`` per change: microseconds per metadata record and per change,
   and MB/s; and a round with nothing new (``read_log`` from past the log's end), which every
   round of a running recorder pays. End to end on the running cluster: ``Recorder.step()``
   recording every change not recorded yet (DescribeQuorum, read, fold, encode, produce to
   ``_configctl_metadata`` with acks from every in-sync replica): changes per second; and the
   ``step()`` after it, with nothing (or a NoOp record) new.
3. **Catching up a week.** Kafka keeps 7 days or 100 MiB of metadata log by default
   (``metadata.max.retention.ms`` / ``metadata.max.retention.bytes``). The time to catch up
   100 MiB is **extrapolated** from the measured MB/s. Measured directly: ``--bulk-changes``
   topic writes (``--per-request`` topics to one IncrementalAlterConfigs request, to make
   several MB of real log quickly) written with no recorder running, then a recorder opened
   (it reads the recorder topic whole and refolds the log up to where recording resumes) and
   one ``step()`` catching all of them up.

Not part of the test suite. With ``CONFIGCTL_BENCH_RESULTS`` set (``make bench``), the target
rows are appended there (``benchmarks/results.py``).

    python benchmarks/flight_recorder.py                  # about 90 s on 2 cores
    python benchmarks/flight_recorder.py --changes 50 --bulk-changes 5000
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.kafka_peer import create_topics, latency  # noqa: E402
from benchmarks.peer_tables import text_table  # noqa: E402
from benchmarks.results import format_table, machine, record_rows  # noqa: E402
from configctl.adminapi.client import KafkaAdmin  # noqa: E402
from configctl.kraft import recordertopic  # noqa: E402
from configctl.kraft.metadatafold import MetadataState, batches  # noqa: E402
from configctl.kraft.metadatalog import PARTITION, MetadataEntry, read_log, segments  # noqa: E402
from configctl.kraft.metadatarecords import ConfigRecord  # noqa: E402
from configctl.kraft.recorder import Recorder  # noqa: E402
from configctl.kraft.reports import quorum_report  # noqa: E402
from configctl.localkafka import kafka_version  # noqa: E402
from configctl.localkraft import KRaftCluster  # noqa: E402

KAFKA4_HOME = REPO_ROOT / "build" / "kafka4"
TOPIC = "fr-bench"
BULK_PREFIX = "fr-bulk-"
KEY = "retention.ms"
BASE_VALUE = 86_400_000
RECORDER_BROKER = 1
MIB = 2**20
WEEK_BYTES = 100 * MIB
"""Kafka's default ``metadata.max.retention.bytes``: the most metadata log a recorder ever catches up."""


# ------------------------------------------------------------------------------------------------
# the cluster
# ------------------------------------------------------------------------------------------------


def wait(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting: {what}")
        time.sleep(poll)


def reported_value(admin: KafkaAdmin, broker_id: int, topic: str) -> str | None:
    """``topic``'s ``retention.ms`` as broker ``broker_id`` itself reports it (DescribeConfigs to it)."""
    answer = admin.describe_topics([topic], node_id=broker_id, missing_ok=True)
    config = answer.get(topic)
    if config is None:
        return None
    found = config.get(KEY)
    return None if found is None else found.value


def every_broker_knows(admin: KafkaAdmin, brokers: Iterable[int], topic: str) -> bool:
    try:
        return all(topic in admin.describe_topics([topic], node_id=b, missing_ok=True) for b in brokers)
    except Exception:  # a broker that does not know the topic yet
        return False


def log_bytes(log_dir: Path) -> int:
    return sum(path.stat().st_size for _, path in segments(log_dir))


# ------------------------------------------------------------------------------------------------
# 1. commit to applied on every broker
# ------------------------------------------------------------------------------------------------


@dataclass
class Write:
    """One write being followed: its value, when its response came, and what the pollers saw."""

    value: str
    returned: float
    high_after: int | None = None
    series: list[tuple[float, dict[int, int | None]]] = field(default_factory=list)
    reported_ms: dict[int, float] = field(default_factory=dict)


class Poller(threading.Thread):
    """One polling stream (DescribeQuorum, or DescribeConfigs to one broker), on a client of its
    own: given a write, it asks every ``poll`` seconds until ``seen`` says it is done."""

    def __init__(self, name: str, seen: Callable[[Write], bool], poll: float, done: queue.Queue) -> None:
        super().__init__(name=name, daemon=True)
        self.seen, self.poll, self.done = seen, poll, done
        self.jobs: queue.Queue[Write | None] = queue.Queue()
        self.asked = 0
        self.asking_s = 0.0

    def run(self) -> None:
        while (write := self.jobs.get()) is not None:
            try:
                while not self.seen(write):
                    if time.perf_counter() - write.returned > 30:
                        raise TimeoutError(f"{self.name}: write {write.value} not seen in 30 s")
                    time.sleep(self.poll)
                self.done.put(None)
            except Exception as problem:  # the main thread stops the benchmark with it
                self.done.put(problem)

    def timed(self, ask: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return ask()
        finally:
            self.asked += 1
            self.asking_s += time.perf_counter() - started


def propagation(
    admin: KafkaAdmin, bootstrap: str, brokers: list[int], log_dir: Path, changes: int, poll_ms: float
) -> dict:
    """``changes`` sequential writes; for each, when every broker's log passed it and reported it.

    Four streams poll at once, each on a client of its own (one DescribeQuorum stream, one
    DescribeConfigs stream per broker), so one slow answer delays only its own stream."""
    from kafka.admin import KafkaAdminClient

    poll = poll_ms / 1000
    done: queue.Queue[Exception | None] = queue.Queue()
    quorum_client = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=30_000)
    per_broker = {b: KafkaAdmin(bootstrap) for b in brokers}

    def quorum_seen(write: Write) -> bool:
        quorum = quorum_report(quorum_poller.timed(quorum_client.describe_metadata_quorum))
        at = (time.perf_counter() - write.returned) * 1000
        ends = {
            r["node_id"]: r["log_end_offset"]
            for r in quorum["voters"] + quorum["observers"]
            if r["node_id"] in brokers
        }
        write.series.append((at, ends))
        if write.high_after is None:
            write.high_after = quorum["high_watermark"]
        high = write.high_after
        return high is not None and all((ends.get(b) or -1) >= high for b in brokers)

    def broker_seen(broker: int) -> Callable[[Write], bool]:
        def seen(write: Write) -> bool:
            value = pollers[broker].timed(lambda: reported_value(per_broker[broker], broker, TOPIC))
            if value != write.value:
                return False
            write.reported_ms[broker] = (time.perf_counter() - write.returned) * 1000
            return True

        return seen

    quorum_poller = Poller("DescribeQuorum", quorum_seen, poll, done)
    pollers = {b: Poller(f"DescribeConfigs to broker {b}", broker_seen(b), poll, done) for b in brokers}
    streams = [quorum_poller, *pollers.values()]
    writes: list[Write] = []
    write_ms: list[float] = []
    try:
        for stream in streams:
            stream.start()
        for i in range(changes):
            value = str(BASE_VALUE + i)
            started = time.perf_counter()
            admin.alter_topic(TOPIC, {KEY: value})
            write = Write(value, time.perf_counter())
            write_ms.append((write.returned - started) * 1000)
            for stream in streams:
                stream.jobs.put(write)
            for _ in streams:
                problem = done.get()
                if problem is not None:
                    raise SystemExit(str(problem))
            writes.append(write)
    finally:
        for stream in streams:
            stream.jobs.put(None)
        for stream in streams:
            stream.join(timeout=35)
        quorum_client.close()
        for client in per_broker.values():
            client.close()
    # The offset of each write, read from broker 1's own log after the fact.
    offsets = {
        e.record.value: e.offset
        for e in read_log(log_dir)
        if isinstance(e, MetadataEntry)
        and isinstance(e.record, ConfigRecord)
        and e.record.resource_name == TOPIC
        and e.record.name == KEY
    }

    def first(write: Write, past: int) -> float:
        """When the slowest broker's log end first passed offset ``past`` (a log end E holds E - 1)."""
        return max(next(t for t, ends in write.series if (ends.get(b) or -1) > past) for b in brokers)

    log_end, log_end_high, applied = [], [], []
    for write in writes:
        assert write.high_after is not None
        log_end.append(first(write, offsets[write.value]))
        log_end_high.append(first(write, write.high_after - 1))
        applied.append(max(write.reported_ms.values()))
    return {
        "changes": changes,
        "brokers": len(brokers),
        "poll_ms": poll_ms,
        "quorum_request_ms": round(quorum_poller.asking_s / quorum_poller.asked * 1000, 2),
        "describe_request_ms": round(
            sum(p.asking_s for p in pollers.values()) / sum(p.asked for p in pollers.values()) * 1000, 2
        ),
        "write_ms": latency(write_ms),
        "log_end_passed_ms": latency(log_end),
        "log_end_passed_high_watermark_ms": latency(log_end_high),
        "reported_ms": latency(applied),
        "reported_minus_log_end_ms": latency([b - a for a, b in zip(log_end, applied, strict=True)]),
    }


# ------------------------------------------------------------------------------------------------
# 2 and 3. the recorder's cost: CPU on the real log, and end to end
# ------------------------------------------------------------------------------------------------


def cpu_passes(log_dir: Path, runs: int) -> dict:
    """Best-of-``runs`` seconds of reading the log alone, with the fold, and with the encoding."""
    size = log_bytes(log_dir)

    def read_only() -> tuple[int, int]:
        count = sum(1 for e in read_log(log_dir) if isinstance(e, MetadataEntry))
        return count, 0

    def fold(encode: bool) -> tuple[int, int]:
        state, records, changes, now = MetadataState(), 0, 0, int(time.time() * 1000)
        entries = (e for e in read_log(log_dir) if isinstance(e, MetadataEntry))
        for batch in batches(entries):
            records += len(batch)
            for change in state.apply_batch(batch):
                changes += 1
                if encode:
                    recordertopic.encode_change(change, RECORDER_BROKER, now)
        return records, changes

    def idle() -> tuple[int, int]:
        """A round with nothing new: the log read from past its end (nothing yielded)."""
        return sum(1 for _ in read_log(log_dir, 2**62)), 0

    passes: dict[str, Callable[[], tuple[int, int]]] = {
        "idle": idle,
        "read": read_only,
        "read_fold": lambda: fold(False),
        "read_fold_encode": lambda: fold(True),
    }
    best: dict[str, float] = {}
    records = changes = 0
    for name, run in passes.items():
        times = []
        for _ in range(runs):
            started = time.process_time()
            count, found = run()
            times.append(time.process_time() - started)
            records, changes = max(records, count), max(changes, found)
        best[name] = min(times)
    full = best["read_fold_encode"]
    return {
        "bytes": size,
        "records": records,
        "changes": changes,
        "runs": runs,
        "cpu_s": {k: round(v, 4) for k, v in best.items()},
        "us_per_record": {k: round(v / records * 1e6, 2) for k, v in best.items()},
        "us_per_change": {k: round(v / changes * 1e6, 2) if changes else None for k, v in best.items()},
        "fold_encode_us_per_change": round((full - best["read"]) / changes * 1e6, 2) if changes else None,
        "mb_per_s": {k: round(size / 1e6 / max(v, 1e-9), 2) for k, v in best.items()},
        "week_s": {k: round(WEEK_BYTES / (size / max(v, 1e-9)), 1) for k, v in best.items()},
    }


def recorder_round(bootstrap: str, log_dir: Path) -> dict:
    """Open a recorder (as a restart does), one ``step()`` and the next: what the first recorded,
    and how long each took."""
    started = time.perf_counter()
    with Recorder(RECORDER_BROKER, log_dir, bootstrap) as recorder:
        opened = time.perf_counter()
        resumed_at = recorder.position
        done = recorder.step()
        stepped = time.perf_counter()
        recorder.step()  # the next round: nothing (or a NoOp record) new, what every later round costs
        idle_s = time.perf_counter() - stepped
    step_s = stepped - opened
    return {
        "open_s": round(opened - started, 3),
        "resumed_at": resumed_at,
        "step_s": round(step_s, 3),
        "next_step_s": round(idle_s, 3),
        "changes": done.changes,
        "gaps": done.gaps,
        "recorded_to": done.recorded_to,
        "high_watermark": done.high_watermark,
        "changes_per_s": round(done.changes / step_s) if step_s else None,
    }


def bulk_writes(bare: Any, topics: list[str], changes: int) -> float:
    """``changes`` topic writes, ``len(topics)`` to a request (kafka-python, IncrementalAlterConfigs)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    started = time.perf_counter()
    sent, round_ = 0, 0
    while sent < changes:
        chosen = topics[: min(len(topics), changes - sent)]
        value = str(2 * BASE_VALUE + round_)
        resources = [ConfigResource(ConfigResourceType.TOPIC, t, {KEY: value}) for t in chosen]
        answer = bare.alter_configs(resources, raise_on_unknown=False, incremental=True)
        failed = {name: result for name, result in answer.get("topic", {}).items() if result != "OK"}
        if failed:
            raise SystemExit(f"a bulk write failed: {dict(list(failed.items())[:3])}")
        sent += len(chosen)
        round_ += 1
    return time.perf_counter() - started


# ------------------------------------------------------------------------------------------------
# the tables
# ------------------------------------------------------------------------------------------------


def pmm(values: dict) -> str:
    return f"{values['p50_ms']:.1f} / {values['p99_ms']:.1f} / {values['max_ms']:.1f} ms"


def tables(results: dict) -> list[str]:
    p = results["propagation"]
    one = [
        ("write response -> slowest of the brokers", "p50 / p99 / max", "what it is"),
        (
            "(a) its metadata log end passed the write's offset",
            pmm(p["log_end_passed_ms"]),
            "DescribeQuorum: Kafka's own replica progress (the floor for b)",
        ),
        (
            "(a') ... passed the high watermark taken after the response",
            pmm(p["log_end_passed_high_watermark_ms"]),
            "a looser bound (may wait for a NoOp record too)",
        ),
        (
            "(b) it reports the new value",
            pmm(p["reported_ms"]),
            "DescribeConfigs sent to that broker",
        ),
        (
            "(b) - (a), per write",
            pmm(p["reported_minus_log_end_ms"]),
            "negative: the quorum stream looked later",
        ),
        ("the write itself (request to response)", pmm(p["write_ms"]), "configctl's KafkaAdmin.alter_topic"),
    ]
    two = [
        (
            "broker 1's real log (CPU only, best of runs)",
            "CPU s",
            "MB/s",
            "us/record",
            "us/change",
            "100 MiB at this rate",
        )
    ]
    for log_key, log_label in (("cpu_sequential", "after part 1"), ("cpu_full", "whole log")):
        cpu = results[log_key]
        two.append(
            (
                f"{log_label}: {cpu['bytes'] / 1e6:.2f} MB, {cpu['records']:,} records, {cpu['changes']:,} changes",
                "",
                "",
                "",
                "",
                "EXTRAPOLATED",
            )
        )
        for k, label in (
            ("idle", "  a round with nothing new (read_log past the end)"),
            ("read", "  read_log alone (decode, CRC)"),
            ("read_fold", "  + fold (MetadataState.apply_batch)"),
            ("read_fold_encode", "  + encode_change per change"),
        ):
            two.append(
                (
                    label,
                    f"{cpu['cpu_s'][k]:.3f}",
                    f"{cpu['mb_per_s'][k]:.2f}",
                    f"{cpu['us_per_record'][k]:.1f}" if k != "idle" else "",
                    f"{cpu['us_per_change'][k]:.1f}" if cpu["changes"] and k != "idle" else "",
                    f"{cpu['week_s'][k]:.1f} s",
                )
            )
    e2e = [
        (
            "Recorder, end to end (cluster running)",
            "open s",
            "step() s",
            "changes",
            "changes/s",
            "log MB",
            "next step() s",
        )
    ]
    for key, label in (
        ("first", "first start: every change so far"),
        ("bulk", "catch-up after the bulk writes"),
    ):
        r = results[key]
        e2e.append(
            (
                label,
                f"{r['open_s']:.2f}",
                f"{r['step_s']:.2f}",
                f"{r['changes']:,}",
                f"{r['changes_per_s']:,}" if r["changes_per_s"] else "",
                f"{r['log_mb']:.2f}",
                f"{r['next_step_s']:.2f}",
            )
        )
    r = results["restart"]
    e2e.append(
        (
            "restart once all is recorded",
            f"{r['open_s']:.2f}",
            f"{r['step_s']:.2f}",
            f"{r['changes']:,}",
            "",
            "",
            f"{r['next_step_s']:.2f}",
        )
    )
    return [text_table(one), text_table(two), text_table(e2e)]


def figures(results: dict) -> list[dict]:
    """The target rows (``benchmarks/results.py``), each beside the log's read alone in the same run."""
    cpu, bulk = results["cpu_full"], results["bulk"]
    read_week = cpu["week_s"]["read"]
    full_week = cpu["week_s"]["read_fold_encode"]
    e2e_week = WEEK_BYTES / (bulk["log_mb"] * 1e6 / bulk["step_s"])
    return [
        {
            "figure": "KRaft flight recorder: 100 MiB of metadata log read, folded, encoded (CPU, extrapolated)",
            "measured": full_week,
            "unit": "s",
            "limit": read_week,
            "ratio": round(full_week / read_week, 2),
            "target": "<= 2x the log's read alone",
            "met": full_week <= 2 * read_week,
        },
        {
            "figure": "KRaft flight recorder: 100 MiB catch-up by Recorder.step(), extrapolated",
            "measured": round(e2e_week, 1),
            "unit": "s",
            "limit": read_week,
            "ratio": round(e2e_week / read_week, 2),
            "target": "<= 300 s",
            "met": e2e_week <= 300,
        },
    ]


# ------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=200, help="sequential writes timed to every broker")
    parser.add_argument("--poll-ms", type=float, default=5.0, help="sleep between polling rounds")
    parser.add_argument("--bulk-changes", type=int, default=50_000, help="writes caught up in one step()")
    parser.add_argument("--per-request", type=int, default=100, help="topics per bulk request")
    parser.add_argument("--runs", type=int, default=3, help="CPU passes over the log (best taken)")
    args = parser.parse_args()
    begun = time.perf_counter()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="flight-recorder-bench-") as work:
        cluster = KRaftCluster(KAFKA4_HOME, Path(work) / "kraft", brokers=3, combined=False)
        log_dir = cluster.nodes[RECORDER_BROKER].dir / "data"
        sequential = Path(work) / "sequential"
        brokers = sorted(cluster.brokers)
        print(
            f"starting Kafka {kafka_version(KAFKA4_HOME)}: brokers {brokers} and controller 100 ...",
            flush=True,
        )
        try:
            with cluster:
                from kafka.admin import KafkaAdminClient

                bootstrap = cluster.bootstrap
                bare = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=120_000)
                try:
                    with KafkaAdmin(bootstrap) as admin:
                        wait(lambda: admin.broker_ids() == brokers, 60, "every broker registered")
                        bulk_topics = [f"{BULK_PREFIX}{i:03d}" for i in range(args.per_request)]
                        create_topics(bootstrap, [TOPIC, *bulk_topics])
                        for topic in (TOPIC, bulk_topics[-1]):
                            wait(
                                lambda t=topic: every_broker_knows(admin, brokers, t),
                                60,
                                f"{topic} everywhere",
                            )
                        print(
                            f"1. {args.changes} sequential writes, polled every {args.poll_ms:g} ms ...",
                            flush=True,
                        )
                        results["propagation"] = propagation(
                            admin, bootstrap, brokers, log_dir, args.changes, args.poll_ms
                        )
                    # the log as the sequential writes left it (a running node's: a torn tail is skipped)
                    shutil.copytree(log_dir / PARTITION, sequential / PARTITION)
                    print("2. a recorder's first start: every change so far ...", flush=True)
                    before = log_bytes(log_dir)
                    results["first"] = {**recorder_round(bootstrap, log_dir), "log_mb": before / 1e6}
                    print(f"3. {args.bulk_changes:,} writes with no recorder running ...", flush=True)
                    results["bulk_write_s"] = round(bulk_writes(bare, bulk_topics, args.bulk_changes), 1)
                    time.sleep(1)  # the last writes committed and fetched by broker 1
                    grown = log_bytes(log_dir) - before
                    print("   ... then a recorder catching them up", flush=True)
                    results["bulk"] = {**recorder_round(bootstrap, log_dir), "log_mb": grown / 1e6}
                    results["restart"] = recorder_round(bootstrap, log_dir)
                finally:
                    bare.close()
        finally:
            cluster.stop()  # also when starting failed part way
        print(f"CPU passes over broker {RECORDER_BROKER}'s log, the cluster stopped ...", flush=True)
        results["cpu_sequential"] = cpu_passes(sequential, args.runs)
        results["cpu_full"] = cpu_passes(log_dir, args.runs)
    took = time.perf_counter() - begun
    p = results["propagation"]
    print(
        f"\n== the KRaft flight recorder on Kafka 4.4 (brokers 1-3, controller 100), whole run {took:.0f} s"
    )
    print(f"machine: {machine()}")
    print(
        f"\n1. commit -> applied on every broker, {p['changes']} sequential writes of {TOPIC}'s {KEY}: "
        f"the slowest of {p['brokers']} brokers per write. Offsets: each write's ConfigRecord found in "
        f"broker {RECORDER_BROKER}'s log after the fact. Polling: four streams at once, each sleeping "
        f"{p['poll_ms']:g} ms between requests (DescribeQuorum answered in {p['quorum_request_ms']:g} ms, "
        f"DescribeConfigs to one broker in {p['describe_request_ms']:g} ms, means): every figure includes "
        "that granularity."
    )
    one, two, three = tables(results)
    print(one)
    cpu = results["cpu_full"]
    print(
        f"\n2. the recorder's cost per change, CPU only (the cluster stopped), best of {cpu['runs']}: "
        f"the log as the sequential writes left it, and the whole log after the bulk writes"
    )
    print(two)
    print(
        f"   whole log: fold + encode add {cpu['fold_encode_us_per_change']:g} us per change "
        f"to the read's {cpu['us_per_change']['read']:g} us"
    )
    print(f"\n3. end to end ({args.bulk_changes:,} bulk writes took {results['bulk_write_s']:g} s to write)")
    print(three)
    bulk = results["bulk"]
    rate = bulk["log_mb"] / bulk["step_s"]
    print(
        f"   step() covered {bulk['log_mb']:.2f} MB of log at {rate:.2f} MB/s: 100 MiB would take "
        f"{WEEK_BYTES / 1e6 / rate:.0f} s (EXTRAPOLATED from the measured rate)"
    )
    rows = figures(results)
    print()
    print(format_table(rows))
    record_rows(rows)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
