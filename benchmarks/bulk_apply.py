"""Bulk apply benchmark: ``configctl apply`` of N topic entities against raw kazoo multis.

Both sides write the same entities on the same kind of ZooKeeper in the same run, each into a
fresh chroot of a freshly started server (a small test heap filling up would slow whichever
side runs last): for every topic a config node ``/config/topics/<name>`` and a sequential change
notification, grouped into the same multi transactions (configctl's batch boundaries), sent one
after the other. That raw side does nothing else. configctl also writes a history record per entity
(a new entity's history directory, holding it: three nodes where raw writes two), re-reads every version right before writing (the staleness
check) and keeps two multis in flight. Reported per kind, median of the rounds (best in brackets):

* raw: config + notification (the target is at least half of it), and raw writing every node
  configctl writes, to show what the history nodes cost by themselves;
* configctl check + write (``desired.apply.apply_plan``), the same with history off, and file to ZooKeeper
  (load + validate the YAML, read + plan, check + write); the CLI with process start; a no-op
  re-plan of the same file (and of the same document as JSON).

    python benchmarks/bulk_apply.py                     # starts its own ZooKeeper servers
    python benchmarks/bulk_apply.py --zookeeper 127.0.0.1:2181 --entities 10000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from kazoo.client import KazooClient  # noqa: E402

from benchmarks.results import record  # noqa: E402
from configctl.desired import apply as applying  # noqa: E402
from configctl.desired import document as desired_files  # noqa: E402
from configctl.desired import plan as plans  # noqa: E402
from configctl.desired import syntax  # noqa: E402
from configctl.entities import Entity  # noqa: E402
from configctl.localzk import LocalZooKeeper, port_is_free  # noqa: E402
from configctl.settings import DEFAULT_HISTORY_LIMIT  # noqa: E402
from configctl.store import Change  # noqa: E402
from configctl.zk.configstore import ZooKeeperStore  # noqa: E402
from configctl.zk.multisize import batches  # noqa: E402
from configctl.zkconnection import ConnectionSettings  # noqa: E402
from configctl.znodes import (  # noqa: E402
    CHANGES_PATH,
    NOTIFICATION_PATH_PREFIX,
    HistoryZNodes,
    encode_entity_config,
    encode_notification,
)


def topic_configs(count: int) -> dict[str, dict[str, Any]]:
    """A few keys per topic, as an operator's file would have them (numbers bare, lists as lists)."""
    return {
        f"bench-topic-{i:05d}": {
            "retention.ms": 86_400_000 + i,
            "cleanup.policy": ["compact", "delete"] if i % 2 else ["delete"],
            "max.message.bytes": 1_048_576,
            "min.insync.replicas": 2,
        }
        for i in range(count)
    }


def write_desired_file(path: Path, topics: dict[str, dict[str, Any]]) -> None:
    """The YAML file, and the same document as JSON beside it (``.json``)."""
    path.write_text(syntax.dump({"topics": topics}), encoding="utf-8")
    path.with_suffix(".json").write_text(syntax.json_text({"topics": topics}), encoding="utf-8")


def stored_form(topics: dict[str, dict[str, Any]]) -> list[tuple[Entity, dict[str, str]]]:
    """The exact configs configctl stores for these topics (so raw writes the same bytes)."""
    state = desired_files.parse(syntax.dump({"topics": topics}), source="<bench>")
    return [(entity, dict(config)) for entity, config in state.configs.items()]


@contextmanager
def zookeeper(connect: str | None) -> Iterator[str]:
    if connect:
        yield connect
        return
    with tempfile.TemporaryDirectory(prefix="configctl-bench-zk-") as data_dir:
        port = next(p for p in range(22181, 23181, 7) if port_is_free(p))
        server = LocalZooKeeper(data_dir, port=port)
        server.start(timeout=60)
        try:
            yield server.connect_string
        finally:
            server.stop()


def make_chroot(connect: str, chroot: str) -> str:
    client = KazooClient(hosts=connect, timeout=30)
    client.start(timeout=30)
    try:
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()
    return connect + chroot


