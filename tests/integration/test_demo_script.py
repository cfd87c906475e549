"""examples/kafka_brokers.py, the tour's real Kafka brokers: start, create a topic, report, stop.

One real broker (a JVM: a few seconds) on the test's ZooKeeper chroot, driven as ``tour.sh``
drives three: started in the background with relative paths, its info file read, a topic created
through the Admin API, configctl's writes reported back by the broker, and SIGTERM stopping it.
The whole tour (``make demo``) takes about a minute with Spark: too slow for the suite.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT, child_env, run_cli, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SCRIPT = REPO_ROOT / "examples" / "kafka_brokers.py"


def script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=child_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def read_info(path: Path) -> dict[str, str]:
    """The shell file ``start`` writes (``key=value``, values shell-quoted)."""
    info = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        info[key] = shlex.split(value)[0] if value else ""
    return info


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_broker_starts_reports_configctl_writes_and_stops_on_sigterm(zk_connect: str, tmp_path: Path):
    output = tmp_path / "kafka.log"
    with open(output, "w") as log:
        process = subprocess.Popen(
            [sys.executable, str(SCRIPT), "start", "--zookeeper", zk_connect, "--brokers", "1",
             "--work-dir", "kafka", "--info", "brokers.env", "--set", "log.retention.hours=100"],
            cwd=tmp_path, env=child_env(), stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    info_file = tmp_path / "brokers.env"
    broker_pid = None
    try:

        def started() -> bool:
            assert process.poll() is None, output.read_text()
            return info_file.exists()

        wait_for(started, timeout=120, interval=0.2, message="the broker's info file")
        info = read_info(info_file)
        broker_pid = int(info["broker_1_pid"])
        bootstrap = info["bootstrap"]
        assert bootstrap == info["broker_1_bootstrap"]
        properties = Path(info["broker_1_properties"])
        assert properties.is_absolute() and properties.parent == tmp_path / "kafka" / "broker-1"
        text = properties.read_text()
        assert "broker.id=1\n" in text and "log.retention.hours=100\n" in text

        created = script("create-topic", "--bootstrap", bootstrap, "--topic", "orders", cwd=tmp_path)
        assert created.returncode == 0 and "Created topic orders" in created.stdout, created.stderr
        for args in (
            ["--topic", "orders", "--add-config", "retention.ms=86400000"],
            ["--broker", "1", "--add-config", "log.cleaner.threads=2", "--allow-running-brokers"],
        ):
            written = run_cli("--zookeeper", zk_connect, "alter", *args)
            assert written.returncode == 0, written.stderr

        topic = script("describe", "--bootstrap", bootstrap, "--topic", "orders", "--key", "retention.ms",
                       "--expect", "86400000", cwd=tmp_path)  # fmt: skip
        assert topic.returncode == 0, topic.stderr
        assert topic.stdout == "broker 1: retention.ms=86400000 (DYNAMIC_TOPIC_CONFIG)\n"
        broker = script("describe", "--bootstrap", bootstrap, "--broker-config", "--key", "log.cleaner.threads",
                        "--expect-on", "1=2", cwd=tmp_path)  # fmt: skip
        assert broker.returncode == 0, broker.stderr
        assert broker.stdout == "broker 1: log.cleaner.threads=2 (DYNAMIC_BROKER_CONFIG)\n"
        static = script("describe", "--bootstrap", bootstrap, "--broker-config", "--key", "log.retention.hours",
                        cwd=tmp_path)  # fmt: skip
        assert static.stdout == "broker 1: log.retention.hours=100 (STATIC_BROKER_CONFIG)\n"

        late = script("describe", "--bootstrap", bootstrap, "--broker-config", "--key", "log.cleaner.threads",
                      "--expect", "3", "--timeout", "1", cwd=tmp_path)  # fmt: skip
        assert late.returncode == 1
        assert late.stdout == broker.stdout  # what it does report, then why it failed
        assert late.stderr == "error: broker(s) 1 did not report log.cleaner.threads=3 within 1 s\n"

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, output.read_text()
        assert not pid_alive(broker_pid)
        assert not info_file.exists()
        assert output.read_text().rstrip().endswith("stopped broker(s) 1")
    finally:
        if process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=60)
        if broker_pid is not None and pid_alive(broker_pid):  # never leave a JVM behind
            os.kill(broker_pid, signal.SIGKILL)
