"""``audit desired-state`` with the fleet digest key, against a real ZooKeeper, through the real CLI.

A desired state exported for a keyed fleet must hold the secrets as keyed listeners write them
(HMAC-SHA256 under the key), never the key itself; without the key, plain SHA-256.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli
from kazoo.client import KazooClient

from configctl.digests import digest

pytestmark = pytest.mark.zk

KEY = b"fleet-digest-key-0123456789"


def test_the_desired_state_is_exported_under_the_key(
    zk_connect: str, zk: KazooClient, tmp_path: Path
) -> None:
    env = {"CONFIGCTL_ZOOKEEPER": zk_connect}
    code, _, err = run_cli(
        "alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[password=pw-1]", env=env
    )
    assert code == 0, err
    stored = json.loads(zk.get("/config/users/alice")[0])["config"]["SCRAM-SHA-256"]
    key_file = tmp_path / "digest.key"
    key_file.write_bytes(KEY)

    def exported(*args: str, **extra: str) -> str | None:
        code, out, err = run_cli("audit", "desired-state", *args, env={**env, **extra})
        assert code == 0, err
        assert KEY.decode() not in out + err and stored not in out
        values = json.loads(out)["expected"]
        return next(
            e["value"] for e in values if (e["entity_path"], e["name"]) == ("users/alice", "SCRAM-SHA-256")
        )

    assert exported() == digest(stored)
    assert exported("--digest-key-file", str(key_file)) == digest(stored, KEY)
    assert exported(CONFIGCTL_DIGEST_KEY_FILE=str(key_file)) == digest(stored, KEY)
