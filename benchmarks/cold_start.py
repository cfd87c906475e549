"""CLI cold start: ``configctl --help`` and one ``configctl alter``, whole processes, against a bare interpreter.

Each figure is the median of several runs of a fresh process (``python -m configctl ...``), beside
the raw limit measured in the same run: a bare ``python -c pass`` (the interpreter's own start,
which no import order can beat). The alter writes to a real ZooKeeper this script starts.

    python benchmarks/cold_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.results import record  # noqa: E402
from configctl.localzk import LocalZooKeeper  # noqa: E402
from tests.helpers import free_port_block  # noqa: E402

TARGETS = {"--help": 0.30, "alter": 0.35}


def timed(command: list[str], runs: int, env: dict[str, str]) -> float:
    durations = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        durations.append(time.perf_counter() - started)
    return statistics.median(durations)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalZooKeeper(Path(tmp) / "zk", port=free_port_block(1)) as server,
    ):
        bare = timed([sys.executable, "-c", "pass"], args.runs, env)
        configctl = [sys.executable, "-m", "configctl"]
        help_time = timed([*configctl, "--help"], args.runs, env)
        alter = [*configctl, "--zookeeper", server.connect_string, "alter", "--topic", "t", "--add-config"]
        subprocess.run([*alter, "retention.ms=1"], env=env, check=True, capture_output=True)
        durations = []
        for i in range(args.runs):
            started = time.perf_counter()
            subprocess.run([*alter, f"retention.ms={1000 + i}"], env=env, check=True, capture_output=True)
            durations.append(time.perf_counter() - started)
        alter_time = statistics.median(durations)
    print(f"bare interpreter start (raw limit): {bare * 1000:.0f} ms")
    for name, measured in (("--help", help_time), ("alter", alter_time)):
        target = TARGETS[name]
        print(
            f"configctl {name}: {measured * 1000:.0f} ms median of {args.runs} "
            f"(target <= {target * 1000:.0f} ms; {measured / bare:.1f}x a bare interpreter)"
        )
        record(
            f"CLI cold start, {name}",
            measured,
            "s",
            limit=bare,
            ratio=measured / bare,
            target=f"<= {target:g} s",
            met=measured <= target,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
