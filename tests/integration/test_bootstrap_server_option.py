"""A bad ``--bootstrap-server`` is one line before anything is written (issue 36).

``--bootstrap-server 127.0.0.1:99999`` was accepted; with no broker running the write even went
on to ZooKeeper, as if the option had been right. On the command line it is a usage error (exit 2,
click's one line naming the option); from the environment or a profile it is refused like a bad
``--zookeeper`` (tests/integration/test_connection_cli.py): one line naming the option, exit 1.
Nothing is written either way.
"""

from __future__ import annotations

import pytest
from helpers import run_cli
from kazoo.client import KazooClient

pytestmark = pytest.mark.zk


@pytest.mark.parametrize(
    ("given", "why"),
    [("127.0.0.1:99999", "port '99999' is not a number from 1 to 65535"), ("127.0.0.1", "must be HOST:PORT")],
)
@pytest.mark.parametrize("where", ["flag", "environment"])
def test_a_bad_bootstrap_server_is_refused_and_nothing_written(
    zk_connect, zk: KazooClient, given, why, where
):
    flag = ["--bootstrap-server", given] if where == "flag" else []
    env = {"CONFIGCTL_BOOTSTRAP_SERVER": given} if where == "environment" else {}
    result = run_cli(
        "--zookeeper",
        zk_connect,
        *flag,
        "alter",
        "--topic",
        "orders",
        "--add-config",
        "retention.ms=1",
        env=env,
    )
    if where == "flag":
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.startswith("error: Invalid value for '--bootstrap-server'")
    else:
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.startswith("error: --bootstrap-server")
    assert why in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert zk.exists("/config/topics/orders") is None
