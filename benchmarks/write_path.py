"""Write-path throughput: configctl alters beside raw kazoo writes on the same server, same run.

Prints alters/s through the library (read, validate, one multi with config + notification +
history) and through the CLI process, the raw figure for kazoo doing the same node writes
(set_data + sequential create in one multi, no read, no validation), their ratio, and the
CLI's cold-start time. Starts its own ZooKeeper unless --zookeeper is given.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from configctl import writer
from configctl.entities import Entity
from configctl.localzk import LocalZooKeeper
from configctl.zk.configstore import ZooKeeperStore


def raw_kazoo(connect: str, count: int) -> float:
    client = KazooClient(hosts=connect)
    client.start()
    client.ensure_path("/config/topics")
    client.ensure_path("/config/changes")
    client.create("/config/topics/raw", b'{"version":1,"config":{}}')
    started = time.perf_counter()
    for n in range(count):
        tx = client.transaction()
        tx.set_data("/config/topics/raw", b'{"version":1,"config":{"retention.ms":"%d"}}' % n)
        tx.create(
            "/config/changes/config_change_", b'{"version":2,"entity_path":"topics/raw"}', sequence=True
        )
        tx.commit()
    elapsed = time.perf_counter() - started
    client.stop()
    client.close()
    return count / elapsed


def library(connect: str, count: int) -> float:
    entity = Entity.of("topics", "lib")
    with ZooKeeperStore.connect(connect) as store:
        started = time.perf_counter()
        for n in range(count):
            writer.alter(store, entity, writer.prepare_change(entity, {"retention.ms": str(n + 1)}))
        elapsed = time.perf_counter() - started
    return count / elapsed


def cli(connect: str, count: int) -> tuple[float, float]:
    times = []
    for n in range(count):
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "configctl",
                "--zookeeper",
                connect,
                "alter",
                "--topic",
                "cli",
                "--add-config",
                f"retention.ms={n + 1}",
            ],
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - started)
    return count / sum(times), statistics.median(times)


def cold_start(runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "configctl", "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zookeeper", help="use this server instead of starting one")
    parser.add_argument("--alters", type=int, default=2000)
    parser.add_argument("--cli-alters", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        connect = args.zookeeper
        if connect is None:
            import socket

            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            server = LocalZooKeeper(Path(tmp) / "zk", port=port)
            server.start()
            connect = server.connect_string
        try:
            base = f"{connect}/bench-write-{int(time.time())}"
            admin = KazooClient(hosts=connect)
            admin.start()
            admin.ensure_path(base.split("/", 1)[1] and "/" + base.split("/", 1)[1])
            admin.stop()
            raw = raw_kazoo(base, args.alters)
            lib = library(base, args.alters)
            cli_rate, cli_median = cli(base, args.cli_alters)
            startup = cold_start()
        finally:
            if server is not None:
                server.stop()
    print(f"raw kazoo multi (set+create):   {raw:9.1f} writes/s")
    print(f"configctl library alter:        {lib:9.1f} alters/s   ratio to raw {lib / raw:.2f}")
    print(
        f"configctl CLI process alter:    {cli_rate:9.1f} alters/s   (median {cli_median * 1000:.0f} ms per run)"
    )
    print(f"CLI cold start (--help):        {startup * 1000:9.0f} ms median")


if __name__ == "__main__":
    main()
