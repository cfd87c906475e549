"""Audit throughput: snapshot rows per second in local mode, and how the time grows with rows.

For each size the simulator writes a fleet (fixed broker count, topics scaled to reach the row
count, 5% drift) into a temporary directory; one Spark session (local[*], the job's defaults)
then audits it from snapshots alone and with the desired state, and the result is checked
against the simulator's ground truth. Prints rows/s per size and mode, the peak memory of the
Spark JVM, and the growth exponent b in time ~ rows^b between consecutive sizes (b near 1 is
linear). A warm-up audit on a small fleet comes first so the figures are not the JIT's.

    python benchmarks/audit.py                      # 100k, 1M and 10M rows (about 10 minutes on 2 cores)
    python benchmarks/audit.py --sizes 1M --brokers 50
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from configctl.audit.expected import read_expected_state
from configctl.audit.job import audit
from configctl.audit.simulate import (
    BUILTIN,
    DESIRED_STATE_FILE,
    GROUND_TRUTH_FIELDS,
    GROUND_TRUTH_FILE,
    QUOTA_BASE,
    STATIC_SHARED,
    SimulationSpec,
    simulate,
)
from configctl.audit.spark import build_session


def parse_size(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def spec_for(rows: int, brokers: int, seed: int) -> SimulationSpec:
    """Topics so that brokers × (broker keys + quota keys + 2 per topic) is about ``rows``."""
    fixed = len(set(BUILTIN) | set(STATIC_SHARED)) + 6 + sum(len(c) for c in QUOTA_BASE.values())
    topics = max(1, round((rows / brokers - fixed) / 2))  # 1-3 keys per topic, 2 on average
    return SimulationSpec(brokers=brokers, topics=topics, drift_rate=0.05, seed=seed, malformed=4)


class PeakMemory:
    """Samples the resident memory of this process's children (the Spark JVM) twice a second."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.5):
            total = 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def check(doc: dict[str, Any], truth: dict[str, Any]) -> bool:
    got = {name: doc[name] for name in GROUND_TRUTH_FIELDS}
    want = {name: truth[name] for name in GROUND_TRUTH_FIELDS}
    got["malformed"] = {k: doc["malformed"][k] for k in ("unparseable", "missing_fields")}
    want["malformed"] = truth["malformed"]
    return got == want


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100k,1M,10M", help="comma-separated row counts (k and M allowed)")
    parser.add_argument("--brokers", type=int, default=100, help="brokers in every fleet")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument(
        "--workdir", default=None, help="where to write the fleets (default: a temporary dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated fleets")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="configctl-audit-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    driver_memory = os.environ.get("CONFIGCTL_SPARK_DRIVER_MEMORY", "4g")
    print(f"cores: {os.cpu_count()}, memory: {psutil.virtual_memory().total / 2**30:.1f} GiB, ", end="")
    print(f"master: {args.master}, driver memory: {driver_memory}, fleets in {workdir}")

    results: list[dict[str, Any]] = []
    try:
        started = time.perf_counter()
        spark = build_session(args.master)
        print(f"Spark session started in {time.perf_counter() - started:.1f}s")
        warm = workdir / "warm-up"
        simulate(SimulationSpec(brokers=5, topics=200, drift_rate=0.2, seed=1), warm)
        audit(spark, str(warm))
        audit(spark, str(warm), read_expected_state(warm / DESIRED_STATE_FILE))

        header = f"{'rows':>12} {'mode':>10} {'seconds':>9} {'rows/s':>10} {'JVM peak':>9} {'correct':>8}"
        for rows in sizes:
            spec = spec_for(rows, args.brokers, args.seed)
            directory = workdir / f"fleet-{rows}"
            generated = time.perf_counter()
            written = simulate(spec, directory)
            size_mb = sum(p.stat().st_size for p in directory.glob("broker-*.jsonl")) / 2**20
            print(
                f"\n{written.rows:,} rows ({spec.brokers} brokers × {spec.topics:,} topics, {size_mb:,.0f} MiB) "
                f"generated in {time.perf_counter() - generated:.1f}s"
            )
            print(header)
            truth = json.loads((directory / GROUND_TRUTH_FILE).read_text())
            desired = read_expected_state(directory / DESIRED_STATE_FILE)
            for mode, state, expected in (
                ("snapshots", None, truth["snapshots_only"]),
                ("desired", desired, truth["with_desired_state"]),
            ):
                with PeakMemory() as memory:
                    begin = time.perf_counter()
                    doc = audit(spark, str(directory), state)
                    seconds = time.perf_counter() - begin
                result = {
                    "rows": written.rows,
                    "brokers": spec.brokers,
                    "topics": spec.topics,
                    "mode": mode,
                    "seconds": round(seconds, 2),
                    "rows_per_second": round(written.rows / seconds),
                    "jvm_peak_mib": round(memory.peak / 2**20),
                    "correct": check(doc, expected),
                }
                results.append(result)
                print(
                    f"{written.rows:>12,} {mode:>10} {seconds:>9.1f} {result['rows_per_second']:>10,} "
                    f"{result['jvm_peak_mib']:>7,}Mi {result['correct']!s:>8}"
                )
            if not args.keep:
                shutil.rmtree(directory, ignore_errors=True)
        spark.stop()
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    print("\ngrowth (time ~ rows^b):")
    for mode in ("snapshots", "desired"):
        series = [r for r in results if r["mode"] == mode]
        for a, b in itertools.pairwise(series):
            exponent = math.log(b["seconds"] / a["seconds"]) / math.log(b["rows"] / a["rows"])
            print(f"  {mode:>10}: {a['rows']:,} -> {b['rows']:,} rows: b = {exponent:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
