"""``configctl listener run`` as a user runs it: log lines, clean exit on signals, one-line errors."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import REPO_ROOT, child_env, free_port, run_cli, wait_for

from configctl import fleet
from configctl.configparse import load_properties_file
from configctl.entities import Entity
from configctl.secrets import digest
from configctl.writer import alter, prepare_change
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.znodes import NOTIFICATION_PATH_PREFIX, encode_entity_config

EXAMPLES = REPO_ROOT / "examples"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_logs_each_applied_change_and_exits_cleanly_on_a_signal(zk_connect, tmp_path: Path, sig):
    command = [
        sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", zk_connect,
        "--broker-id", "2", "--server-properties", str(EXAMPLES / "server-2.properties"),
        "--state-dir", str(tmp_path), "--change-expiration-ms", "600000",
        "--plugin", "examples.plugins.quota_enforcer:ClientQuotaEnforcer",
    ]  # fmt: skip
    env = child_env()
    key = None
    if sig == signal.SIGINT:  # this run also takes the fleet digest key from the environment
        key = b"fleet-digest-key-0123456789"
        (tmp_path / "digest.key").write_bytes(key + b"\n")
        env["CONFIGCTL_DIGEST_KEY_FILE"] = str(tmp_path / "digest.key")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        with ConfigStore.connect(zk_connect) as store:
            wait_for(lambda: fleet.broker_state(store, 2), timeout=60, message="the listener to start")
            entity = Entity.from_path("topics/orders")
            result = alter(store, entity, prepare_change(entity, {"retention.ms": "86400000"}))
            number = result.committed.change_number
            wait_for(lambda: fleet.broker_state(store, 2)["last_applied_change"] == number, timeout=10)
            state = fleet.broker_state(store, 2)
            assert state["static_config"]["ssl.keystore.password"] == "******"
            assert state["static_config"]["broker.id"] == "2"
            assert state["plugins"] == ["client-quota-enforcer"]
            process.send_signal(sig)
            out, err = process.communicate(timeout=30)
            assert process.returncode == 0, err
            assert fleet.broker_state(store, 2) is None
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert out == ""
    applied = [line.split(" INFO ", 1)[1] for line in err.splitlines() if " INFO applied change " in line]
    assert applied == [f"applied change {number}: topics/orders retention.ms=86400000 (DYNAMIC_TOPIC_CONFIG)"]
    assert "Traceback" not in err
    rows = [json.loads(line) for line in (tmp_path / "broker-2.jsonl").read_text().splitlines()]
    assert ("topics/orders", "retention.ms", "86400000") in {
        (r["entity_path"], r["name"], r["value"]) for r in rows
    }
    secret = next(r for r in rows if r["name"] == "ssl.keystore.password")
    static = load_properties_file(EXAMPLES / "server-2.properties")["ssl.keystore.password"]
    assert secret["value"] == digest(static, key) and secret["source"] == "STATIC_BROKER_CONFIG"
    assert (secret["value"] == digest(static)) == (key is None)


def test_bad_input_is_a_one_line_error(zk_connect, tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=5\n")
    cases = [
        (
            ["--broker-id", "1", "--server-properties", str(tmp_path / "missing.properties")],
            1,
            "missing.properties",
        ),
        (["--broker-id", "1", "--server-properties", str(props)], 1, "broker.id=5"),
        (
            ["--broker-id", "5", "--server-properties", str(props), "--plugin", "nope.nope:X"],
            1,
            "nope.nope:X",
        ),
        (["--broker-id", "5", "--server-properties", str(props), "--change-expiration-ms", "0"], 2, "0"),
        (["--broker-id", "-1", "--server-properties", str(props)], 2, "-1"),
    ]
    for args, code, needle in cases:
        result = run_cli("--zookeeper", zk_connect, "listener", "run", *args)
        assert result.returncode == code, (args, result)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert needle in result.stderr


def test_unreachable_zookeeper_exits_3(tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\n")
    result = run_cli(
        "--zookeeper", f"127.0.0.1:{free_port()}", "--zk-timeout", "1", "listener", "run",
        "--broker-id", "1", "--server-properties", str(props),
    )  # fmt: skip
    assert result.returncode == 3, result
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


# ----------------------------------------------------------------------------------------------
# signals at any time, escaped logs, JSON logs, help wording
# ----------------------------------------------------------------------------------------------


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "configctl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


@contextmanager
def reaped(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """``process``, killed on the way out if a failing test left it running."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def signalled(process: subprocess.Popen, sig: int, timeout: float) -> tuple[float, str]:
    """Send ``sig`` and wait for the exit: (seconds it took, stderr)."""
    sent = time.monotonic()
    process.send_signal(sig)
    _out, err = process.communicate(timeout=timeout)
    return time.monotonic() - sent, err


