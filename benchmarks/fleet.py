"""A fleet in a box: propagation to N embedded listeners on a real 3-node ZooKeeper ensemble.

Real brokers each hold one ZooKeeper session; this 2-core machine cannot run a thousand
interpreters, so worker processes each embed a share of :class:`ConfigListener` instances (the
listener is a library), every one with its own session, as a broker would. Beside them, in the
same worker processes and so under the same CPU contention, one bare kazoo data watch per
session (the raw limit: a watch firing and one read, nothing else).

K changes go through configctl's write path (``writer.alter``), paced; after each, the writer
sets the raw watchers' node. For each change: commit -> applied on *all* listeners (each
listener timestamps the batch after its state node is published), and set -> seen by all raw
sessions. ZooKeeper requests are counted inside the workers (every kazoo request a listener's
session sends, by type): reads per change per listener is the listeners' read requests during
the changes divided by K x N (a multiRead of many nodes is one request, as it is one round trip).
At the end every state node is read back through :func:`configctl.fleet.wait` to check the
fleet agrees with what the timestamps say.

    python benchmarks/fleet.py --brokers 100 [--changes 100] [-o json]

Without ``--brokers`` it is ``make bench``'s short form: N = 20, 100 and 1,000 (at 1,000 only
:data:`CHANGES_AT_1000` changes: the run must fit in a bench), each figure recorded through
:mod:`benchmarks.results`. ``--watch compare`` runs each N twice, with Kafka's one-shot child
watch and with the persistent tree watch (the listener's default), one after the other. ``-o json`` prints exactly the documented document;
``--details FILE`` writes everything measured (request counts by type, ZooKeeper's ``mntr``).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from kazoo.client import KazooClient  # noqa: E402

from benchmarks.results import format_table, record_rows  # noqa: E402
from configctl.localzk.nodeconfig import TICK_TIME_MS  # noqa: E402

RAW_PATH = "/fleet-raw-tick"
PER_PROCESS = 50
"""Listeners per worker process: enough that 1,000 fit in 20 interpreters on 2 cores."""
TICK_MS = 2000
"""ZooKeeper's own default tick for the measured ensemble: with the test servers' 200 ms its quorum
gave up on a follower starved of CPU for 3 s (``syncLimit`` 15 ticks), which a thousand listeners
on two cores did; a production ensemble waits 10-30 s."""
STARTING = 2
"""Worker processes starting their listeners at once (see :func:`start_workers`)."""
CHANGES_AT_1000 = 30
"""Changes in the short form at 1,000 listeners (2.1 s apart: about a minute)."""
READS = {"GetData", "GetChildren", "GetChildren2", "Exists", "GetACL", "_MultiRead", "Sync"}
STATE_WRITES = {"SetData", "Transaction"}
"""The state node and fleet record writes (a Transaction carries both): each goes through the quorum."""


# ----------------------------------------------------------------------------------------------
# shared helpers (benchmarks/soak.py uses them too)
# ----------------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def free_port_block(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports (an ensemble listens on P..P+2)."""
    from configctl.localzk import port_is_free

    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            first = sock.getsockname()[1]
        if first + count <= 65535 and all(port_is_free(first + i) for i in range(count)):
            return first
    raise SystemExit(f"no block of {count} free ports")


@contextmanager
def ensemble(workdir: Path, tick_ms: int = TICK_TIME_MS) -> Iterator[Any]:
    """A real 3-node ZooKeeper ensemble for the run, stopped at the end whatever happens.

    ``tick_ms``: ZooKeeper's tick (default: the test servers')."""
    from configctl.localzk import LocalZooKeeper

    server = LocalZooKeeper(workdir / "zk", port=free_port_block(3), nodes=3, tick_ms=tick_ms)
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def make_chroot(connect: str, name: str) -> str:
    from configctl.zk.configstore import ZooKeeperStore
    from configctl.znodes import CHANGES_PATH

    client = KazooClient(hosts=connect, timeout=30)
    client.start(timeout=60)
    client.ensure_path(f"/{name}")
    client.stop()
    client.close()
    chroot = f"{connect}/{name}"
    with ZooKeeperStore.connect(chroot) as store:
        store.session.ensure_path(CHANGES_PATH)
    return chroot


