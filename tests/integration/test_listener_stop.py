"""``configctl listener run`` stops on the first SIGTERM, at any moment (issue 36 #8).

A listener whose start hung (ZooKeeper accepting connections but never answering, as a frozen
server does) ignored the first SIGTERM: stopping waited on the very requests that hung, for as
long as the session timeout. These run a real listener process against a real ZooKeeper frozen
with SIGSTOP, before its start and while it runs, and want its normal shutdown (exit 0, its
last lines logged) within a few seconds of the first signal.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers import child_env, wait_for

from configctl import fleet
from configctl.zk.configstore import ZooKeeperStore as ConfigStore

PROMPT_S = 8.0
"""A few seconds: what the first SIGTERM may take, whatever ZooKeeper does."""


def spawn(connect: str, state_dir: Path, *, zk_timeout: int = 30) -> subprocess.Popen:
    props = state_dir / "server.properties"
    props.write_text("broker.id=1\n")
    command = [
        sys.executable, "-m", "configctl", "--zookeeper", connect, "--zk-timeout", str(zk_timeout),
        "listener", "run", "--broker-id", "1", "--server-properties", str(props),
        "--state-dir", str(state_dir),
    ]  # fmt: skip
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )


@contextmanager
def frozen(server) -> Iterator[None]:
    """The server stopped dead (SIGSTOP): connections are accepted, nothing is answered."""
    server.kill_node(1, signal.SIGSTOP)
    try:
        yield
    finally:
        server.kill_node(1, signal.SIGCONT)


def terminated(process: subprocess.Popen, timeout: float = 60) -> tuple[float, str]:
    """One SIGTERM, then the exit: (seconds it took, stderr); killed if it never comes."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        _out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _out, err = process.communicate()
    return time.monotonic() - sent, err


def test_sigterm_stops_a_start_waiting_on_a_zookeeper_that_never_answers(restartable_zk, tmp_path: Path):
    with frozen(restartable_zk):
        process = spawn(restartable_zk.connect_string, tmp_path)
        time.sleep(3.0)  # imported, connected, waiting for the session's answer (up to 30 s)
        assert process.poll() is None
        took, err = terminated(process)
    assert process.returncode == 0, err
    assert took < PROMPT_S, f"the first SIGTERM took {took:.1f}s"
    assert "stopped while starting" in err
    assert "Traceback" not in err


def test_sigterm_stops_a_running_listener_whose_zookeeper_froze(restartable_zk, tmp_path: Path):
    process = spawn(restartable_zk.connect_string, tmp_path)
    try:
        with ConfigStore.connect(restartable_zk.connect_string) as store:
            # Started: its state is published during the load, its fleet record written last.
            wait_for(
                lambda: fleet.broker_state(store, 1) and 1 in store.fleet_records(),
                timeout=60,
                message="the listener started",
            )
        with frozen(restartable_zk):
            time.sleep(1.0)
            took, err = terminated(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert took < PROMPT_S, f"the first SIGTERM took {took:.1f}s"
    assert "stopping broker 1's listener" in err and "stopped at change" in err
    assert "Traceback" not in err
    assert (tmp_path / "broker-1.jsonl").exists()
