"""The KRaft peer: configctl beside Kafka 4's own ``kafka-configs.sh`` and a bare Admin API client.

In one run, on one real Kafka 4.4 cluster in KRaft mode (``--brokers`` brokers and a controller
of their own, from ``build/kafka4/libs``, ``make kafka``) that this script starts and stops:

1. **One change** (a topic's ``retention.ms``), ``--runs`` times each, wall time per change:
   ``configctl --bootstrap-server B alter ...`` as a process (Python's start, the version check,
   the request, the read-back and the history record in ``_configctl_history``), beside
   ``kafka-configs.sh --alter`` (``org.apache.kafka.tools.ConfigCommand``, a whole JVM process:
   its start is part of the peer's cost, as it is of every run of the tool), beside a bare Admin
   API client doing the same request in-process (kafka-python's ``KafkaAdminClient.alter_configs``,
   IncrementalAlterConfigs, already connected). Raw limits: ``python -c pass`` and a bare JVM
   (``java -version`` with the tool's options).
2. **``--topics`` topic changes** (1,000): ``configctl apply -f desired.yaml --yes`` beside
   Kafka's way and the bare client. On KRaft configctl writes one change at a time (version
   check, request, read-back, history record), about 60 ms each since the store's history
   producer and topic reads were fixed (half a second before, when a 1,000-topic apply did not
   finish in 600 s): the apply covers every topic by default; ``--apply-topics N`` applies N of
   them and multiplies the per-change time out, printed as **extrapolated**.
   ConfigCommand alters one entity per invocation (it refuses more), so ``--kafka-invocations``
   runs are measured on distinct topics and multiplied out the same way. The bare client sends
   every topic's change in one IncrementalAlterConfigs request. Each way is checked: every
   broker reports the new values (a sample of topics).
3. **Commit to every broker reporting it**, ``--changes`` times for each writer: after a write
   returns, each broker is asked (DescribeConfigs to that broker, every ``--poll-ms``) until it
   reports the new value; the figure is when the last broker did (p50 / p99). configctl's own
   write path (``KRaftWrites.commit``: version check, request, read-back, history record) beside
   the bare client's request. On KRaft a broker answers from its metadata image, so this is the
   time for the controller's commit to reach every broker's image.

The topics are created first (kafka-python's ``create_topics``, 1 partition, replication factor 1).
Everything started is stopped on the way out, failure or not.

    python benchmarks/kraft_peer.py                     # about 2 minutes on 2 cores
    python benchmarks/kraft_peer.py --topics 200 --runs 3 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.kafka_peer import Values, create_topics, latency, spread, timed_run  # noqa: E402
from benchmarks.peer_tables import beside_kafka_configs, beside_peer, min_median_max, p50_p99, text_table  # noqa: E402
from benchmarks.propagation import child_env  # noqa: E402
from benchmarks.results import format_table, machine, record_rows, write_json  # noqa: E402
from configctl.adminapi.client import KafkaAdmin  # noqa: E402
from configctl.desired import syntax  # noqa: E402
from configctl.entities import Entity, EntityType  # noqa: E402
from configctl.kraft.store import KRaftStore  # noqa: E402
from configctl.kraft.writes import KRaftWrites  # noqa: E402
from configctl.localkafka import TOOL_JVM_OPTIONS, kafka_version  # noqa: E402
from configctl.localkraft import KRaftCluster  # noqa: E402
from configctl.store import Change  # noqa: E402

KAFKA4_HOME = REPO_ROOT / "build" / "kafka4"
TOPIC_PREFIX = "kpeer-"
KEY = "retention.ms"
RESULTS_MD = REPO_ROOT / "benchmarks" / "RESULTS.md"
SECTION = "KRaft peer (Kafka 4.4)"


class Context:
    """The cluster, its clients and the topics every part uses."""

    def __init__(self, stack: contextlib.ExitStack, work: Path, brokers: int, topics: int) -> None:
        self.work = work
        self.value = Values()
        print(
            f"starting Kafka {kafka_version(KAFKA4_HOME)}: {brokers} broker(s) and a controller ...",
            flush=True,
        )
        started = time.perf_counter()
        self.cluster = KRaftCluster(KAFKA4_HOME, work / "kraft", brokers=brokers)
        stack.callback(self.cluster.stop)
        self.cluster.start()
        self.start_s = time.perf_counter() - started
        self.bootstrap = self.cluster.bootstrap
        self.admin = KafkaAdmin(self.bootstrap)
        stack.callback(self.admin.close)
        deadline = time.monotonic() + 60
        while self.admin.broker_ids() != sorted(self.cluster.brokers):
            if time.monotonic() > deadline:
                raise SystemExit("the brokers did not all register")
            time.sleep(0.2)
        from kafka.admin import KafkaAdminClient

        self.bare = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","), request_timeout_ms=120_000)
        stack.callback(self.bare.close)
        self.topics = [f"{TOPIC_PREFIX}{i:05d}" for i in range(topics)]
        print(f"creating {topics} topics ...", flush=True)
        self.create_topics_s = create_topics(self.bootstrap, self.topics)
        self.wait_reported({self.topics[-1]: None}, timeout=120)  # the last one is known everywhere

    # -- what the brokers report -----------------------------------------------------------------

    def reported(self, broker_id: int, topics: list[str]) -> dict[str, str | None]:
        answers = self.admin.describe_topics(topics, node_id=broker_id)
        return {topic: (c.value if (c := answers[topic].get(KEY)) is not None else None) for topic in topics}

    def every_broker_reports(self, expected: dict[str, str | None]) -> bool:
        topics = list(expected)
        for broker_id in self.cluster.brokers:
            try:
                reported = self.reported(broker_id, topics)
            except Exception:  # a topic this broker does not know yet
                return False
            if any(expected[t] is not None and reported[t] != expected[t] for t in topics):
                return False
        return True

    def wait_reported(
        self, expected: dict[str, str | None], timeout: float = 30, poll: float = 0.05
    ) -> float:
        """Seconds until every broker reports ``expected`` (None: the topic is known)."""
        started = time.perf_counter()
        while not self.every_broker_reports(expected):
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"the brokers did not all report {dict(list(expected.items())[:3])}")
            time.sleep(poll)
        return time.perf_counter() - started

    # -- the three writers -----------------------------------------------------------------------

    def configctl(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "configctl", "--bootstrap-server", self.bootstrap, *args]

    def kafka_configs(self, topic: str, value: int) -> float:
        started = time.perf_counter()
        done = self.cluster.config_command(
            "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", f"{KEY}={value}"
        )
        took = time.perf_counter() - started
        if done.returncode != 0 or "Completed" not in done.stdout:
            raise SystemExit(
                f"kafka-configs.sh failed ({done.returncode}): {(done.stderr or done.stdout)[:800]}"
            )
        return took

    def bare_alter(self, values: dict[str, int]) -> float:
        """One IncrementalAlterConfigs request with every topic in it (kafka-python, in-process)."""
        from kafka.admin import ConfigResource, ConfigResourceType

        resources = [ConfigResource(ConfigResourceType.TOPIC, t, {KEY: str(v)}) for t, v in values.items()]
        started = time.perf_counter()
        answer = self.bare.alter_configs(resources, raise_on_unknown=False, incremental=True)
        took = time.perf_counter() - started
        failed = {name: result for name, result in answer.get("topic", {}).items() if result != "OK"}
        if failed or len(answer.get("topic", {})) != len(values):
            raise SystemExit(f"the bare client's request failed: {dict(list(failed.items())[:3])}")
        return took


# ------------------------------------------------------------------------------------------------
# the parts
# ------------------------------------------------------------------------------------------------


def one_change(ctx: Context, runs: int) -> dict:
    topic = ctx.topics[0]
    env = child_env()
    bare_python = [timed_run([sys.executable, "-c", "pass"], "python -c pass", env) for _ in range(runs)]
    bare_jvm = [
        timed_run([ctx.cluster.java, *TOOL_JVM_OPTIONS, "-version"], "java -version") for _ in range(runs)
    ]
    timings: dict[str, list[float]] = {"configctl": [], "kafka": [], "bare": []}
    for i in range(runs):
        order = ("configctl", "kafka", "bare") if i % 2 == 0 else ("bare", "kafka", "configctl")
        for who in order:  # alternate, so none always follows another's broker work
            value = ctx.value()
            if who == "configctl":
                command = ctx.configctl("alter", "--topic", topic, "--add-config", f"{KEY}={value}")
                timings[who].append(timed_run(command, "configctl alter", env))
            elif who == "kafka":
                timings[who].append(ctx.kafka_configs(topic, value))
            else:
                timings[who].append(ctx.bare_alter({topic: value}))
            ctx.wait_reported({topic: str(value)})
    return {
        "topic": topic,
        "configctl_alter_process": spread(timings["configctl"]),
        "kafka_configs_process": spread(timings["kafka"]),
        "bare_client_request": spread(timings["bare"]),
        "bare_interpreter": spread(bare_python),
        "bare_jvm": spread(bare_jvm),
    }


def bulk(ctx: Context, invocations: int, apply_topics: int | None) -> dict:
    """configctl ``apply -f`` of ``apply_topics`` topics, kafka-configs.sh ``invocations`` times, the
    bare client's one request for every topic; configctl's and Kafka's ways multiplied out to
    every topic when they ran fewer (each a change at a time, so the cost is per change)."""
    count = len(ctx.topics)
    # configctl: one apply -f of the first apply_topics topics (every topic's change in the file)
    applied = ctx.topics[:apply_topics]
    values = {topic: ctx.value() for topic in applied}
    desired = ctx.work / "desired.yaml"
    desired.write_text(syntax.dump({"topics": {t: {KEY: v} for t, v in values.items()}}), encoding="utf-8")
    print(f"  configctl apply -f ({len(applied)} of {count} topics) ...", flush=True)
    command = ctx.configctl("apply", "-f", str(desired), "--yes", "--summary")
    apply_s = timed_run(command, "configctl apply", child_env())
    ctx.wait_reported({t: str(values[t]) for t in applied[:: max(1, len(applied) // 20)]})
    # kafka-configs.sh: one entity per JVM (ConfigCommand refuses more than one --entity-name)
    print(f"  kafka-configs.sh x {invocations} ...", flush=True)
    kafka_runs = []
    for topic in ctx.topics[:invocations]:
        value = ctx.value()
        kafka_runs.append(ctx.kafka_configs(topic, value))
        values[topic] = value
    ctx.wait_reported({t: str(values[t]) for t in ctx.topics[:invocations]})
    # the bare client: every topic in one request
    every = {topic: ctx.value() for topic in ctx.topics}
    bare_s = ctx.bare_alter(every)
    settle_s = ctx.wait_reported({t: str(every[t]) for t in ctx.topics[:: max(1, count // 20)]}, timeout=120)
    per_apply = apply_s / len(applied)
    per_call = statistics.median(kafka_runs)
    return {
        "topics": count,
        "configctl_apply_topics": len(applied),
        "configctl_apply_s": round(apply_s, 2),
        "configctl_apply_per_change_ms": round(per_apply * 1000, 1),
        "configctl_apply_extrapolated_s": round(per_apply * count, 1),
        "kafka_configs_measured_invocations": spread(kafka_runs),
        "kafka_configs_extrapolated_s": round(per_call * count, 1),
        "bare_client_one_request_s": round(bare_s, 3),
        "bare_client_per_change_ms": round(bare_s / count * 1000, 2),
        "bare_request_returned_to_sample_reported_s": round(settle_s, 3),
    }


def propagation(ctx: Context, changes: int, poll_ms: float) -> dict:
    topics = ctx.topics[: min(10, len(ctx.topics))]
    samples: dict[str, list[float]] = {"configctl": [], "bare": []}
    write_s: dict[str, list[float]] = {"configctl": [], "bare": []}
    with KRaftStore(ctx.bootstrap, timeout=30) as store:
        writes = KRaftWrites(store)
        for k in range(changes):
            for who in ("configctl", "bare") if k % 2 == 0 else ("bare", "configctl"):
                topic = topics[k % len(topics)]
                value = ctx.value()
                started = time.perf_counter()
                if who == "configctl":
                    entity = Entity.of(EntityType.TOPICS, topic)
                    current = store.read(entity)
                    config = {**current.config, KEY: str(value)}
                    writes.commit(
                        [Change(entity, config, current.version, previous=current.config)],
                        reason="kraft_peer",
                    )
                else:
                    ctx.bare_alter({topic: value})
                returned = time.perf_counter()
                write_s[who].append(returned - started)
                ctx.wait_reported({topic: str(value)}, poll=poll_ms / 1000)
                samples[who].append((time.perf_counter() - returned) * 1000)
    return {
        "changes": changes,
        "brokers": len(ctx.cluster.brokers),
        "poll_ms": poll_ms,
        "configctl_write_returned_to_every_broker": latency(samples["configctl"]),
        "bare_request_returned_to_every_broker": latency(samples["bare"]),
        "configctl_write_ms": latency([s * 1000 for s in write_s["configctl"]]),
        "bare_request_ms": latency([s * 1000 for s in write_s["bare"]]),
        "configctl_write_to_every_broker_ms": latency(
            [w * 1000 + s for w, s in zip(write_s["configctl"], samples["configctl"], strict=True)]
        ),
        "bare_request_to_every_broker_ms": latency(
            [w * 1000 + s for w, s in zip(write_s["bare"], samples["bare"], strict=True)]
        ),
    }


# ------------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------------


def figures(results: dict) -> list[dict]:
    """configctl's figures with the raw limit of this run and Kafka's tool as the target to beat."""
    rows = []
    if "one_change" in results:
        p = results["one_change"]
        rows.append(
            beside_kafka_configs(
                "KRaft: one topic change, configctl alter (process)",
                p["configctl_alter_process"]["median_s"],
                p["bare_interpreter"]["median_s"],
                p["kafka_configs_process"]["median_s"],
            )
        )
    if "bulk" in results:
        p = results["bulk"]
        n = p["topics"]
        measured_all = p["configctl_apply_topics"] == n
        rows.append(
            beside_kafka_configs(
                f"KRaft: {n:,} topic changes, configctl apply -f (process)"
                + ("" if measured_all else f", extrapolated from {p['configctl_apply_topics']:,}"),
                p["configctl_apply_s"] if measured_all else p["configctl_apply_extrapolated_s"],
                p["bare_client_one_request_s"],
                p["kafka_configs_extrapolated_s"],
                changes=n,
            )
        )
    if "propagation" in results:
        p = results["propagation"]
        bare = p["bare_request_to_every_broker_ms"]["p99_ms"]
        rows.append(
            beside_peer(
                f"KRaft: write start to every broker reporting it, p99 of {p['changes']}: configctl write path",
                p["configctl_write_to_every_broker_ms"]["p99_ms"],
                "ms",
                bare,
                f"<= 3x the bare request ({bare:g} ms)",
                3 * bare,
            )
        )
    return rows


def side_by_side(results: dict) -> list[tuple[str, str, str, str, str]]:
    rows: list[tuple[str, str, str, str, str]] = [
        ("", "configctl", "kafka-configs.sh (Kafka 4.4)", "bare Admin API client", "raw limit, same run")
    ]

    if "one_change" in results:
        p = results["one_change"]
        rows.append(
            (
                f"one topic change, min / median / max of {p['configctl_alter_process']['runs']}",
                f"{min_median_max(p['configctl_alter_process'])} (process)",
                f"{min_median_max(p['kafka_configs_process'])} (JVM process)",
                f"{min_median_max(p['bare_client_request'])} (in-process, connected)",
                f"python -c pass {p['bare_interpreter']['median_s']:.3f} s; java -version "
                f"{p['bare_jvm']['median_s']:.3f} s",
            )
        )
    if "bulk" in results:
        p = results["bulk"]
        n = p["topics"]
        k = p["kafka_configs_measured_invocations"]
        rows.append(
            (
                f"{n:,} topic changes",
                (
                    f"{p['configctl_apply_s']:.2f} s, one apply -f"
                    if p["configctl_apply_topics"] == n
                    else f"{p['configctl_apply_extrapolated_s']:g} s EXTRAPOLATED: one apply -f of "
                    f"{p['configctl_apply_topics']:,} took {p['configctl_apply_s']:.2f} s"
                )
                + f" ({p['configctl_apply_per_change_ms']:g} ms a change)",
                f"{p['kafka_configs_extrapolated_s']:g} s EXTRAPOLATED: {n:,} x the median of {k['runs']} "
                f"runs ({k['median_s']:.3f} s a change)",
                f"{p['bare_client_one_request_s']:.3f} s, one request ({p['bare_client_per_change_ms']:g} ms a change)",
                "",
            )
        )
    if "propagation" in results:
        p = results["propagation"]
        rows.append(
            (
                f"write returned -> all {p['brokers']} brokers report it, {p['changes']} changes",
                p50_p99(p["configctl_write_returned_to_every_broker"]),
                "",
                p50_p99(p["bare_request_returned_to_every_broker"]),
                f"DescribeConfigs to each broker every {p['poll_ms']:g} ms",
            )
        )
        rows.append(
            (
                "  write started -> all brokers report it",
                p50_p99(p["configctl_write_to_every_broker_ms"]),
                "",
                p50_p99(p["bare_request_to_every_broker_ms"]),
                "",
            )
        )
        rows.append(
            (
                "  the write itself",
                f"{p50_p99(p['configctl_write_ms'])} (check, request, read-back, history)",
                "",
                p50_p99(p["bare_request_ms"]),
                "",
            )
        )
    return rows


def markdown_section(results: dict, rows: list[tuple[str, ...]]) -> str:
    """The section appended to benchmarks/RESULTS.md: the date, the machine, the table, the setup."""
    setup = results["setup"]
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    lines = [
        "",
        f"## {SECTION} ({day})",
        "",
        f"`benchmarks/kraft_peer.py` (in `make bench`), one run: Kafka {setup['kafka_version']} in KRaft mode, "
        f"{setup['brokers']} brokers and a controller of their own (started in {setup['start_s']:g} s), "
        f"{setup['topics']:,} topics; whole run {results['took_s']:g} s.",
        "",
        f"Machine: {machine()}",
        "",
        "| what | " + " | ".join(rows[0][1:]) + " |",
        "| " + " | ".join(["---"] * len(rows[0])) + " |",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows[1:]]
    lines += [
        "",
        "kafka-configs.sh is a whole JVM process each run, and its start is part of its cost (the bare "
        "JVM beside it); configctl alter is a whole Python process; the bare client is one request on a "
        "connected kafka-python client in this process. ConfigCommand alters one entity per run, so its "
        "many-change figure is the measured per-run median multiplied out, not one run per topic; configctl's "
        "is one apply of fewer topics multiplied out when the row says EXTRAPOLATED.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=2, help="brokers beside the controller (default 2)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each writer for one change")
    parser.add_argument("--topics", type=int, default=1000, help="topics for the bulk part")
    parser.add_argument(
        "--kafka-invocations", type=int, default=10, help="kafka-configs.sh runs measured in bulk"
    )
    parser.add_argument(
        "--apply-topics",
        type=int,
        help="topics in configctl's apply -f, multiplied out to --topics (default: every topic, measured)",
    )
    parser.add_argument("--changes", type=int, default=30, help="changes timed per writer in propagation")
    parser.add_argument("--poll-ms", type=float, default=5.0, help="DescribeConfigs poll interval")
    parser.add_argument("--skip", action="append", default=[], choices=["one_change", "bulk", "propagation"])
    parser.add_argument("--json", type=Path, help="also write every figure here as JSON ('-': stdout)")
    parser.add_argument(
        "--results-md",
        type=Path,
        help=f"append the table as a section '{SECTION}' to this Markdown file (e.g. benchmarks/RESULTS.md)",
    )
    args = parser.parse_args()
    if args.topics < args.kafka_invocations + 1 or min(args.runs, args.changes, args.kafka_invocations) < 1:
        parser.error(
            "--runs, --changes, --kafka-invocations must be at least 1, and --topics larger than the last"
        )

    results: dict[str, Any] = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    begun = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="configctl-kraft-peer-") as tmp, contextlib.ExitStack() as stack:
        ctx = Context(stack, Path(tmp), args.brokers, args.topics)
        results["setup"] = {
            "kafka_version": kafka_version(KAFKA4_HOME),
            "brokers": args.brokers,
            "start_s": round(ctx.start_s, 1),
            "topics": args.topics,
            "create_topics_s": round(ctx.create_topics_s, 1),
        }
        print(json.dumps(results["setup"]), flush=True)
        parts = [
            ("one_change", lambda: one_change(ctx, args.runs)),
            ("propagation", lambda: propagation(ctx, args.changes, args.poll_ms)),
            ("bulk", lambda: bulk(ctx, args.kafka_invocations, args.apply_topics)),
        ]
        for name, run in parts:
            if name in args.skip:
                continue
            started = time.perf_counter()
            print(f"== {name}", flush=True)
            results[name] = run()
            results[name]["part_took_s"] = round(time.perf_counter() - started, 1)
            print(json.dumps(results[name], indent=2), flush=True)
    results["took_s"] = round(time.perf_counter() - begun, 1)
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    table = side_by_side(results)
    print(
        f"\n== configctl beside kafka-configs.sh and a bare client on Kafka 4.4 KRaft (whole run {results['took_s']} s)"
    )
    print(text_table(table))
    rows = figures(results)
    results["targets"] = rows
    print("\n== configctl's figures: measured, raw limit of this run, Kafka's tool as the target")
    print(format_table(rows))
    record_rows(rows)
    write_json(results, args.json)
    if args.results_md is not None:
        with open(args.results_md, "a", encoding="utf-8") as handle:
            handle.write(markdown_section(results, table))
        print(f"(appended section '{SECTION}' to {args.results_md})")


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # so the exit stack stops what we started


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    main()