def raw_multi(connect: str, configs: list[tuple[Entity, dict[str, str]]], *, history: bool = False) -> float:
    """Raw kazoo: config create + sequential notification per entity, configctl's batch boundaries.

    ``history`` also writes what configctl adds per entity (a history directory holding its first record), to
    show how much of the difference is those extra nodes rather than configctl's own work.
    """
    client = KazooClient(hosts=connect, timeout=30)
    client.start(timeout=30)
    try:
        client.ensure_path(CHANGES_PATH)
        client.ensure_path("/config/topics")
        client.ensure_path(f"{HistoryZNodes.ROOT}/topics")
        changes = [Change(entity, config, -1) for entity, config in configs]
        groups = list(batches(changes))
        started = time.perf_counter()
        for batch in groups:
            transaction = client.transaction()
            for change in batch:
                transaction.create(change.entity.znode, encode_entity_config(change.config))
                transaction.create(
                    NOTIFICATION_PATH_PREFIX, encode_notification(change.entity), sequence=True
                )
                if history:
                    # A new entity's history directory holds its first record (configctl's layout).
                    record = {"entity_path": change.entity.path, "version": 0, "config": change.config}
                    transaction.create(
                        HistoryZNodes.directory(change.entity), json.dumps(record, sort_keys=True).encode()
                    )
            results = transaction.commit()
            failed = [r for r in results if isinstance(r, Exception)]
            if failed:
                raise RuntimeError(f"raw multi failed: {failed[0]!r}")
        return time.perf_counter() - started
    finally:
        client.stop()
        client.close()


def library_apply(
    connect: str, file: Path, *, history_limit: int = DEFAULT_HISTORY_LIMIT
) -> dict[str, float]:
    """configctl end to end through the library: load + validate, read + plan, check + apply."""
    timings: dict[str, float] = {}
    with ZooKeeperStore.connect(
        ConnectionSettings(connect, timeout=30), identity="bench", history_limit=history_limit
    ) as store:
        store.session.ensure_path(CHANGES_PATH)  # same starting point as the raw side
        store.session.ensure_path("/config/topics")
        started = time.perf_counter()
        state = desired_files.load(file)
        loaded = time.perf_counter()
        planned = plans.make_plan(store, state)
        planned_at = time.perf_counter()
        result = applying.apply_plan(store, planned, reason="benchmark")
        done = time.perf_counter()
        if result.entities != len(state):
            raise RuntimeError(f"applied {result.entities} of {len(state)} entities")
        timings.update(
            load=loaded - started,
            plan=planned_at - loaded,
            apply=done - planned_at,
            total=done - started,
            batches=float(result.batches),
        )
        again = time.perf_counter()
        if plans.make_plan(store, desired_files.load(file)).changed:
            raise RuntimeError("a second plan after apply still shows changes")
        timings["noop_replan"] = time.perf_counter() - again
        as_json = file.with_suffix(".json")
        again = time.perf_counter()
        if plans.make_plan(store, desired_files.load(as_json)).changed:
            raise RuntimeError("a second plan after apply (JSON file) still shows changes")
        timings["noop_replan_json"] = time.perf_counter() - again
    return timings


