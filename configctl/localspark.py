"""A real Spark standalone cluster on this machine, from pyspark's own jars: for tests, benchmarks and the demo.

The audit runs on ``local[*]`` by default and on any Spark master given (``--master``). What a
standalone master changes (executors in JVMs of their own, jars shipped to them with
``spark.jars``, results sent back over the network) is shown with a real one: a master and one
worker started from pyspark's ``bin/spark-class``, on loopback ports picked free, stopped on
exit. Nothing here decides what Spark does: this only starts, waits for and stops the processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(workdir: Path, cores: int) -> Iterator[str]:
    """A real Spark standalone master and one worker from pyspark's own jars; yields the master URL."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    spark_class = home / "bin" / "spark-class"
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    (workdir / "worker").mkdir(parents=True, exist_ok=True)
    log = (workdir / "cluster.log").open("w")
    master_url = f"spark://127.0.0.1:{port}"
    master_command = [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
    worker_command = [
        str(spark_class),
        "org.apache.spark.deploy.worker.Worker",
        master_url,
        "--host",
        "127.0.0.1",
    ]
    worker_command += ["--work-dir", str(workdir / "worker")]
    processes = [
        subprocess.Popen(
            [*master_command, "--port", str(port), "--webui-port", str(ui)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        processes.append(
            subprocess.Popen(
                [*worker_command, "--cores", str(cores), "--webui-port", str(worker_ui)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as answer:
                    state = json.load(answer)
                if any(w.get("state") == "ALIVE" for w in state.get("workers", [])):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError(f"the standalone cluster did not come up (see {workdir / 'cluster.log'})")
            time.sleep(0.3)
        yield master_url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()


__all__ = ["standalone_cluster"]