def mntr(port: int) -> dict[str, str]:
    """ZooKeeper's own counters (the ``mntr`` four-letter word) from the node on ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"mntr")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
    except OSError:
        return {}
    return dict(line.split("\t", 1) for line in data.decode(errors="replace").splitlines() if "\t" in line)


# ----------------------------------------------------------------------------------------------
# the worker process: a share of the fleet, embedded
# ----------------------------------------------------------------------------------------------


def worker_main(connect: str, first: int, count: int, raw_count: int, options: dict[str, Any]) -> None:
    """Child mode: ``count`` listeners (brokers ``first``...) and ``raw_count`` bare watch sessions.

    Prints ``ready``, then ``A <broker> <change> <time>`` after each batch a listener applied and
    published, ``R <session> <value> <time>`` when a raw watch fired and its read returned, and
    ``S <json>`` (request counts) whenever a line ``stats`` arrives on stdin; stops on EOF.
    """
    from configctl.listener import ConfigListener
    from configctl.zk import purge
    from configctl.zk.session import ZkSession
    from configctl.zkconnection import ConnectionSettings

    if options.get("purge") == "all":  # before the lease: every listener purges, as Kafka's brokers do
        purge.LEASE_PATH = None
    out = threading.Lock()

    def emit(line: str) -> None:
        with out:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    counts: Counter[str] = Counter()
    original = KazooClient._call

    def counting_call(self: KazooClient, request: Any, async_object: Any) -> Any:
        counts[f"{getattr(self, '_fleet_owner', 'listener')}:{type(request).__name__}"] += 1
        return original(self, request, async_object)

    KazooClient._call = counting_call  # type: ignore[method-assign]

    if hasattr(ConfigListener, "_state_published"):

        class TimedListener(ConfigListener):
            """Says when its state node says a change (what ``--wait`` sees): when the write returns."""

            def _state_published(self, change: int) -> None:
                emit(f"A {self.broker_id} {change} {time.time():.6f}")

    else:  # an older listener (for before/after runs): timed when its state node write returns

        class TimedListener(ConfigListener):  # type: ignore[no-redef]
            """Says when its state node is published (what ``--wait`` sees)."""

            def _publish(self, **options: Any) -> None:
                super()._publish(**options)
                if not self._publish_pending:
                    emit(f"A {self.broker_id} {self.manager.last_applied_change} {time.time():.6f}")

    timeout = float(options.get("zk_timeout", 30))
    sessions: list[ZkSession] = []
    listeners: list[ConfigListener] = []

    def start_one(broker_id: int) -> ConfigListener:
        session = ZkSession(ConnectionSettings.of(connect, timeout=timeout))
        sessions.append(session)
        listener = TimedListener(
            session,
            broker_id,
            {"broker.id": str(broker_id), "log.retention.hours": "168"},
            recheck_s=float(options.get("recheck_s", 30.0)),
            **({"tree_watch": False} if options.get("watch") == "child" else {}),
            **({"purge_jitter_ms": int(options["purge_jitter_ms"])} if "purge_jitter_ms" in options else {}),
            **(
                {"change_expiration_ms": int(options["change_expiration_ms"])}
                if "change_expiration_ms" in options
                else {}
            ),
        )
        return listener.start(timeout=300)

    with ThreadPoolExecutor(4) as pool:
        listeners = list(pool.map(start_one, range(first, first + count)))

    raws: list[KazooClient] = []
    for index in range(first, first + raw_count):
        client = KazooClient(hosts=connect, timeout=timeout)
        client._fleet_owner = "raw"  # type: ignore[attr-defined]
        client.start(timeout=120)
        client.ensure_path(RAW_PATH)
        _arm_raw(client, index, emit)
        raws.append(client)
    emit("ready")
    for line in sys.stdin:
        if line.strip() == "stats":
            emit("S " + json.dumps(dict(counts)))
        elif line.strip() == "health":
            emit("H " + json.dumps({lst.broker_id: listener_health(lst) for lst in listeners}))
    for listener in listeners:
        listener.stop()
    for session in sessions:
        session.close()
    for client in raws:
        client.stop()
        client.close()


def listener_health(listener: Any) -> dict[str, Any]:
    """What the soak's checker asks of a listener: how far it got, what it holds, whether it is well.

    ``digest`` covers every config it holds except its own ``brokers/<id>`` node (a canary
    writes per-broker overrides), so brokers that agree have equal digests.
    """
    configs = listener.configs()
    configs.pop(f"brokers/{listener.broker_id}", None)
    healthy, _ = listener.health()
    return {
        "last": listener.last_applied_change,
        "digest": hashlib.sha256(json.dumps(configs, sort_keys=True).encode()).hexdigest()[:16],
        "healthy": healthy,
        "stalled": listener.notifications.stalled(listener.stall_after_s),
        "problems": len(listener.problems()),
    }


def _arm_raw(client: KazooClient, index: int, emit: Any) -> None:
    """A bare data watch: fires, re-reads with the watch re-armed, reports the value it read."""

    def fired(event: Any) -> None:
        seen = time.time()

        def report(result: Any) -> None:
            try:
                data, _ = result.get()
            except Exception:
                return
            emit(f"R {index} {data.decode()} {seen:.6f}")

        client.get_async(RAW_PATH, watch=fired).rawlink(report)

    client.get(RAW_PATH, watch=fired)


class Worker:
    """A worker process seen from the parent: its applied and raw timestamps as they arrive."""

    def __init__(
        self,
        connect: str,
        first: int,
        count: int,
        raw_count: int,
        options: dict[str, Any],
        log: Path | None = None,
    ) -> None:
        """``log``: where the listeners' log lines go (default: this process's stderr)."""
        self.brokers = list(range(first, first + count))
        stderr = None if log is None else open(log, "a", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "worker",
                connect,
                str(first),
                str(count),
                str(raw_count),
                json.dumps(options),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=child_env(),
        )
        if stderr is not None:
            stderr.close()  # the child holds its own descriptor
        self.applied: dict[int, tuple[list[int], list[float]]] = {b: ([], []) for b in self.brokers}
        self.raw: dict[str, dict[int, float]] = {}
        self.ready = threading.Event()
        self._stats: list[dict[str, int]] = []
        self.health_answers: list[dict[str, Any]] = []
        self._stats_seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "A":
                broker, number, at = rest.split()
                numbers, times = self.applied[int(broker)]
                if not numbers or int(number) >= numbers[-1]:
                    numbers.append(int(number))
                    times.append(float(at))
            elif kind == "R":
                index, value, at = rest.split()
                self.raw.setdefault(value, {})[int(index)] = float(at)
            elif kind == "H":
                with self._stats_seen:
                    self.health_answers.append(json.loads(rest))
                    self._stats_seen.notify_all()
            elif kind == "S":
                with self._stats_seen:
                    self._stats.append(json.loads(rest))
                    self._stats_seen.notify_all()
            elif kind == "ready":
                self.ready.set()
        self.ready.set()  # ended: whoever waits finds it dead

    def stats(self, timeout: float = 60) -> dict[str, int]:
        assert self.process.stdin is not None
        with self._stats_seen:
            before = len(self._stats)
            self.process.stdin.write("stats\n")
            self.process.stdin.flush()
            if not self._stats_seen.wait_for(lambda: len(self._stats) > before, timeout):
                raise SystemExit("a worker did not answer for its request counts")
            return self._stats[-1]

    def health(self, timeout: float = 30) -> dict[int, dict[str, Any]] | None:
        """Each of its listeners' :func:`listener_health`; None when the process does not answer."""
        if self.process.poll() is not None or self.process.stdin is None:
            return None
        with self._stats_seen:
            before = len(self.health_answers)
            try:
                self.process.stdin.write("health\n")
                self.process.stdin.flush()
            except OSError:
                return None
            if not self._stats_seen.wait_for(lambda: len(self.health_answers) > before, timeout):
                return None
            return {int(k): v for k, v in self.health_answers[-1].items()}

    def applied_at(self, broker: int, number: int) -> float | None:
        numbers, times = self.applied[broker]
        index = bisect.bisect_left(numbers, number)
        return times[index] if index < len(times) else None

    def last_applied(self, broker: int) -> int:
        numbers, _ = self.applied[broker]
        return numbers[-1] if numbers else -1

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_workers(connect: str, brokers: int, per_process: int, options: dict[str, Any]) -> list[Worker]:
    """The worker processes, at most :data:`STARTING` of them starting at once: a thousand
    sessions opening and loading together starved the ensemble on two cores (a follower silent
    past ``syncLimit``, the quorum lost), which measured the stampede, not propagation."""
    processes = max(1, math.ceil(brokers / per_process))
    share = math.ceil(brokers / processes)
    workers: list[Worker] = []
    deadline = time.monotonic() + 120 + brokers * 0.5

    def started(worker: Worker) -> None:
        if not worker.ready.wait(max(1.0, deadline - time.monotonic())) or worker.process.poll() is not None:
            for other in workers:
                other.stop()
            raise SystemExit("a worker process did not start its listeners")

    for first in range(1, brokers + 1, share):
        if len(workers) >= STARTING:
            started(workers[-STARTING])
        count = min(share, brokers + 1 - first)
        workers.append(Worker(connect, first, count, count, options))
    for worker in workers[-STARTING:]:
        started(worker)
    return workers


