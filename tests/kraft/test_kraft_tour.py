"""examples/tour_kraft.sh, the KRaft tour of ``make demo``, run whole against the real Kafka 4.4 it starts.

The tour starts its own cluster (two brokers and a controller: about 20 s) and runs for about a
minute; the lines checked here are the ones that carry its claims: what configctl wrote is what
Kafka 4's kafka-configs.sh and each broker report, a broker's own refusal, history kept in the
cluster, plan/apply/rollback, and Kafka's tool moving the version (``--if-version``: exit 5). It
leaves no process and no file behind, also when it is stopped half-way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import REPO_ROOT, child_env

pytestmark = pytest.mark.slow

SCRIPT = REPO_ROOT / "examples" / "tour_kraft.sh"


def tour_env(tmp_path: Path) -> dict[str, str]:
    """configctl and python of this interpreter's environment first on PATH, as ``make demo`` puts
    them; the tour's work directory (``mktemp``) under ``tmp_path``, so what it leaves is visible."""
    bin_dir = str(Path(sys.executable).parent)
    return child_env({"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp_path)})


def left_behind(tmp_path: Path) -> list[str]:
    """Processes still running from the tour's work directory (a node, the starter)."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(str(tmp_path) in part for part in process.info["cmdline"] or ()):
            found.append(f"{process.info['pid']}: {' '.join(process.info['cmdline'])[:200]}")
    return found


def test_the_kraft_tour_shows_every_claim_against_real_brokers(tmp_path: Path):
    done = subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=tmp_path,
        env=tour_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    expected = [
        "Kafka 4.4.0 (KRaft, brokers and a controller quorum)",
        "node 100: controller",
        # every family written by configctl, then read back by Kafka 4's own tool
        "Completed updating config for topic orders: version 0.",
        "Completed updating config for broker 2: version 0.",
        "Completed updating config for user alice client app1: version 0.",
        "Completed updating config for ip 10.1.2.3: version 0.",
        "retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000",
        "log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG",
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192",
        "Quota configs for ip '10.1.2.3' are connection_creation_rate=10.0",
        # each broker asked in turn
        "broker 1: log.cleaner.threads=1 (DEFAULT_CONFIG)",
        "broker 2: log.cleaner.threads=2 (DYNAMIC_BROKER_CONFIG)",
        # the broker's own reason, dry run and real
        "(exit status 1: the broker refused it)",
        "(exit status 1: the broker refused it, nothing changed)",
        # plan / apply / plan
        "(exit status 2: there are changes)",
        "Applied 4 changes to 3 entities",
        "retention.ms=604800000 sensitive=false",
        "Restored topic orders to the config of version 0: now version 2.",
        # a canary: broker 1 proves it, then the default takes it
        "log.cleaner.backoff.ms=16000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG",
        # Kafka's tool moves the version
        "configctl last saw topic orders at version 2",
        "(exit status 5: a conflict; nothing written)",
        "outside configctl",
        # the flight recorder beside broker 1
        "recording broker 1's metadata log",
    ]
    missing = [line for line in expected if line not in out]
    assert not missing, (missing, out[-4000:])
    canary = out[out.index("A canary on KRaft") : out.index("A write by Kafka's own tool")]
    assert "promoted" in canary and "OPS-43" in canary, canary
    assert " SCRAM-SHA-256      │ ****** " in out  # configctl masks the credential it reads back
    assert "error: topic 'orders' is at version 3, not 2 (--if-version); nothing written" in done.stderr
    # the refusal is the broker's, in one line on stderr
    refusals = [
        line for line in done.stderr.splitlines() if "log.cleaner.threads" in line or "cleaner thread" in line
    ]
    assert refusals and all("must be at least 1MB per cleaner thread" in line for line in refusals), (
        done.stderr
    )
    # history names who and why, read from the cluster
    assert "tour: orders keep a day" in out and "OPS-42: retention per the file" in out
    assert "rollback to 0: undo OPS-42 for orders" in out
    assert left_behind(tmp_path) == []
    assert list(tmp_path.glob("configctl-kraft-demo.*")) == []


def test_the_kraft_tour_stops_its_cluster_when_stopped_half_way(tmp_path: Path):
    log = tmp_path / "tour.log"
    with open(log, "w") as output:
        tour = subprocess.Popen(
            ["bash", str(SCRIPT)],
            cwd=tmp_path,
            env=tour_env(tmp_path),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 240
        while "== Every family" not in log.read_text():  # the cluster serves: configctl is writing
            assert tour.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert left_behind(tmp_path)  # the starter and its three nodes run
        tour.send_signal(signal.SIGTERM)
        assert tour.wait(timeout=120) != 0
    finally:
        if tour.poll() is None:
            tour.kill()
            tour.wait()
    deadline = time.monotonic() + 60
    while left_behind(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left_behind(tmp_path) == [], log.read_text()
    assert list(tmp_path.glob("configctl-kraft-demo.*")) == []
