"""The write path against a real ZooKeeper: every entity path, the znode bytes, describe, errors."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from configctl.secrets import PasswordEncoder, verify_scram_password

# (CLI selection flags, stored path) for all 13 entity paths.
ENTITY_PATHS = [
    (["--topic", "orders"], "topics/orders"),
    (["--client", "app 1"], "clients/app%201"),
    (["--client-defaults"], "clients/<default>"),
    (["--user", "User:alice"], "users/User%3Aalice"),
    (["--user-defaults"], "users/<default>"),
    (["--user", "User:alice", "--client", "app1"], "users/User%3Aalice/clients/app1"),
    (["--user", "User:alice", "--client-defaults"], "users/User%3Aalice/clients/<default>"),
    (["--user-defaults", "--client", "app*1"], "users/<default>/clients/app%2A1"),
    (["--user-defaults", "--client-defaults"], "users/<default>/clients/<default>"),
    (["--broker", "1"], "brokers/1"),
    (["--broker-defaults"], "brokers/<default>"),
    (["--ip", "192.168.0.1"], "ips/192.168.0.1"),
    (["--ip-defaults"], "ips/<default>"),
]

A_VALID_CONFIG = {
    "topics": ("retention.ms", "86400000"),
    "clients": ("consumer_byte_rate", "2048"),
    "users": ("producer_byte_rate", "1048576"),
    "brokers": ("log.retention.ms", "3600000"),
    "ips": ("connection_creation_rate", "10"),
}


def cli(zk_connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", zk_connect, *args, **kwargs)


def changes(zk: KazooClient) -> list[bytes]:
    if not zk.exists("/config/changes"):
        return []
    names = sorted(zk.get_children("/config/changes"))
    return [zk.get(f"/config/changes/{n}")[0] for n in names]


def tree(zk: KazooClient, path: str = "/") -> dict[str, bytes]:
    """Every node below ``path`` with its data (to prove nothing was written)."""
    result = {}
    for child in zk.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        result[full] = zk.get(full)[0]
        result.update(tree(zk, full))
    return result


@pytest.mark.parametrize(("flags", "path"), ENTITY_PATHS, ids=[p for _, p in ENTITY_PATHS])
def test_every_entity_path_is_written_byte_compatible(zk_connect, zk, flags, path):
    key, value = A_VALID_CONFIG[path.split("/")[0]]
    result = cli(zk_connect, "alter", *flags, "--add-config", f"{key}={value}")
    assert result.returncode == 0, result.stderr

    data, stat = zk.get(f"/config/{path}")
    assert data == json.dumps({"version": 1, "config": {key: value}}, separators=(",", ":")).encode()
    assert stat.version == 0
    assert changes(zk) == [json.dumps({"version": 2, "entity_path": path}, separators=(",", ":")).encode()]
    assert zk.get_children("/config/changes") == ["config_change_0000000000"]

    described = cli(zk_connect, "describe", *flags, "--output", "json")
    assert described.returncode == 0, described.stderr
    (document,) = json.loads(described.stdout)
    assert document["entity_path"] == path
    assert document["config"] == {key: value}
    assert document["version"] == 0


def test_sanitized_names_round_trip(zk_connect, zk):
    principal = "CN=Alice Smith,O=Example Corp"
    assert (
        cli(zk_connect, "alter", "--user", principal, "--add-config", "producer_byte_rate=10").returncode == 0
    )
    assert zk.exists("/config/users/CN%3DAlice%20Smith%2CO%3DExample%20Corp")
    listed = json.loads(cli(zk_connect, "describe", "--entity-type", "users", "--output", "json").stdout)
    assert [d["entity_name"] for d in listed] == [principal]
    # Names that look encoded are encoded again: the CLI always takes plain names.
    assert (
        cli(zk_connect, "alter", "--client", "a%20b", "--add-config", "consumer_byte_rate=1").returncode == 0
    )
    assert zk.exists("/config/clients/a%2520b")


def test_generic_flags_pair_types_with_names_in_order(zk_connect, zk):
    result = cli(
        zk_connect,
        "alter",
        "--entity-type",
        "users",
        "--entity-default",
        "--entity-type",
        "clients",
        "--entity-name",
        "app1",
        "--add-config",
        "consumer_byte_rate=5",
    )
    assert result.returncode == 0, result.stderr
    assert zk.exists("/config/users/<default>/clients/app1")


def test_add_config_parsing_lists_and_empty_values(zk_connect, zk):
    result = cli(
        zk_connect,
        "alter",
        "--topic",
        "t1",
        "--add-config",
        "cleanup.policy=[compact,delete] , retention.ms = 1000,segment.jitter.ms=0",
    )
    assert result.returncode == 0, result.stderr
    config = json.loads(zk.get("/config/topics/t1")[0])["config"]
    assert config == {"cleanup.policy": "compact,delete", "retention.ms": "1000", "segment.jitter.ms": "0"}


def test_add_config_file_and_delete(zk_connect, zk, tmp_path):
    props = tmp_path / "t.properties"
    props.write_text("# topic settings\nretention.ms=5000\nmax.message.bytes : 2048\n")
    before = tree(zk)
    # Kafka 3.9 ConfigCommand: "Only one of --add-config or --add-config-file must be specified".
    both = cli(zk_connect, "alter", "--topic", "t2", "--add-config-file", str(props), "--add-config", "a=1")
    assert both.returncode == 1 and "not both" in both.stderr and tree(zk) == before
    assert cli(zk_connect, "alter", "--topic", "t2", "--add-config-file", str(props)).returncode == 0
    assert json.loads(zk.get("/config/topics/t2")[0])["config"] == {
        "retention.ms": "5000",
        "max.message.bytes": "2048",
    }
    assert (
        cli(
            zk_connect, "alter", "--topic", "t2", "--delete-config", "retention.ms,max.message.bytes"
        ).returncode
        == 0
    )
    assert zk.get("/config/topics/t2")[0] == b'{"version":1,"config":{}}'
    assert len(changes(zk)) == 2


def test_dry_run_shows_diff_and_writes_nothing(zk_connect, zk):
    cli(zk_connect, "alter", "--topic", "t3", "--add-config", "retention.ms=1000")
    before = tree(zk)
    result = cli(
        zk_connect,
        "alter",
        "--topic",
        "t3",
        "--add-config",
        "retention.ms=2000",
        "--dry-run",
        "--output",
        "json",
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["dry_run"] is True
    assert document["changes"] == [{"name": "retention.ms", "kind": "change", "old": "1000", "new": "2000"}]
    assert tree(zk) == before


def test_if_version(zk_connect, zk):
    cli(zk_connect, "alter", "--topic", "t4", "--add-config", "retention.ms=1000")
    stale = cli(zk_connect, "alter", "--topic", "t4", "--add-config", "retention.ms=2", "--if-version", "7")
    assert stale.returncode == 5
    assert stale.stderr.count("\n") == 1 and "version" in stale.stderr
    ok = cli(zk_connect, "alter", "--topic", "t4", "--add-config", "retention.ms=2", "--if-version", "0")
    assert ok.returncode == 0, ok.stderr
    assert zk.exists("/config/topics/t4").version == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--topic", "t5", "--add-config", "retension.ms=1"], "retention.ms"),
        (["--topic", "t5", "--add-config", "retention.ms=abc"], "retention.ms"),
        (["--topic", "t5", "--add-config", "retention.ms=-5,cleanup.policy=[compact,nope]"], "2 problems"),
        (["--topic", "bad/name", "--add-config", "retention.ms=1"], "topic name"),
        (["--broker", "x", "--add-config", "log.retention.ms=1"], "broker"),
        (["--ip", "300.1.1.1", "--add-config", "connection_creation_rate=1"], "IPv"),
        (["--broker", "1", "--add-config", "log.dirs=/tmp/x"], "server.properties"),
        (["--broker-defaults", "--add-config", "listeners=PLAINTEXT://:9092"], "per broker"),
        (["--broker", "1", "--add-config", "my.plugin.key=1"], "--allow-custom-config"),
        (["--topic", "t5", "--delete-config", "retention.ms"], "not set"),
        (["--topic", "t5", "--add-config", "retention.ms"], "key=value"),
        (["--topic", "t5"], "nothing to change"),
        (["--user-defaults", "--add-config", "SCRAM-SHA-256=[password=x]"], "SCRAM"),
        (["--user", "u", "--add-config", "SCRAM-SHA-256=[iterations=10,password=x]"], "iterations"),
    ],
)
def test_invalid_input_is_one_line_exit_1_and_writes_nothing(zk_connect, zk, args, fragment):
    before = tree(zk)
    result = cli(zk_connect, "alter", *args)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr
    assert tree(zk) == before


def test_custom_broker_key_with_flag(zk_connect, zk):
    result = cli(
        zk_connect, "alter", "--broker", "1", "--add-config", "my.plugin.key=1", "--allow-custom-config"
    )
    assert result.returncode == 0, result.stderr


def test_unreachable_zookeeper_exit_3(free_port):
    result = run_cli(
        "--zookeeper",
        f"127.0.0.1:{free_port}",
        "--zk-timeout",
        "1",
        "alter",
        "--topic",
        "t",
        "--add-config",
        "retention.ms=1",
    )
    assert result.returncode == 3
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


def test_permission_refused_exit_4_and_nothing_written(zk_connect, zk):
    owner = make_digest_acl("admin", "pw", all=True)
    zk.ensure_path("/config/topics")
    zk.create("/config/topics/locked", b'{"version":1,"config":{}}', acl=[owner])
    zk.ensure_path("/config/changes")
    before = changes(zk)
    result = cli(zk_connect, "alter", "--topic", "locked", "--add-config", "retention.ms=1")
    assert result.returncode == 4, result.stderr
    assert result.stderr.count("\n") == 1 and "permission" in result.stderr
    assert changes(zk) == before


def test_zk_auth_creates_owner_only_nodes(zk_connect, zk):
    auth = ["--zk-auth", "digest:admin:s3cret"]
    assert cli(zk_connect, *auth, "alter", "--topic", "t6", "--add-config", "retention.ms=1").returncode == 0
    assert (
        cli(zk_connect, *auth, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1").returncode
        == 0
    )
    topic_acl, _ = zk.get_acls("/config/topics/t6")
    assert {(a.id.scheme, a.perms) for a in topic_acl} == {("digest", 31), ("world", 1)}
    with pytest.raises(NoAuthError):  # secrets are not world-readable
        zk.get("/config/users/alice")
    zk.add_auth("digest", "admin:s3cret")
    user_acl, _ = zk.get_acls("/config/users/alice")
    assert [(a.id.scheme, a.perms) for a in user_acl] == [("digest", 31)]
    # Without the identity: a write is refused with exit 4, nothing changes.
    refused = cli(zk_connect, "alter", "--topic", "t6", "--add-config", "retention.ms=2")
    assert refused.returncode == 4
    assert json.loads(zk.get("/config/topics/t6")[0])["config"] == {"retention.ms": "1"}
    # Wrong password: refused too.
    wrong = cli(
        zk_connect,
        "--zk-auth",
        "digest:admin:nope",
        "alter",
        "--topic",
        "t6",
        "--add-config",
        "retention.ms=3",
    )
    assert wrong.returncode == 4


def test_scram_password_never_reaches_zookeeper(zk_connect, zk):
    result = cli(
        zk_connect,
        "alter",
        "--user",
        "alice",
        "--add-config",
        "SCRAM-SHA-512=[iterations=8192,password=alice-secret]",
    )
    assert result.returncode == 0, result.stderr
    data = zk.get("/config/users/alice")[0]
    assert b"alice-secret" not in data
    credential = json.loads(data)["config"]["SCRAM-SHA-512"]
    assert credential.endswith(",iterations=8192")
    assert verify_scram_password("SCRAM-SHA-512", credential, "alice-secret")
    described = cli(zk_connect, "describe", "--user", "alice", "--output", "json")
    assert "salt=" not in described.stdout


def test_broker_password_is_encrypted_and_masked(zk_connect, zk):
    result = cli(
        zk_connect,
        "alter",
        "--broker",
        "1",
        "--add-config",
        "listener.name.internal.ssl.keystore.password=kspass",
        env={"CONFIGCTL_PASSWORD_ENCODER_SECRET": "encoder-secret"},
    )
    assert result.returncode == 0, result.stderr
    stored = json.loads(zk.get("/config/brokers/1")[0])["config"][
        "listener.name.internal.ssl.keystore.password"
    ]
    assert "kspass" not in stored
    assert PasswordEncoder("encoder-secret").decode(stored) == "kspass"
    described = cli(zk_connect, "describe", "--broker", "1")
    assert "kspass" not in described.stdout and stored not in described.stdout
    missing_secret = cli(
        zk_connect, "alter", "--broker", "2", "--add-config", "listener.name.internal.ssl.keystore.password=x"
    )
    assert missing_secret.returncode == 1 and "secret" in missing_secret.stderr


def test_describe_every_entity_of_a_type(zk_connect):
    for name in ("b", "a", "c"):
        cli(zk_connect, "alter", "--topic", name, "--add-config", "retention.ms=1")
    listed = json.loads(cli(zk_connect, "describe", "--entity-type", "topics", "--output", "json").stdout)
    assert [d["entity_name"] for d in listed] == ["a", "b", "c"]
    table = cli(zk_connect, "describe", "--entity-type", "topics")
    assert table.returncode == 0
    for name in ("a", "b", "c"):
        assert f"topic {name}" in table.stdout
    assert "retention.ms" in table.stdout


def test_describe_missing_entity_has_null_version(zk_connect):
    (document,) = json.loads(cli(zk_connect, "describe", "--topic", "nothing", "--output", "json").stdout)
    assert document == {
        "entity_type": "topics",
        "entity_name": "nothing",
        "entity_path": "topics/nothing",
        "config": {},
        "version": None,
    }


def test_no_op_alter_writes_nothing(zk_connect, zk):
    cli(zk_connect, "alter", "--topic", "t7", "--add-config", "retention.ms=1")
    before = tree(zk)
    result = cli(zk_connect, "alter", "--topic", "t7", "--add-config", "retention.ms=1")
    assert result.returncode == 0
    assert "No change" in result.stdout
    assert tree(zk) == before
