"""How fast configctl decodes a real KRaft metadata log (``configctl.kraft.metadatalog``).

Starts one combined Kafka 4.4 node (``build/kafka4/libs``, ``make kafka``), writes ``--changes``
broker-default config changes through configctl's Admin API client (each a ``ConfigRecord``
among the quorum's own records), stops the node, and reads its ``__cluster_metadata-0`` segments
``--runs`` times: records per second and MB per second of configctl's reader (CRC-32C checked,
every record decoded), beside Kafka's own ``DumpLogSegments --cluster-metadata-decoder`` over the
same files (a JVM process: its start is part of its cost). Not part of the test suite.

    python benchmarks/metadata_log.py                    # about a minute on 2 cores (1,000 changes)
    python benchmarks/metadata_log.py --changes 5000 --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from configctl.adminapi.client import KafkaAdmin  # noqa: E402
from configctl.kraft.metadatalog import MetadataEntry, read_log, segments  # noqa: E402
from configctl.kraft.metadatarecords import ConfigRecord  # noqa: E402
from configctl.localkraft import KRaftCluster  # noqa: E402

KAFKA4_HOME = REPO_ROOT / "build" / "kafka4"
KEY = "log.cleaner.backoff.ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mlog-bench-") as work:
        cluster = KRaftCluster(KAFKA4_HOME, work, combined=True)
        try:
            cluster.start()
            started = time.perf_counter()
            with KafkaAdmin(cluster.bootstrap) as admin:
                for i in range(args.changes):
                    admin.alter_broker(None, {KEY: str(15_000 + i)})
                admin.alter_broker(None, {}, [KEY])
            write_s = time.perf_counter() - started
        finally:
            cluster.stop()
        log = cluster.nodes[1].dir / "data"
        files = [path for _, path in segments(log)]
        size = sum(path.stat().st_size for path in files)
        times, records, configs = [], 0, 0
        for _ in range(args.runs):
            started = time.perf_counter()
            entries = [e for e in read_log(log) if isinstance(e, MetadataEntry)]
            times.append(time.perf_counter() - started)
            records = len(entries)
            configs = sum(isinstance(e.record, ConfigRecord) for e in entries)
        started = time.perf_counter()
        dumped = cluster.tool(
            "org.apache.kafka.tools.DumpLogSegments",
            "--cluster-metadata-decoder",
            "--files",
            ",".join(map(str, files)),
            timeout=600,
        )
        kafka_s = time.perf_counter() - started
    best, median = min(times), statistics.median(times)
    print(f"{args.changes} changes written in {write_s:.1f} s; {len(files)} segment(s), {size / 1e6:.2f} MB")
    print(
        f"{records} records ({configs} ConfigRecord) decoded by configctl: best {best:.3f} s, median {median:.3f} s"
    )
    print(f"  {records / best:,.0f} records/s, {size / 1e6 / best:.2f} MB/s (best of {args.runs})")
    print(
        f"Kafka's DumpLogSegments over the same files (one JVM process, exit {dumped.returncode}): {kafka_s:.2f} s"
    )


if __name__ == "__main__":
    main()
