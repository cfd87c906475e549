"""The soak: a fleet in a box under writes and faults for a long time, with an invariant checker.

N listeners embedded in worker processes (:mod:`benchmarks.fleet`, ``--per-process`` each, every
listener its own ZooKeeper session) on a real 3-node ensemble. A writer thread alters topics,
broker defaults and quotas through configctl's write path, and now and then runs the CLI: an
``apply`` of a desired-state file, a canary on two brokers, an ``apply --waves``. A second writer
makes bursts of writes to one topic a few milliseconds apart (the interleaving that once left a
listener on an old value, issue 36 #1). A fault thread
injects, at random: a ZooKeeper leader or follower killed and restarted, a worker process
SIGKILLed (and started again) or SIGSTOPped for a moment, a session expired (a worker stopped for
longer than its session timeout), a CLI apply killed mid-way (then run again to completion), READ
on ``/config/changes`` revoked for a while and restored, and rarely ``/config/changes`` deleted and
created again.

The checker runs throughout (every listener's health, each worker's RSS) and at the end, once the
last fault is over:

* **lost**: a write the writer saw committed (or a CLI run that exited 0) whose value ZooKeeper
  no longer holds;
* **unapplied**: a live broker that has not applied the newest change within the bound and lists
  no problem for it;
* **converged**: every live broker holds the same configs as a listener started fresh from
  ZooKeeper (the truth as a broker reads it) within ``--bound`` seconds of the last fault;
* **stalled**: a listener that said it was stalled (work waiting undone past its threshold) at the
  end or for more than ``--bound`` seconds during the run;
* **RSS**: each worker's resident memory at the end within 10% of where it stabilised (its
  sample at a third of the run, or a third of the way from its restart).

Prints the summary and writes ``build/soak.json``; exits 1 on any violation.

    python benchmarks/soak.py --seconds 600 --brokers 100
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
from kazoo.client import KazooClient
from kazoo.exceptions import NotEmptyError
from kazoo.security import make_acl

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.fleet import Worker, child_env, ensemble, make_chroot  # noqa: E402
from configctl.entities import DEFAULT, Entity, EntityType  # noqa: E402
from configctl.listener import ConfigListener  # noqa: E402
from configctl.writer import alter, prepare_change  # noqa: E402
from configctl.zk.configstore import ZooKeeperStore  # noqa: E402
from configctl.znodes import CHANGES_PATH  # noqa: E402

SESSION_TIMEOUT_S = 6.0
RSS_DRIFT_MAX_PCT = 10.0


class Fleet:
    """The worker processes, restartable one at a time by the fault thread."""

    def __init__(
        self, connect: str, brokers: int, per_process: int, options: dict[str, Any], logs: Path
    ) -> None:
        self.connect, self.options, self.logs = connect, options, logs
        self.shares = [
            (first, min(per_process, brokers + 1 - first)) for first in range(1, brokers + 1, per_process)
        ]
        self.workers: list[Worker | None] = [None] * len(self.shares)
        self.started_at: list[float] = [0.0] * len(self.shares)
        self.stopped: set[int] = set()  # SIGSTOPped now
        self.lock = threading.Lock()
        for index in range(len(self.shares)):
            self.start(index)

    def start(self, index: int) -> None:
        first, count = self.shares[index]
        worker = Worker(self.connect, first, count, 0, self.options, log=self.logs / f"worker-{index}.log")
        if not worker.ready.wait(120) or worker.process.poll() is not None:
            raise RuntimeError(f"worker {index} (brokers {first}..{first + count - 1}) did not start")
        with self.lock:
            self.workers[index] = worker
            self.started_at[index] = time.monotonic()

    def kill(self, index: int) -> None:
        with self.lock:
            worker, self.workers[index] = self.workers[index], None
        if worker is not None:
            worker.process.kill()
            worker.process.wait()

    def signal(self, index: int, sig: int) -> None:
        worker = self.workers[index]
        if worker is not None and worker.process.poll() is None:
            os.kill(worker.process.pid, sig)
            (self.stopped.add if sig == signal.SIGSTOP else self.stopped.discard)(index)

    def live(self) -> list[tuple[int, Worker]]:
        with self.lock:
            return [(i, w) for i, w in enumerate(self.workers) if w is not None and i not in self.stopped]

    def stop(self) -> None:
        for index in list(self.stopped):
            self.signal(index, signal.SIGCONT)
        for worker in self.workers:
            if worker is not None:
                worker.stop()


class Ledger:
    """What was committed: the value each (entity, key) must hold, and what is uncertain."""

    def __init__(self) -> None:
        self.expected: dict[tuple[str, str], str | None] = {}
        self.uncertain: set[tuple[str, str]] = set()
        self.lock = threading.Lock()
        self.writes = 0

    def committed(self, path: str, config: dict[str, str | None]) -> None:
        with self.lock:
            self.writes += 1
            for key, value in config.items():
                self.expected[(path, key)] = value
                self.uncertain.discard((path, key))

    def unknown(self, path: str, keys: list[str]) -> None:
        """A write that failed in a way that may or may not have committed (a connection lost)."""
        with self.lock:
            self.uncertain.update((path, key) for key in keys)


def cli(connect: str, *args: str, timeout: float = 120) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", connect, "--zk-timeout", "30", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def desired_file(work: Path, name: str, topics: list[str], value: str) -> Path:
    path = work / f"{name}.yaml"
    lines = ["topics:"] + [f"  {t}:\n    retention.ms: '{value}'" for t in topics]
    path.write_text("\n".join(lines) + "\n")
    return path


class Soak:
    def __init__(self, args: argparse.Namespace, connect: str, zk: Any, work: Path) -> None:
        self.args, self.connect, self.zk, self.work = args, connect, zk, work
        self.ledger = Ledger()
        self.faults: Counter[str] = Counter()
        self.violations: list[str] = []
        self.stop_writing = threading.Event()
        self.stop_faults = threading.Event()
        self.last_fault_end = time.monotonic()
        self.fault_lock = threading.Lock()  # the writer's CLI runs and faults on /config/changes
        self.stalled_since: dict[int, float] = {}
        self.stalled: set[int] = set()
        self.rss: dict[int, list[tuple[float, float]]] = {}
        self.outcomes: Counter[str] = Counter()  # the writer's CLI runs, by what they ended with
        self.recovery_ms: list[float] = []  # after each fault: until every live broker caught up
        self.bursts = 0  # writes the burst writer made
        self.fleet = Fleet(
            connect,
            args.brokers,
            args.per_process,
            {"zk_timeout": SESSION_TIMEOUT_S, "recheck_s": 5.0, "change_expiration_ms": 60_000},
            args.logs,
        )

    # ------------------------------------------------------------------------------ writers

    def writer(self) -> None:
        rng = random.Random(1)
        k = 0
        with ZooKeeperStore.connect(self.connect) as store:
            while not self.stop_writing.is_set():
                k += 1
                roll = rng.random()
                if roll < 0.02:
                    self.cli_apply(k)
                elif roll < 0.03:
                    self.canary(k)
                elif roll < 0.04:
                    self.waves(k)
                else:
                    self.alter_one(store, k, rng)
                time.sleep(rng.uniform(0.05, 0.3))

    def burst_writer(self) -> None:
        """Bursts of 3-8 writes to one topic, 1-5 ms apart, beside the other writer's: a listener
        that took a read made before a notification for that notification's would keep an old
        value (converged fails) or credit a change with another's."""
        rng = random.Random(3)
        k = 0
        with ZooKeeperStore.connect(self.connect) as store:
            while not self.stop_writing.is_set():
                entity = Entity.of(EntityType.TOPICS, f"burst{rng.randrange(4)}")
                for _ in range(rng.randint(3, 8)):
                    k += 1
                    self.alter(store, entity, {"retention.ms": str(90_000_000 + k)})
                    self.bursts += 1
                    time.sleep(rng.uniform(0.001, 0.005))
                time.sleep(rng.uniform(0.1, 0.5))

    def alter_one(self, store: ZooKeeperStore, k: int, rng: random.Random) -> None:
        if k % 10 == 0:
            entity, config = (
                Entity.of(EntityType.USERS, f"User:u{k % 7}"),
                {"producer_byte_rate": str(1000 + k)},
            )
        else:
            entity, config = (
                Entity.of(EntityType.TOPICS, f"t{rng.randrange(40)}"),
                {"retention.ms": str(60_000 + k)},
            )
        self.alter(store, entity, config)

    def alter(self, store: ZooKeeperStore, entity: Entity, config: dict[str, str]) -> None:
        """One write through configctl's write path, in the ledger (unknown when it failed)."""
        try:
            result = alter(store, entity, prepare_change(entity, config))
        except Exception:
            self.ledger.unknown(entity.path, list(config))
            time.sleep(0.5)
            return
        if result.committed is not None:
            self.ledger.committed(entity.path, dict(config))

    def cli_apply(self, k: int) -> None:
        """An apply of 30 topics; with the fault, killed mid-way and then run again to completion."""
        topics = [f"a{k % 3}-{i}" for i in range(30)]
        path = desired_file(self.work, f"apply-{k}", topics, str(3_600_000 + k))
        args = ("apply", "-f", str(path), "--yes")
        for topic in topics:
            self.ledger.unknown(f"topics/{topic}", ["retention.ms"])
        if random.random() < 0.5:
            process = cli(self.connect, *args)
            time.sleep(random.uniform(0.1, 1.0))
            process.kill()
            process.wait()
            self.faults["cli_killed_mid_apply"] += 1
        for _attempt in range(5):
            process = cli(self.connect, *args)
            _, err = process.communicate(timeout=180)
            if process.returncode == 0:
                self.outcomes["apply completed"] += 1
                for topic in topics:
                    self.ledger.committed(f"topics/{topic}", {"retention.ms": str(3_600_000 + k)})
                return
            time.sleep(2)  # a fault in the way (ZooKeeper failing over): run it again
        self.violations.append(f"apply of {path.name} never succeeded: {err.strip()[-300:]}")

    def canary(self, k: int) -> None:
        """A canary of a broker default on two live brokers: fully promoted or fully undone."""
        live = [b for _, w in self.fleet.live() for b in w.brokers]
        if len(live) < 2:
            return
        ids = ",".join(str(b) for b in random.sample(live, 2))
        value = str(1 + k % 5)
        path = f"brokers/{DEFAULT}"
        self.ledger.unknown(path, ["log.cleaner.threads"])
        process = cli(self.connect, "alter", "--broker-defaults", "--add-config", f"log.cleaner.threads={value}",
                      "--canary", ids, "--wait", "30")  # fmt: skip
        process.communicate(timeout=180)
        self.outcomes[f"canary exit {process.returncode}"] += 1
        if process.returncode == 0:
            self.ledger.committed(path, {"log.cleaner.threads": value})
        with ZooKeeperStore.connect(self.connect) as store:  # promoted or undone: never half-way
            for broker in ids.split(","):
                left = store.read(Entity.of(EntityType.BROKERS, broker)).config.get("log.cleaner.threads")
                if left is not None:
                    self.violations.append(
                        f"canary {value} on {ids} (exit {process.returncode}) left broker {broker} with "
                        f"its override log.cleaner.threads={left}"
                    )

    def waves(self, k: int) -> None:
        """An ``apply --waves 3``; sometimes killed mid-rollout. A rollout left open (killed, or
        stopped by a fault: exit 12) is finished with ``rollout resume``, else ``rollout abort``:
        either way its entities end fully after or fully before it."""
        topics = [f"w{i}" for i in range(12)]
        value = str(7_200_000 + k)
        path = desired_file(self.work, f"waves-{k}", topics, value)
        keys = [(f"topics/{topic}", "retention.ms") for topic in topics]
        with self.ledger.lock:
            before = {key: (self.ledger.expected.get(key), key in self.ledger.uncertain) for key in keys}
        for entity_path, key in keys:
            self.ledger.unknown(entity_path, [key])
        process = cli(self.connect, "apply", "-f", str(path), "--yes", "--waves", "3")
        if random.random() < 0.5:
            try:
                process.wait(timeout=random.uniform(0.3, 2))
            except subprocess.TimeoutExpired:
                process.kill()
        process.communicate(timeout=300)
        if process.returncode == -signal.SIGKILL:
            self.faults["cli_killed_mid_rollout"] += 1
        self.outcomes[f"waves exit {process.returncode}"] += 1
        outcome = "done" if process.returncode == 0 else "untouched" if process.returncode == 5 else None
        if outcome is None:
            outcome = self.finish_rollouts()
        if outcome == "done":
            for topic in topics:
                self.ledger.committed(f"topics/{topic}", {"retention.ms": value})
        elif outcome == "untouched":  # refused before writing, or aborted: what was expected stands
            with self.ledger.lock:
                for key, (expected, uncertain) in before.items():
                    if not uncertain and key in self.ledger.expected:
                        self.ledger.expected[key] = expected
                        self.ledger.uncertain.discard(key)

    def open_rollouts(self) -> list[tuple[str, bool]] | None:
        """Every open rollout as ``(id, running)``; None when the list cannot be read."""
        out = subprocess.run(
            [sys.executable, "-m", "configctl", "--zookeeper", self.connect, "-o", "json", "rollout", "list"],
            capture_output=True, text=True, env=child_env(), timeout=120,
        )  # fmt: skip
        if out.returncode != 0:
            return None
        return [(r["id"], bool(r.get("running"))) for r in json.loads(out.stdout) if r.get("open")]

    def finish_rollouts(self) -> str | None:
        """Resume every open rollout (twice at most), abort what still fails. Returns "done" when
        the last one finished resumed, "untouched" when aborted, None when none was finished here
        or one is left open. A rollout whose process still holds it (its session not yet expired)
        is waited for."""
        result: str | None = None
        for _ in range(12):
            listed = self.open_rollouts()
            if listed is not None and not listed:
                return result
            for rollout, running in listed or []:
                if running:
                    continue
                for verb, outcome in (("resume", "done"), ("resume", "done"), ("abort", "untouched")):
                    past = {"resume": "resumed", "abort": "aborted"}[verb]
                    process = cli(self.connect, "rollout", verb, rollout)
                    process.communicate(timeout=300)
                    if process.returncode == 0:
                        self.outcomes[f"rollout {past}"] += 1
                        result = outcome
                        break
            time.sleep(5)
        return None

    # ------------------------------------------------------------------------------ faults

    def injector(self) -> None:
        rng = random.Random(2)
        kinds = [
            ("zk_leader_kill", 2), ("zk_follower_kill", 2), ("listener_sigkill", 3), ("listener_sigstop", 3),
            ("session_expiry", 2), ("changes_read_revoked", 2), ("changes_recreated", 0.3),
        ]  # fmt: skip
        first = [k for k, _ in kinds]
        rng.shuffle(first)  # every kind once, early, so that even a short run sees each of them
        while not self.stop_faults.wait(rng.uniform(4, 10)):
            kind = first.pop() if first else rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
            try:
                getattr(self, kind)(rng)
                self.faults[kind] += 1
            except Exception as exc:  # a fault that could not be injected is a finding too
                self.violations.append(f"fault {kind} failed: {type(exc).__name__}: {exc}")
            self.last_fault_end = time.monotonic()
            if kind != "changes_recreated":  # numbers restart there: "caught up" has no meaning for a moment
                self.recovered(self.last_fault_end)

    def recovered(self, since: float) -> None:
        """Time until every live broker applied every change committed before the fault ended."""
        try:
            with ZooKeeperStore.connect(self.connect) as store:
                latest = store.latest_change_number()
        except Exception:
            return
        if latest is None:
            return
        while time.monotonic() - since < self.args.bound and not self.stop_faults.is_set():
            lasts = [
                a.get("last", -1)
                for _, worker in self.fleet.live()
                for a in (worker.health(timeout=10) or {0: {"last": -1}}).values()
            ]
            if lasts and min(lasts) >= latest:
                self.recovery_ms.append((time.monotonic() - since) * 1000)
                return
            time.sleep(0.25)

    def _zk_node(self, role: str) -> int | None:
        for node in self.zk.status().nodes:
            if node.alive and node.mode == role:
                return node.id
        return None

    def zk_leader_kill(self, rng: random.Random) -> None:
        self._zk_kill(rng, "leader")

    def zk_follower_kill(self, rng: random.Random) -> None:
        self._zk_kill(rng, "follower")

    def _zk_kill(self, rng: random.Random, role: str) -> None:
        node = self._zk_node(role)
        if node is None:
            raise RuntimeError(f"no {role} to kill")
        self.zk.kill_node(node)
        time.sleep(rng.uniform(1, 5))
        self.zk.start_node(node, timeout=60)

    def listener_sigkill(self, rng: random.Random) -> None:
        index = rng.randrange(len(self.fleet.shares))
        self.fleet.kill(index)
        time.sleep(rng.uniform(0.5, 3))
        self.fleet.start(index)

    def listener_sigstop(self, rng: random.Random) -> None:
        self._freeze(rng.uniform(1, SESSION_TIMEOUT_S / 2), rng)

    def session_expiry(self, rng: random.Random) -> None:
        self._freeze(SESSION_TIMEOUT_S + rng.uniform(2, 4), rng)

    def _freeze(self, seconds: float, rng: random.Random) -> None:
        live = self.fleet.live()
        if not live:
            return
        index, _ = rng.choice(live)
        self.fleet.signal(index, signal.SIGSTOP)
        time.sleep(seconds)
        self.fleet.signal(index, signal.SIGCONT)

    def changes_read_revoked(self, rng: random.Random) -> None:
        admin = self._admin()
        try:
            acls, _ = admin.get_acls(CHANGES_PATH)
            admin.set_acls(
                CHANGES_PATH, [make_acl("world", "anyone", write=True, create=True, delete=True, admin=True)]
            )
            time.sleep(rng.uniform(2, 6))
            admin.set_acls(CHANGES_PATH, acls)
        finally:
            admin.stop()
            admin.close()

    def changes_recreated(self, rng: random.Random) -> None:
        with self.fault_lock:
            admin = self._admin()
            try:
                for attempt in range(10):  # a writer may add a notification between the deletes
                    try:
                        admin.delete(CHANGES_PATH, recursive=True)
                        break
                    except NotEmptyError:
                        if attempt == 9:
                            raise
                admin.ensure_path(CHANGES_PATH)
            finally:
                admin.stop()
                admin.close()

    def _admin(self) -> KazooClient:
        client = KazooClient(hosts=self.connect, timeout=30)
        client.start(timeout=60)
        return client

    # ------------------------------------------------------------------------------ the checker

    def sample(self) -> None:
        """Health and RSS of every live worker: stalls are timed, RSS recorded."""
        now = time.monotonic()
        for index, worker in self.fleet.live():
            try:
                rss = psutil.Process(worker.process.pid).memory_info().rss / 2**20
            except psutil.Error:
                continue
            if (
                self.fleet.started_at[index]
                and self.rss.get(index, [(0, 0)])[0][0] < self.fleet.started_at[index]
            ):
                self.rss[index] = []  # restarted: a new process, a new baseline
            self.rss.setdefault(index, []).append((now, rss))
            answers = worker.health(timeout=10) or {}
            for broker, health in answers.items():
                if health["stalled"]:
                    since = self.stalled_since.setdefault(broker, now)
                    if now - since > self.args.bound and now - self.last_fault_end > self.args.bound:
                        self.stalled.add(broker)
                else:
                    self.stalled_since.pop(broker, None)

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        threads = [
            threading.Thread(target=self.injector, daemon=True),
            threading.Thread(target=self.writer, daemon=True),
            threading.Thread(target=self.burst_writer, daemon=True),
        ]
        for thread in threads:
            thread.start()
        while time.monotonic() - started < self.args.seconds:
            self.sample()
            time.sleep(5)
        self.stop_faults.set()
        threads[0].join(300)
        self.stop_writing.set()
        for writer in threads[1:]:
            writer.join(300)
        self.finish_rollouts()
        left = self.open_rollouts()
        if left or left is None:
            self.violations.append(f"rollout(s) left open, neither resumed nor aborted: {left}")
        for index in range(len(self.fleet.shares)):  # every broker live again for the final check
            if index in self.fleet.stopped:
                self.fleet.signal(index, signal.SIGCONT)
            if self.fleet.workers[index] is None:
                self.fleet.start(index)
        self.zk.start_missing_nodes(timeout=60)
        converged_ms, verdict = self.converge(self.last_fault_end)
        self.sample()
        return self.summary(time.monotonic() - started, converged_ms, verdict)

    def truth(self) -> tuple[int, str]:
        """A listener started fresh from ZooKeeper: the newest change and the configs a broker holds."""
        from benchmarks.fleet import listener_health

        probe = ConfigListener(self.connect, 0, {"broker.id": "0"}, zk_timeout=30).start(timeout=120)
        try:
            health = listener_health(probe)
            return health["last"], health["digest"]
        finally:
            probe.stop()

    def converge(self, since: float) -> tuple[float | None, dict[int, dict[str, Any]]]:
        deadline = since + self.args.bound
        answers: dict[int, dict[str, Any]] = {}
        while True:
            last, digest = self.truth()
            answers = {}
            for _, worker in self.fleet.live():
                answers.update(worker.health(timeout=30) or {b: {"last": None} for b in worker.brokers})
            if all(a.get("last") == last and a.get("digest") == digest for a in answers.values()):
                return (time.monotonic() - since) * 1000, answers
            if time.monotonic() > deadline:
                self.truth_seen = (last, digest)
                return None, answers
            time.sleep(1)

    def lost(self) -> list[str]:
        with ZooKeeperStore.connect(self.connect) as store:
            lost = []
            for (path, key), value in sorted(self.ledger.expected.items()):
                if (path, key) in self.ledger.uncertain:
                    continue
                stored = store.read(Entity.from_path(path)).config.get(key)
                if stored != value:
                    lost.append(f"{path} {key}: committed {value!r}, ZooKeeper holds {stored!r}")
            return lost

    def summary(self, seconds: float, converged_ms: float | None, answers: dict[int, dict[str, Any]]) -> dict:
        lost = self.lost()
        self.violations += [f"lost: {line}" for line in lost[:20]]
        truth_last = getattr(self, "truth_seen", (None, None))[0]
        unapplied = [b for b, a in answers.items() if a.get("last") != truth_last and not a.get("problems")]
        if converged_ms is None:
            behind = sorted(b for b, a in answers.items() if a.get("last") != truth_last)
            self.violations.append(
                f"not converged within {self.args.bound:g} s of the last fault: {len(behind)} broker(s) "
                f"behind or different (e.g. {behind[:10]})"
            )
        else:
            unapplied = []
        still = {b for b, a in answers.items() if a.get("stalled")}
        stalled = sorted(self.stalled | still)
        if stalled:
            self.violations.append(f"stalled listener(s): {stalled[:20]}")
        drifts = []
        for samples in self.rss.values():
            if len(samples) < 4:
                continue
            base = samples[len(samples) // 3][1]
            drifts.append((samples[-1][1] - base) / base * 100)
        drift = max(drifts, default=0.0)
        if drift > RSS_DRIFT_MAX_PCT:
            self.violations.append(f"a listener process's RSS grew {drift:.1f}% after it stabilised")
        return {
            "brokers": self.args.brokers,
            "seconds": round(seconds),
            "writes": self.ledger.writes,
            "burst_writes": self.bursts,
            "faults": dict(sorted(self.faults.items())),
            "lost": len(lost),
            "unapplied": len(unapplied),
            "stalled": len(stalled),
            "converged_after_last_fault_ms": None if converged_ms is None else round(converged_ms),
            "rss_drift_pct_max": round(drift, 1),
            "violations": self.violations,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 600)))
    parser.add_argument("--brokers", type=int, default=int(os.environ.get("SOAK_BROKERS", 100)))
    parser.add_argument("--per-process", type=int, default=10, help="listeners per worker process")
    parser.add_argument("--bound", type=float, default=60.0, help="seconds to converge after the last fault")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "soak.json")
    parser.add_argument(
        "--logs", type=Path, default=REPO_ROOT / "build" / "soak-logs", help="the listeners' logs"
    )
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="configctl-soak-") as tmp, ensemble(Path(tmp)) as zk:
        connect = make_chroot(zk.connect_string, "soak")
        print(f"soak: {args.brokers} listeners for {args.seconds:g} s on {zk.connect_string} ...", flush=True)
        soak = Soak(args, connect, zk, Path(tmp))
        try:
            result = soak.run()
        finally:
            soak.fleet.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    ordered = sorted(soak.recovery_ms)
    if ordered:
        print(
            f"caught up after a fault: p50 {ordered[len(ordered) // 2]:.0f} ms, "
            f"p99 {ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]:.0f} ms "
            f"({len(ordered)} faults measured)"
        )
    print("writer's CLI runs:", dict(sorted(soak.outcomes.items())))
    print(json.dumps(result, indent=2))
    print(f"{'FAILED' if result['violations'] else 'passed'}: written to {args.out}")
    return 1 if result["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