def cli_apply(connect: str, file: Path) -> float:
    """One ``configctl apply -f FILE --yes`` process, default output (a plan this size is summarised)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    )
    env.pop("CONFIGCTL_ZOOKEEPER", None)
    started = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "configctl",
            "apply",
            "-f",
            str(file),
            "--yes",
            "--zookeeper",
            connect,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"configctl apply failed ({completed.returncode}): {completed.stderr.strip()}")
    return elapsed


def count_children(connect: str, path: str) -> int:
    client = KazooClient(hosts=connect, timeout=30)
    client.start(timeout=30)
    try:
        return client.get_children(path, include_data=True)[1].numChildren
    finally:
        client.stop()
        client.close()


def summarize(
    entities: int,
    raw_times: list[float],
    raw_all_times: list[float],
    library_runs: list[dict[str, float]],
    no_history_runs: list[dict[str, float]],
) -> dict[str, Any]:
    """Rates and ratios from the median run of each kind (the best runs are reported beside them).

    On a shared machine single runs vary by a factor of two; the median is the headline because
    one lucky run of either side should not decide the ratio.
    """

    def rate(seconds: float) -> int:
        return round(entities / seconds)

    result: dict[str, Any] = {}
    for name, pick in (("median", statistics.median), ("best", min)):
        raw = pick(raw_times)
        raw_all = pick(raw_all_times)
        phases = {key: pick([run[key] for run in library_runs]) for key in ("load", "plan", "apply", "total")}
        no_history = pick([run["apply"] for run in no_history_runs])
        result[name] = {
            "raw_seconds": round(raw, 3),
            "raw_entities_per_s": rate(raw),
            "raw_with_history_nodes_entities_per_s": rate(raw_all),
            "apply_seconds": {key: round(value, 3) for key, value in phases.items()},
            "apply_entities_per_s": rate(phases["apply"]),
            "apply_ratio": round(raw / phases["apply"], 3),
            "apply_ratio_to_raw_with_history_nodes": round(raw_all / phases["apply"], 3),
            "end_to_end_entities_per_s": rate(phases["total"]),
            "end_to_end_ratio": round(raw / phases["total"], 3),
            "apply_without_history_entities_per_s": rate(no_history),
            "apply_without_history_ratio": round(raw / no_history, 3),
        }
    result["batches"] = int(library_runs[0]["batches"])
    result["noop_replan_seconds"] = round(statistics.median(run["noop_replan"] for run in library_runs), 3)
    result["noop_replan_json_seconds"] = round(
        statistics.median(run["noop_replan_json"] for run in library_runs), 3
    )
    result["all_runs"] = {
        "raw": [round(t, 3) for t in raw_times],
        "raw_with_history_nodes": [round(t, 3) for t in raw_all_times],
        "library_apply": [round(t["apply"], 3) for t in library_runs],
        "library_total": [round(t["total"], 3) for t in library_runs],
        "library_apply_without_history": [round(t["apply"], 3) for t in no_history_runs],
    }
    return result


def print_report(report: dict[str, Any]) -> None:
    median, best = report["median"], report["best"]
    seconds = median["apply_seconds"]
    unit = "entities/s"
    print(
        f"{report['entities']} topic entities, {report['keys_per_entity']} keys each, {report['batches']} "
        f"multi transactions per run; median of {report['rounds']} runs (best run in brackets)"
    )
    rows = [
        ("raw kazoo multi: config + notification", "raw_entities_per_s", None),
        ("raw kazoo multi: + history dir and record", "raw_with_history_nodes_entities_per_s", None),
        ("configctl apply: check + write", "apply_entities_per_s", "apply_ratio"),
        ("configctl apply: file to ZooKeeper", "end_to_end_entities_per_s", "end_to_end_ratio"),
        (
            "configctl apply: check + write, history off",
            "apply_without_history_entities_per_s",
            "apply_without_history_ratio",
        ),
    ]
    for title, key, ratio in rows:
        line = f"{title:<45} {median[key]:>6} {unit}  [{best[key]:>6}]"
        if ratio:
            line += f"  ratio to raw {median[ratio]:.2f} [{best[ratio]:.2f}]"
        print(line)
    if "cli_seconds" in report:
        print(
            f"{'configctl apply: CLI, process start included':<45} {report['cli_entities_per_s']:>6} {unit}"
            f"  ratio to raw {report['cli_ratio']:.2f}"
        )
    print(
        f"target: check + write >= 0.5 of raw; median {median['apply_ratio']:.2f}, best-vs-best "
        f"{best['apply_ratio']:.2f}; against raw writing the same nodes {median['apply_ratio_to_raw_with_history_nodes']:.2f}"
    )
    print(
        f"file to ZooKeeper, median: load+validate {seconds['load']:.2f} s, read+plan {seconds['plan']:.2f} s, "
        f"check+write {seconds['apply']:.2f} s; no-op re-plan after apply {report['noop_replan_seconds']:.2f} s "
        f"(the same document as JSON: {report['noop_replan_json_seconds']:.2f} s)"
    )


def record_targets(report: dict[str, Any]) -> None:
    """Issue 12's figures of this benchmark, for ``make bench``'s closing table."""
    median = report["median"]
    if "cli_seconds" in report:
        record(
            f"apply -f of {report['entities']:,} topics, CLI process included (entities/s)",
            report["cli_entities_per_s"],
            "/s",
            limit=median["raw_entities_per_s"],
            ratio=report["cli_ratio"],
            target=">= 0.5x",
            met=report["cli_ratio"] >= 0.5,
        )
    record(
        f"apply check + write of {report['entities']:,} topics (entities/s)",
        median["apply_entities_per_s"],
        "/s",
        limit=median["raw_entities_per_s"],
        ratio=median["apply_ratio"],
        target=">= 0.5x",
        met=median["apply_ratio"] >= 0.5,
    )
    for name, key in (("YAML", "noop_replan_seconds"), ("JSON", "noop_replan_json_seconds")):
        record(
            f"no-op plan of {report['entities']:,} topics, {name} file",
            report[key],
            "s",
            target="<= 0.5 s",
            met=report[key] <= 0.5,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zookeeper", help="use this server instead of starting one")
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every measurement; the best is kept")
    parser.add_argument("--no-cli", action="store_true", help="skip the single timed CLI run")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)

    topics = topic_configs(args.entities)
    configs = stored_form(topics)
    report: dict[str, Any] = {"entities": args.entities, "keys_per_entity": 4, "rounds": args.rounds}
    raw_times: list[float] = []
    raw_all_times: list[float] = []
    library_runs: list[dict[str, float]] = []
    no_history_runs: list[dict[str, float]] = []
    cli_times: list[float] = []
    measures: list[tuple[str, Callable[[str, Path], None]]] = [
        ("raw", lambda c, f: raw_times.append(raw_multi(c, configs))),
        ("all", lambda c, f: raw_all_times.append(raw_multi(c, configs, history=True))),
        ("lib", lambda c, f: library_runs.append(library_apply(c, f))),
        ("nohist", lambda c, f: no_history_runs.append(library_apply(c, f, history_limit=0))),
    ]
    if not args.no_cli:
        measures.append(("cli", lambda c, f: cli_times.append(cli_apply(c, f))))
    with tempfile.TemporaryDirectory(prefix="configctl-bench-") as work:
        file = Path(work) / "topics.yaml"
        write_desired_file(file, topics)
        report["file_bytes"] = file.stat().st_size
        run = f"/configctl-bench-{uuid.uuid4().hex[:8]}"
        for round_index in range(args.rounds):
            # Each measurement gets a fresh server (unless one is given): a small test heap filling
            # up with hundreds of thousands of nodes would slow whichever side runs last. The order
            # rotates between rounds so no side always goes first.
            shift = round_index % len(measures)
            for name, measure in measures[shift:] + measures[:shift]:
                with zookeeper(args.zookeeper) as connect:
                    # Warm the server (JIT, log preallocation) so no side pays for it.
                    raw_multi(make_chroot(connect, f"{run}/warm-{name}{round_index}"), configs[:2000])
                    chroot = make_chroot(connect, f"{run}/{name}{round_index}")
                    measure(chroot, file)
                    assert count_children(chroot, "/config/topics") == len(configs)
    report.update(summarize(args.entities, raw_times, raw_all_times, library_runs, no_history_runs))
    if cli_times:
        cli_seconds = statistics.median(cli_times)
        report["cli_seconds"] = round(cli_seconds, 3)
        report["cli_entities_per_s"] = round(args.entities / cli_seconds)
        report["cli_ratio"] = round(report["median"]["raw_seconds"] / cli_seconds, 3)
    record_targets(report)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
