"""Issue 13, against a real ZooKeeper: hostile input, exit codes that tell the truth, secrets that never leak.

Each test is one observed case: it failed on the code before the fix.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import REPO_ROOT, run_cli

pytestmark = pytest.mark.zk

SECRET = "hunter2-s3cret-value"


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


def tree(zk, path: str = "/") -> dict[str, bytes]:
    found = {}
    for child in zk.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        found[full] = zk.get(full)[0]
        found.update(tree(zk, full))
    return found


def one_line_error(result) -> str:
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


# -- 11. one corrupt config node can be reported, worked around and repaired with configctl --------


def test_a_corrupt_node_is_reported_and_the_others_still_shown_exported_and_planned(zk_connect, zk, tmp_path):
    assert cli(zk_connect, "alter", "--topic", "good", "--add-config", "retention.ms=1000").returncode == 0
    zk.create("/config/topics/x", b"not json", makepath=True)
    described = cli(zk_connect, "describe", "--entity-type", "topics", "-o", "json")
    assert described.returncode == 0 and "warning:" in described.stderr
    by_path = {d["entity_path"]: d for d in json.loads(described.stdout)}
    assert by_path["topics/good"]["config"] == {"retention.ms": "1000"} and "problem" in by_path["topics/x"]
    exported = cli(zk_connect, "export", "--entity-type", "topics")
    assert exported.returncode == 0 and "good" in exported.stdout and "warning:" in exported.stderr
    desired = tmp_path / "d.yaml"
    desired.write_text("topics:\n  good: {retention.ms: 1000}\n")
    refused = cli(zk_connect, "plan", "-f", str(desired), "--prune")
    assert refused.returncode == 1 and "--replace-corrupt" in one_line_error(refused)


def test_a_corrupt_node_is_repaired_by_alter_replace_or_apply_replace_corrupt(zk_connect, zk, tmp_path):
    zk.create("/config/topics/x", b"not json", makepath=True)
    zk.create("/config/topics/y", b'{"version":1,"config":{"a":1}}', makepath=True)
    before = tree(zk)
    refused = cli(zk_connect, "alter", "--topic", "x", "--add-config", "retention.ms=1000")
    assert refused.returncode == 1 and "alter --replace" in one_line_error(refused) and tree(zk) == before
    not_confirmed = cli(zk_connect, "alter", "--topic", "x", "--replace", "--add-config", "retention.ms=1000")
    assert not_confirmed.returncode == 1 and "--yes" in not_confirmed.stderr and tree(zk) == before
    repaired = cli(
        zk_connect, "alter", "--topic", "x", "--replace", "--yes", "--add-config", "retention.ms=1000"
    )
    assert repaired.returncode == 0, repaired.stderr
    assert zk.get("/config/topics/x")[0] == b'{"version":1,"config":{"retention.ms":"1000"}}'
    desired = tmp_path / "d.yaml"
    desired.write_text("topics:\n  y: {retention.ms: 2000}\n")
    assert cli(zk_connect, "apply", "-f", str(desired), "--yes").returncode == 1
    applied = cli(zk_connect, "apply", "-f", str(desired), "--yes", "--replace-corrupt")
    assert applied.returncode == 0, applied.stderr
    assert zk.get("/config/topics/y")[0] == b'{"version":1,"config":{"retention.ms":"2000"}}'


# -- 6. secrets are never echoed in error messages, and echoed input is cut short -------------------


@pytest.mark.parametrize(
    "config",
    [
        f"SCRAM-SHA-256=[iterations=8192,password={SECRET}",
        f"SCRAM-SHA-256=[password={SECRET}]]",
        f"SCRAM-SHA-256=password={SECRET},x",
        f"SCRAM-SHA-256=[iterations=99,password={SECRET}]",
    ],
)
def test_a_bad_scram_spec_never_prints_the_password(zk_connect, zk, config):
    before = tree(zk)
    result = cli(zk_connect, "alter", "--user", "alice", "--add-config", config)
    assert result.returncode == 1 and SECRET not in one_line_error(result)
    assert tree(zk) == before


@pytest.mark.parametrize(
    ("target", "config"),
    [
        (["--broker", "1"], f'listener.name.x.plain.sasl.jaas.config=a password="{SECRET}",b'),
        (["--broker", "1"], f"password.encoder.secret=[{SECRET},ssl.keystore.password=x"),
        (["--broker-defaults"], f"listener.name.x.ssl.keystore.password={SECRET}"),
        (["--broker", "1"], f"ssl.keystore.password={SECRET}"),
    ],
)
def test_broker_password_mistakes_never_print_the_password(zk_connect, zk, target, config):
    result = cli(zk_connect, "alter", *target, "--add-config", config)
    assert result.returncode == 1 and SECRET not in one_line_error(result)


def test_a_huge_bad_value_gives_a_short_error_line(zk_connect):
    result = cli(zk_connect, "alter", "--topic", "t", "--add-config", "retention.ms=" + "9" * 100_000)
    assert result.returncode == 1 and len(one_line_error(result)) < 400


# -- 5 and 10. names that look like markup, escapes in stored text ----------------------------------


def test_a_name_that_looks_like_rich_markup_is_written_and_shown_exit_0(zk_connect, zk):
    result = cli(zk_connect, "alter", "--client", "[/]", "--add-config", "producer_byte_rate=1")
    assert result.returncode == 0, result.stderr
    assert "[/]" in result.stdout
    assert zk.exists("/config/clients/%5B%2F%5D") is not None


def test_terminal_escapes_in_a_reason_never_reach_the_terminal_through_history(zk_connect):
    reason = "\x1b[31mred\x1b[0m and \x07bell\nnewline"
    assert (
        cli(
            zk_connect, "alter", "--topic", "t", "--add-config", "retention.ms=1000", "--reason", reason
        ).returncode
        == 0
    )
    shown = cli(zk_connect, "history", "--topic", "t")
    assert shown.returncode == 0
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "\\e[31mred" in shown.stdout
    # JSON keeps the exact text (JSON escapes it)
    assert json.loads(cli(zk_connect, "history", "--topic", "t", "-o", "json").stdout)[0]["reason"] == reason


# -- 8. a config near ZooKeeper's 1 MB limit: refused before the write, or changeable later ---------


def test_a_config_too_large_for_one_transaction_is_refused_before_anything_is_written(
    zk_connect, zk, tmp_path
):
    props = tmp_path / "big.properties"
    props.write_text("".join(f"custom.key.{i}={'v' * 1000}\n" for i in range(900)))
    before = tree(zk)
    result = cli(
        zk_connect, "alter", "--broker", "1", "--add-config-file", str(props), "--allow-custom-config"
    )
    assert result.returncode == 1 and "bytes" in one_line_error(result) and tree(zk) == before


def test_a_large_config_stays_changeable(zk_connect, zk, tmp_path):
    props = tmp_path / "large.properties"
    props.write_text("".join(f"custom.key.{i}={'v' * 1000}\n" for i in range(600)))  # ~620 KB
    first = cli(
        zk_connect, "alter", "--broker", "1", "--add-config-file", str(props), "--allow-custom-config"
    )
    assert first.returncode == 0, first.stderr
    for value in ("1", "2"):  # the history record would double it: it keeps a digest instead
        again = cli(
            zk_connect,
            "alter",
            "--broker",
            "1",
            "--add-config",
            f"custom.key.0={value}",
            "--allow-custom-config",
        )
        assert again.returncode == 0, again.stderr
    history = json.loads(cli(zk_connect, "history", "--broker", "1", "-o", "json").stdout)
    assert history[0]["config"] is None and len(history) == 3


# -- 5. ZooKeeper frozen during a write: the exit status says what really happened ------------------


def test_a_frozen_zookeeper_never_makes_alter_lie_about_what_was_written(restartable_zk):
    connect = restartable_zk.connect_string
    env = {"PYTHONPATH": str(REPO_ROOT)}
    assert (
        run_cli(
            "--zookeeper", connect, "alter", "--topic", "t", "--add-config", "retention.ms=1", env=env
        ).returncode
        == 0
    )
    pid = restartable_zk.status().nodes[0].pid
    outcomes = []
    for attempt, delay in enumerate((0.05, 0.15, 0.3, 0.5)):
        value = str(1000 + attempt)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "configctl",
                "--zookeeper",
                connect,
                "--zk-timeout",
                "2",
                "alter",
                "--topic",
                "t",
                "--add-config",
                f"retention.ms={value}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}, **env},
        )
        time.sleep(delay)
        os.kill(pid, signal.SIGSTOP)
        try:
            _out, err = process.communicate(timeout=60)
        finally:
            os.kill(pid, signal.SIGCONT)
        stored = None
        for _ in range(100):
            result = run_cli("--zookeeper", connect, "describe", "--topic", "t", "-o", "json", env=env)
            if result.returncode == 0:
                stored = json.loads(result.stdout)[0]["config"]["retention.ms"]
                break
            time.sleep(0.2)
        landed = stored == value
        outcomes.append(process.returncode)
        assert "Traceback" not in err
        if process.returncode == 0:
            assert landed
        elif process.returncode in (3, 4, 7):
            assert (not landed and "nothing was written" in err) or not landed, err
        else:
            assert process.returncode == 8, (
                err
            )  # partly written or unknown: says so, never "nothing was written"
            assert "nothing was written" not in err
    assert outcomes  # every run's status was checked against what ZooKeeper holds
