"""A rollout's health check (issue 23): judged by its exit status, bounded in time and memory,
everything it started killed, and none of configctl's secrets in its environment.

Real ``sh`` processes; no ZooKeeper.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import psutil
import pytest

from configctl.rollout import health

pytestmark = pytest.mark.unit


def _dead(pid: int, within: float = 5.0) -> bool:
    """Is ``pid`` gone (or a zombie nobody reaped) within ``within`` seconds?"""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


@pytest.mark.parametrize(
    "background",
    [
        "sleep 60 &",  # a background job of the shell, holding the output
        "setsid sleep 60 &",  # a new session: out of the check's process group, holding the output
        "setsid sh -c 'sleep 60' >/dev/null 2>&1 &",  # detached, not even holding the output
    ],
)
def test_a_check_that_exits_0_and_leaves_a_background_job_is_healthy_and_its_job_is_killed(
    tmp_path, background
):
    pids = tmp_path / "pids"
    started = time.monotonic()
    result = health.run_check(f'{background} echo $! > "{pids}"; echo fine', {}, 20)
    assert time.monotonic() - started < 10  # not the 20 s timeout: the shell's exit judged it
    assert result.ok and result.exit_code == 0 and not result.timed_out, result
    assert result.output == "fine\n"
    assert all(_dead(pid) for pid in _pids(pids))


def test_a_failing_check_with_a_background_job_is_judged_by_its_status(tmp_path):
    pids = tmp_path / "pids"
    result = health.run_check(f'setsid sleep 60 & echo $! > "{pids}"; echo "p99 too high"; exit 3', {}, 20)
    assert not result.ok and result.exit_code == 3 and not result.timed_out
    assert result.failure == "the check exited 3: p99 too high"
    assert all(_dead(pid) for pid in _pids(pids))


def test_a_check_that_times_out_reports_its_configured_timeout_and_everything_it_started_dies(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    result = health.run_check(
        f'setsid sleep 60 & echo $! > "{pids}"; sleep 60 & echo $! >> "{pids}"; echo waiting; wait',
        {},
        1.5,
    )
    elapsed = time.monotonic() - started
    assert result.timed_out and result.exit_code is None and not result.ok
    assert elapsed < 8
    assert result.failure == "the check did not finish within its timeout (1.5s) and was killed"
    assert result.to_json()["timeout_seconds"] == 1.5
    assert "waiting" in result.output
    assert all(_dead(pid) for pid in _pids(pids))


def test_a_chatty_check_costs_a_bounded_tail_while_it_is_read():
    size = 300 * 1024 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result = health.run_check(f"head -c {size} /dev/zero | tr '\\0' x; echo; echo the end", {}, 120)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert result.ok, result.failure
    assert result.output.endswith("the end\n") and len(result.output) == health.OUTPUT_KEPT + 1
    assert grown < 64 * 1024, f"the check's output grew this process by {grown} KiB"


def test_the_tail_keeps_the_end_and_stays_bounded():
    tail = health.Tail(10)
    for number in range(100_000):
        tail.add(f"line {number}\n".encode())
        assert len(tail.data) <= tail.bound
    assert tail.text() == "…ine 99999\n"
    small = health.Tail(10)
    small.add("é".encode())
    assert small.text() == "é"


SECRETS = {
    "CONFIGCTL_ZK_SASL_PASSWORD": "sasl-secret",
    "CONFIGCTL_ZK_AUTH_PASSWORD": "auth-secret",
    "CONFIGCTL_ZK_TLS_KEY_PASSWORD": "tls-secret",
    "CONFIGCTL_PASSWORD_ENCODER_SECRET": "encoder-secret",
    "CONFIGCTL_ZK_AUTH": "digest:admin:inline-secret",
    "CONFIGCTL_SOME_FUTURE_TOKEN": "future-secret",
}
PLAIN = {
    "CONFIGCTL_ZK_SASL": "digest:kafka",
    "CONFIGCTL_ZK_SASL_PASSWORD_FILE": "/etc/configctl/sasl.password",
    "CONFIGCTL_ZK_TIMEOUT": "5",
    "CONFIGCTL_PROFILE": "prod",
    "SOME_TOOL_SETTING": "kept",
}


def test_a_check_never_sees_configctl_secrets(tmp_path, monkeypatch):
    for name, value in {**SECRETS, **PLAIN}.items():
        monkeypatch.setenv(name, value)
    seen = tmp_path / "env"
    result = health.run_check(f'env > "{seen}"', {"CONFIGCTL_ROLLOUT": "20250612-142233-3f9a"}, 20)
    assert result.ok, result.failure
    text = seen.read_text()
    env = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    for name, value in SECRETS.items():
        assert name not in env and value not in text
    for name, value in PLAIN.items():
        assert env[name] == value
    assert env["CONFIGCTL_ROLLOUT"] == "20250612-142233-3f9a" and env["PATH"]
    assert env[health.RUN_VARIABLE]


def test_a_zk_auth_setting_without_an_inline_password_is_passed():
    environ = {"CONFIGCTL_ZK_AUTH": "digest:admin", "HOME": "/home/x"}
    assert health.check_environment({}, environ) == environ


def test_a_check_runs_in_a_process_with_more_than_1024_files_open():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this machine allows {hard} open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        result = health.run_check("echo fine", {}, 20)
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert result.ok and result.output == "fine\n", result