def test_sigterm_is_honoured_while_zookeeper_cannot_be_reached(tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\n")
    process = spawn(
        "--zookeeper", f"127.0.0.1:{free_port()}", "--zk-timeout", "60", "listener", "run",
        "--broker-id", "1", "--server-properties", str(props),
    )  # fmt: skip
    with reaped(process):
        time.sleep(2.0)  # importing, then connecting (and retrying) for up to 60 s
        assert process.poll() is None
        took, err = signalled(process, signal.SIGTERM, timeout=15)
    assert process.returncode == 0, err
    assert took < 5, f"the first SIGTERM took {took:.1f}s"
    assert "Traceback" not in err
    assert "stopped while starting" in err


def test_sigterm_is_honoured_while_the_listener_retries(restartable_zk, tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\n")
    process = spawn(
        "--zookeeper", restartable_zk.connect_string, "--zk-timeout", "30", "listener", "run",
        "--broker-id", "1", "--server-properties", str(props),
    )  # fmt: skip
    with reaped(process):
        with ConfigStore.connect(restartable_zk.connect_string) as store:
            wait_for(lambda: fleet.broker_state(store, 1), timeout=60, message="the listener")
        restartable_zk.stop()
        time.sleep(2.0)  # it notices and keeps reconnecting
        took, err = signalled(process, signal.SIGTERM, timeout=30)
    assert process.returncode == 0, err
    assert took < 10, f"the first SIGTERM took {took:.1f}s"
    assert "Traceback" not in err


FORGED = "2001-01-01 00:00:00,000 INFO applied change 999: topics/forged retention.ms=1"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_newline_in_a_value_cannot_forge_a_log_line(zk, zk_connect, tmp_path: Path, log_format):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\n")
    process = spawn(
        "--zookeeper", zk_connect, "listener", "run", "--broker-id", "1",
        "--server-properties", str(props), "--log-format", log_format,
    )  # fmt: skip
    with reaped(process):
        with ConfigStore.connect(zk_connect) as store:
            wait_for(lambda: fleet.broker_state(store, 1), timeout=60, message="the listener")
            value = f"x\n{FORGED}\x1b[31m"
            zk.create("/config/brokers/1", encode_entity_config({"custom.note": value}), makepath=True)
            zk.ensure_path("/config/changes")
            created = zk.create(
                NOTIFICATION_PATH_PREFIX, b'{"version":2,"entity_path":"brokers/1"}', sequence=True
            )
            number = int(created.rsplit("_", 1)[1])
            wait_for(lambda: fleet.broker_state(store, 1)["last_applied_change"] == number, timeout=10)
        _took, err = signalled(process, signal.SIGTERM, timeout=30)
    assert process.returncode == 0, err
    lines = err.splitlines()
    assert not any(line.startswith(FORGED) for line in lines), err
    assert "\x1b" not in err
    if log_format == "json":
        documents = [json.loads(line) for line in lines]  # every line is one JSON object
        assert all(
            {"time", "level", "logger", "message"} <= d.keys() and d["broker_id"] == 1 for d in documents
        )
        applied = [d["message"] for d in documents if d["message"].startswith(f"applied change {number}:")]
        assert len(applied) == 1 and FORGED in applied[0]
    else:
        stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")
        assert all(stamp.match(line) for line in lines), err
        (applied,) = [line for line in lines if f"applied change {number}:" in line]
        assert "x\\n2001-01-01" in applied


def test_help_names_the_broker_id_flag():
    result = run_cli("listener", "run", "--help")
    assert result.returncode == 0
    assert "BROKER_ID" not in result.stdout
    assert "--broker-id" in result.stdout and "--metrics-port" in result.stdout