def total_counts(workers: list[Worker]) -> Counter[str]:
    total: Counter[str] = Counter()
    for worker in workers:
        total.update(worker.stats())
    return total


def cpu_seconds(workers: list[Worker]) -> float:
    """User + system CPU the worker processes used so far (listeners and raw watchers)."""
    import psutil

    return sum(sum(psutil.Process(w.process.pid).cpu_times()[:2]) for w in workers)


def reads(counts: Counter[str], owner: str, kinds: set[str] = READS) -> int:
    return sum(
        n for key, n in counts.items() if key.startswith(owner + ":") and key.split(":", 1)[1] in kinds
    )


# ----------------------------------------------------------------------------------------------
# one measurement
# ----------------------------------------------------------------------------------------------


def measure(brokers: int, changes: int, interval: float, per_process: int, options: dict[str, Any]) -> dict:
    """One run at N = ``brokers``: its own ensemble, workers, changes; the documented figures + details."""
    from configctl import fleet
    from configctl.entities import DEFAULT, Entity, EntityType
    from configctl.writer import alter, prepare_change
    from configctl.zk.configstore import ZooKeeperStore

    with tempfile.TemporaryDirectory(prefix="configctl-fleet-") as tmp, ensemble(Path(tmp), TICK_MS) as zk:
        connect = make_chroot(zk.connect_string, "fleet")
        started = time.monotonic()
        workers = start_workers(connect, brokers, per_process, options)
        startup_s = time.monotonic() - started
        by_broker = {b: w for w in workers for b in w.brokers}
        try:
            time.sleep(2)  # let the start-up's last state writes settle
            ports = [zk.port + i for i in range(3)]
            mntr_before = [mntr(p) for p in ports]
            before = total_counts(workers)
            load_before = os.getloadavg()[0]
            cpu_before = cpu_seconds(workers)
            commits: list[tuple[int, float]] = []
            raw_sets: list[tuple[str, float]] = []
            tick = KazooClient(hosts=connect, timeout=30)
            tick.start(timeout=60)
            with ZooKeeperStore.connect(connect) as store:
                for k in range(changes):
                    begun = time.time()
                    if k % 10 == 9:
                        entity, change = (
                            Entity.of(EntityType.BROKERS, DEFAULT),
                            {"log.cleaner.threads": str(1 + k % 7)},
                        )
                    else:
                        entity, change = (
                            Entity.of(EntityType.TOPICS, f"topic-{k % 50}"),
                            {"retention.ms": str(100_000 + k)},
                        )
                    result = alter(store, entity, prepare_change(entity, change))
                    commits.append((result.committed.change_number, time.time()))
                    tick.set(RAW_PATH, str(k).encode())
                    raw_sets.append((str(k), time.time()))
                    time.sleep(max(0.0, interval - (time.time() - begun)))
                last = commits[-1][0]
                deadline = time.monotonic() + 120
                while any(w.last_applied(b) < last for w in workers for b in w.brokers):
                    if time.monotonic() > deadline:
                        behind = [b for w in workers for b in w.brokers if w.last_applied(b) < last]
                        raise SystemExit(
                            f"{len(behind)} listener(s) never applied change {last}: {behind[:10]}"
                        )
                    time.sleep(0.05)
                while len(workers[0].raw.get(raw_sets[-1][0], {})) < len(workers[0].brokers):
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                after = total_counts(workers)
                cpu_s = cpu_seconds(workers) - cpu_before
                mntr_after = [mntr(p) for p in ports]
                load_after = os.getloadavg()[0]
                waited_started = time.monotonic()
                written = [fleet.Written(entity, last)]
                verdict = fleet.wait(store, written, 60)
                wait_ms = (time.monotonic() - waited_started) * 1000
            tick.stop()
            tick.close()
        finally:
            for worker in workers:
                worker.stop()

    all_ms, raw_ms = [], []
    for number, committed in commits:
        times = [by_broker[b].applied_at(b, number) for b in by_broker]
        if all(t is not None for t in times):
            all_ms.append((max(times) - committed) * 1000)  # type: ignore[type-var]
    for value, at in raw_sets:
        seen = [t for w in workers for t in [w.raw.get(value, {}).get(i) for i in w.brokers] if t is not None]
        if len(seen) == brokers:
            raw_ms.append((max(seen) - at) * 1000)
    delta = after - before
    listener_reads = reads(delta, "listener")
    raw_reads = reads(delta, "raw")
    figures = {
        "brokers": brokers,
        "changes": changes,
        "p50_ms": round(percentile(all_ms, 50), 1),
        "p99_ms": round(percentile(all_ms, 99), 1),
        "raw_p50_ms": round(percentile(raw_ms, 50), 1),
        "raw_p99_ms": round(percentile(raw_ms, 99), 1),
        "zk_reads_per_change_per_listener": round(listener_reads / changes / brokers, 2),
    }
    details = {
        **figures,
        "interval_ms": interval * 1000,
        "processes": len(workers),
        "startup_s": round(startup_s, 1),
        "samples": len(all_ms),
        "raw_samples": len(raw_ms),
        "raw_reads_per_change_per_session": round(raw_reads / changes / brokers, 2),
        "state_writes_per_change_per_listener": round(
            reads(delta, "listener", STATE_WRITES) / changes / brokers, 3
        ),
        "listener_requests_per_change_per_listener": {
            key.split(":", 1)[1]: round(n / changes / brokers, 3)
            for key, n in sorted(delta.items())
            if key.startswith("listener:") and n
        },
        "worker_cpu_ms_per_change_per_listener": round(cpu_s * 1000 / changes / brokers, 2),
        "wait_all_applied": verdict.all_applied,
        "wait_ms": round(wait_ms, 1),
        "zk_packets_received": sum(
            int(a.get("zk_packets_received", 0)) - int(b.get("zk_packets_received", 0))
            for a, b in zip(mntr_after, mntr_before, strict=True)
        ),
        "zk_watch_count": [int(m.get("zk_watch_count", 0)) for m in mntr_after],
        "load_average": [round(load_before, 2), round(load_after, 2)],
    }
    return details


