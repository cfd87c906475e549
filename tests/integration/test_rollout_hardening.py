"""Rollouts fail closed, and their options are refused as the command line is read (issue 23).

Real ZooKeeper (the session server, a chroot per test); the records are damaged with the raw
kazoo client, as an attacker or a broken tool would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli
from kazoo.client import KazooClient

pytestmark = pytest.mark.zk

ROLLOUTS = "/configctl/rollouts"
CLAIMS = "/configctl/rollout-claims"


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


def _desired(tmp_path: Path, retention: dict[str, str]) -> Path:
    path = tmp_path / "desired.yaml"
    path.write_text("topics:\n" + "".join(f"  {t}: {{retention.ms: {v}}}\n" for t, v in retention.items()))
    return path


# -- apply --waves: an invalid value is a usage error, whatever the plan -------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--waves", "0"),
        ("--waves", "abc"),
        ("--waves", "150%"),
        ("--soak", "5 years"),
        ("--check-timeout", "-1"),
    ],
)
def test_an_invalid_rollout_option_on_apply_is_a_usage_error_with_or_without_changes(
    zk_connect, zk: KazooClient, tmp_path, option, value
):
    desired = _desired(tmp_path, {"a": "86400000"})
    extra = [] if option == "--waves" else ["--waves", "2"]
    changes = cli(zk_connect, "apply", "-f", str(desired), "--yes", *extra, option, value)
    assert changes.returncode == 2, changes.stderr
    assert changes.stderr.count("\n") == 1 and option in changes.stderr
    assert zk.exists("/config/topics/a") is None and zk.exists(ROLLOUTS) is None
    # the same file once ZooKeeper matches it: the plan has no changes, and the option is still refused
    assert cli(zk_connect, "apply", "-f", str(desired), "--yes").returncode == 0
    before = zk.get("/config/topics/a")
    none = cli(zk_connect, "apply", "-f", str(desired), "--yes", *extra, option, value)
    assert none.returncode == 2, none.stderr
    assert none.stderr.count("\n") == 1 and option in none.stderr
    assert zk.get("/config/topics/a") == before


def test_an_invalid_canary_list_is_a_usage_error(zk_connect, zk: KazooClient):
    bad = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=1", "--canary", "1,x"
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "'x' is not a broker id" in bad.stderr
    assert zk.exists("/config/brokers/<default>") is None