def contract(details: dict) -> dict:
    keys = (
        "brokers",
        "changes",
        "p50_ms",
        "p99_ms",
        "raw_p50_ms",
        "raw_p99_ms",
        "zk_reads_per_change_per_listener",
    )
    return {key: details[key] for key in keys}


def rows(details: dict) -> list[dict]:
    n = details["brokers"]
    label = " (Kafka's child watch)" if details.get("watch") == "child" else ""
    ratio = details["p99_ms"] / details["raw_p99_ms"] if details["raw_p99_ms"] else None
    reads_per = details["zk_reads_per_change_per_listener"]
    raw_reads = details["raw_reads_per_change_per_session"]
    p99 = {"measured": details["p99_ms"], "unit": "ms", "limit": details["raw_p99_ms"], "ratio": ratio}
    table = [
        {
            "figure": f"fleet: commit -> applied on all {n} (p99){label}",
            **p99,
            "target": "<= 1.5x",
            "met": ratio is not None and ratio <= 1.5,
        },
        {
            "figure": f"fleet: ZooKeeper reads per change per listener (N={n}){label}",
            "measured": reads_per,
            "unit": "reads",
            "limit": raw_reads,
            "ratio": reads_per / raw_reads if raw_reads else None,
            "target": "<= 1.5x (flat in N)",
            "met": bool(raw_reads) and reads_per <= 1.5 * raw_reads,
        },
    ]
    if n >= 1000:
        table.append(
            {
                "figure": f"fleet: commit -> applied on all {n} (p99), absolute{label}",
                **p99,
                "target": "<= 1000 ms",
                "met": details["p99_ms"] <= 1000,
            }
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, help="listeners (default: the short form, 20, 100 and 1,000)")
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument(
        "--interval-ms",
        type=float,
        help="time between changes (default: 100 ms + 2 ms per listener, a pace this 2-core box sustains)",
    )
    parser.add_argument("--per-process", type=int, default=PER_PROCESS)
    parser.add_argument("--zk-timeout", type=float, default=30.0, help="each listener's session timeout")
    parser.add_argument("--recheck-s", type=float, default=30.0)
    parser.add_argument(
        "--change-expiration-ms", type=int, help="notifications expire after this (default: 15 minutes)"
    )
    parser.add_argument(
        "--purge",
        choices=["lease", "all", "compare"],
        default="lease",
        help="lease: one purger at a time (configctl's default); all: every listener purges (Kafka's "
        "way); compare: both, one after the other, with a 2 s expiry so purges happen during the run",
    )
    parser.add_argument(
        "--watch",
        choices=["tree", "child", "compare"],
        default="tree",
        help="tree: one persistent recursive watch on /config (the default); child: Kafka's one-shot "
        "child watch on /config/changes; compare: both, one after the other",
    )
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.add_argument("--details", type=Path, help="also write everything measured here (JSON)")
    args = parser.parse_args()
    options: dict[str, Any] = {
        "zk_timeout": args.zk_timeout,
        "recheck_s": args.recheck_s,
    }
    if args.change_expiration_ms:
        options["change_expiration_ms"] = args.change_expiration_ms
    modes = ["all", "lease"] if args.purge == "compare" else [args.purge]
    watches = ["child", "tree"] if args.watch == "compare" else [args.watch]
    if args.purge == "compare":
        options.setdefault("change_expiration_ms", 2000)
        options["purge_jitter_ms"] = 1000
    sizes = [args.brokers] if args.brokers else [20, 100, 1000]
    results = []
    failed: list[int] = []
    for n in sizes:
        interval = (args.interval_ms if args.interval_ms is not None else 100 + 2 * n) / 1000
        changes = args.changes if args.brokers or n < 1000 else min(args.changes, CHANGES_AT_1000)
        for mode in modes:
            for watch in watches:
                if args.output == "text":
                    print(
                        f"N={n}, purge={mode}, watch={watch}: {changes} changes, one every "
                        f"{interval * 1000:.0f} ms ...",
                        flush=True,
                    )
                run = {**options, "purge": mode, "watch": watch}
                try:
                    details = measure(n, changes, interval, args.per_process, run)
                except Exception as exc:  # one size failing must not lose the others' figures
                    if args.brokers:
                        raise
                    print(f"N={n}: the run failed: {type(exc).__name__}: {exc}", flush=True)
                    failed.append(n)
                    continue
                results.append({**details, "purge": mode, "watch": watch})
    if args.details:
        args.details.write_text(json.dumps(results if len(results) > 1 else results[0], indent=2) + "\n")
    if args.output == "json":
        out = [contract(r) for r in results]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return
    for details in results:
        print(json.dumps(details, indent=2))
    table = [row for details in results for row in rows(details)]
    table += [
        {
            "figure": f"fleet: commit -> applied on all {n} (p99)",
            "measured": float("nan"),
            "unit": "ms",
            "limit": None,
            "ratio": None,
            "target": "the run completes",
            "met": False,
        }
        for n in failed
    ]
    print(format_table(table))
    record_rows(table)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker_main(
            sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[6])
        )
    else:
        main()
