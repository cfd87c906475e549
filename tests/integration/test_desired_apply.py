"""plan / apply / export against a real ZooKeeper: round trips, staleness, batches, the CLI contract."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import REPO_ROOT, run_cli
from kazoo.client import KazooClient

from configctl.desired import apply as applying
from configctl.desired import document as desired
from configctl.desired import plan
from configctl.entities import ZOOKEEPER_TYPES, Entity, EntityType
from configctl.errors import PartiallyWritten
from configctl.secrets import verify_scram_password
from configctl.store import Change
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
from configctl.zk.multisize import MAX_MULTI_OPS, OPS_PER_CHANGE, batches
from configctl.zkconnection import ConnectionSettings
from configctl.znodes import encode_entity_config

CLUSTER = """\
topics:
  orders: {retention.ms: 86400000, cleanup.policy: [compact, delete]}
  payments: {min.insync.replicas: 2}
brokers:
  <default>: {log.retention.ms: 3600000}
  "1": {log.cleaner.threads: 2}
users:
  User:alice:
    producer_byte_rate: 1048576
    SCRAM-SHA-256: [iterations=8192, password=alice-secret]
    clients:
      app1: {consumer_byte_rate: 2048}
  <default>:
    clients:
      <default>: {request_percentage: 50}
clients:
  <default>: {producer_byte_rate: 1024}
ips:
  <default>: {connection_creation_rate: 10}
"""


def cli(zk_connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", zk_connect, *args, **kwargs)


def write(tmp_path: Path, text: str, name: str = "desired.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def config_nodes(zk: KazooClient, path: str = "/config") -> dict[str, tuple[bytes, int]]:
    """Every entity config node with its bytes and version (notifications left out)."""
    result = {}
    for child in zk.get_children(path) if zk.exists(path) else []:
        full = f"{path}/{child}"
        if full == "/config/changes":
            continue
        data, stat = zk.get(full)
        if full.count("/") >= 3:
            result[full] = (data, stat.version)
        result.update(config_nodes(zk, full))
    return result


def notifications(zk: KazooClient) -> list[str]:
    return sorted(zk.get_children("/config/changes")) if zk.exists("/config/changes") else []


# -- round trips ----------------------------------------------------------------------------------


def test_apply_writes_the_file_then_a_second_apply_is_a_no_op(zk_connect, zk, tmp_path):
    file = write(tmp_path, CLUSTER)
    first = cli(zk_connect, "apply", "-f", file, "--yes", "--reason", "initial load")
    assert first.returncode == 0, first.stderr
    assert "Applied" in first.stdout and "to 9 entities" in first.stdout
    assert json.loads(zk.get("/config/topics/orders")[0]) == {
        "version": 1,
        "config": {"cleanup.policy": "compact,delete", "retention.ms": "86400000"},
    }
    alice = json.loads(zk.get("/config/users/User%3Aalice")[0])["config"]
    assert verify_scram_password("SCRAM-SHA-256", alice["SCRAM-SHA-256"], "alice-secret")
    assert json.loads(zk.get("/config/users/<default>/clients/<default>")[0])["config"] == {
        "request_percentage": "50"
    }
    before, changes = config_nodes(zk), notifications(zk)
    assert len(changes) == 9  # one notification per entity written

    second = cli(zk_connect, "apply", "-f", file, "--yes")
    assert second.returncode == 0, second.stderr
    assert "No changes" in second.stdout
    assert config_nodes(zk) == before and notifications(zk) == changes  # nothing written at all

    planned = cli(zk_connect, "plan", "-f", file)
    assert planned.returncode == 0 and "No changes" in planned.stdout


def test_export_then_plan_shows_nothing(zk_connect, zk, tmp_path):
    assert cli(zk_connect, "apply", "-f", write(tmp_path, CLUSTER), "--yes").returncode == 0
    # something written the Kafka way, with odd stored text, must survive the round trip too
    zk.create(
        "/config/topics/legacy",
        b'{"version":1,"config":{"retention.ms":"007","cleanup.policy":"compact, delete"}}',
    )
    exported = tmp_path / "exported.yaml"
    result = cli(zk_connect, "export", "--file", str(exported))
    assert result.returncode == 0, result.stderr
    assert exported.stat().st_mode & 0o077 == 0  # holds SCRAM credentials: owner only
    text = exported.read_text()
    assert "SCRAM-SHA-256: salt=" in text and "alice-secret" not in text
    for extra in ([], ["--prune"]):
        planned = cli(zk_connect, "plan", "-f", str(exported), *extra)
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "No changes" in planned.stdout
    # stdout and JSON forms, one type
    only_topics = cli(zk_connect, "export", "--entity-type", "topics")
    assert only_topics.returncode == 0 and only_topics.stdout.count("retention.ms") == 2
    as_json = cli(zk_connect, "export", "--entity-type", "topics", "--output", "json")
    assert json.loads(as_json.stdout)["topics"]["orders"] == {
        "cleanup.policy": ["compact", "delete"],
        "retention.ms": 86400000,
    }
    json_file = tmp_path / "topics.json"
    assert cli(zk_connect, "export", "--entity-type", "topics", "--file", str(json_file)).returncode == 0
    assert cli(zk_connect, "plan", "-f", str(json_file), "--prune").returncode == 0


def test_export_to_a_pipe_warns_when_it_holds_secrets(zk_connect, tmp_path):
    assert cli(zk_connect, "apply", "-f", write(tmp_path, CLUSTER), "--yes").returncode == 0
    piped = cli(zk_connect, "export")  # stdout is a pipe here, as with `> file`
    assert piped.returncode == 0 and "SCRAM-SHA-256: salt=" in piped.stdout
    assert piped.stderr == (
        "warning: this export holds 1 secret value (SCRAM credentials or broker passwords, hashed or "
        "encrypted) and stdout is not a terminal: the file the shell creates for it is usually readable "
        "by others; use --file FILE (readable by you only) or --no-secrets\n"
    )
    assert cli(zk_connect, "export", "--entity-type", "topics").stderr == ""  # nothing secret in it


def test_export_without_secrets_round_trips_and_keeps_them(zk_connect, zk, tmp_path):
    assert cli(zk_connect, "apply", "-f", write(tmp_path, CLUSTER), "--yes").returncode == 0
    alice_before = zk.get("/config/users/User%3Aalice")[0]
    exported = cli(zk_connect, "export", "--no-secrets")
    assert exported.returncode == 0 and exported.stderr == ""
    assert "SCRAM-SHA" not in exported.stdout and "salt=" not in exported.stdout
    assert (
        "# Sensitive keys (SCRAM credentials, broker passwords) are left out (--no-secrets)"
        in exported.stdout
    )
    assert "\nx-configctl-secrets: omitted\n" in exported.stdout
    file = write(tmp_path, exported.stdout, "no-secrets.yaml")
    planned = cli(zk_connect, "plan", "-f", file, "--prune")
    assert planned.returncode == 0 and "No changes" in planned.stdout
    # edit the file: the quota goes, the credential stays
    Path(file).write_text(exported.stdout.replace("    producer_byte_rate: 1048576\n", ""))
    applied = cli(zk_connect, "apply", "-f", file, "--prune", "--yes")
    assert applied.returncode == 0, applied.stderr
    alice = json.loads(zk.get("/config/users/User%3Aalice")[0])["config"]
    assert alice == {"SCRAM-SHA-256": json.loads(alice_before)["config"]["SCRAM-SHA-256"]}
    # --file: not private when nothing secret is in it; JSON carries the marker too
    json_file = tmp_path / "no-secrets.json"
    assert cli(zk_connect, "export", "--no-secrets", "--file", str(json_file)).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert json_file.stat().st_mode & 0o777 == 0o666 & ~umask
    assert json.loads(json_file.read_text())["x-configctl-secrets"] == "omitted"
    assert cli(zk_connect, "plan", "-f", str(json_file), "--prune").returncode == 0


def test_export_plan_round_trip_on_an_empty_cluster(zk_connect, tmp_path):
    exported = tmp_path / "empty.yaml"
    assert cli(zk_connect, "export", "--file", str(exported)).returncode == 0
    assert desired.load(exported).types == set(ZOOKEEPER_TYPES)
    assert cli(zk_connect, "plan", "-f", str(exported), "--prune").returncode == 0


def test_plan_exit_status_and_json_document(zk_connect, zk, tmp_path):
    assert (
        cli(
            zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=1,segment.bytes=1048576"
        ).returncode
        == 0
    )
    assert cli(zk_connect, "alter", "--topic", "old", "--add-config", "retention.ms=5").returncode == 0
    file = write(tmp_path, "topics:\n  orders: {retention.ms: 2, cleanup.policy: [compact]}\n")
    planned = cli(zk_connect, "plan", "-f", file, "--output", "json")
    assert planned.returncode == 2, planned.stderr
    document = json.loads(planned.stdout)
    assert document["changes"] == 3 and document["entities_changed"] == 1
    assert document["entities"] == [
        {
            "entity_path": "topics/orders",
            "entity_type": "topics",
            "entity_name": "orders",
            "version": 0,
            "pruned": False,
            "keys": [
                {"name": "cleanup.policy", "kind": "add", "old": None, "new": "compact"},
                {"name": "retention.ms", "kind": "change", "old": "1", "new": "2"},
                {"name": "segment.bytes", "kind": "delete", "old": "1048576", "new": None},
            ],
        }
    ]
    pruned = cli(zk_connect, "plan", "-f", file, "--prune")
    assert pruned.returncode == 2
    assert "- topics/old" in pruned.stdout and "not in the file" in pruned.stdout
    assert "Plan: 1 to add, 1 to change, 2 to delete" in pruned.stdout
    # prune leaves the emptied node in place, as Kafka does
    assert cli(zk_connect, "apply", "-f", file, "--prune", "--yes").returncode == 0
    assert zk.get("/config/topics/old")[0] == b'{"version":1,"config":{}}'


def test_bad_files_are_one_line_errors_and_nothing_is_written(zk_connect, zk, tmp_path):
    bad = write(tmp_path, "topics:\n  orders: {retention.ms: soon}\n  x: {retention.ms: 1}\n  x: {}\n")
    result = cli(zk_connect, "apply", "-f", bad, "--yes")
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {bad}:4: duplicate key 'x' (first given at line 3)"
    invalid = write(tmp_path, "topics:\n  orders: {retention.ms: soon}\nqueues: {}\n", "invalid.yaml")
    result = cli(zk_connect, "plan", "-f", invalid)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert f"{invalid}:2: topics/orders: retention.ms: 'soon' is not a valid long" in result.stderr
    assert f"{invalid}:3: unknown entity type 'queues'" in result.stderr
    missing = cli(zk_connect, "plan", "-f", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 1 and "no such file" in missing.stderr
    assert "Traceback" not in result.stderr + missing.stderr
    assert not zk.exists("/config/topics")


def test_apply_without_yes_off_a_terminal_refuses_at_once(zk_connect, zk, tmp_path):
    result = cli(zk_connect, "apply", "-f", write(tmp_path, CLUSTER), input="y\n")
    assert result.returncode == 1
    assert result.stderr.strip() == "error: apply asks for confirmation: run it in a terminal, or pass --yes"
    assert not zk.exists("/config/topics")


def test_apply_json_reports_versions_and_change_numbers(zk_connect, tmp_path):
    file = write(tmp_path, "topics: {a: {retention.ms: 1}, b: {retention.ms: 2}}\n")
    result = cli(zk_connect, "apply", "-f", file, "--yes", "--output", "json")
    document = json.loads(result.stdout)
    assert document["applied_entities"] == 2 and document["batches"] == 1
    assert [(e["entity_path"], e["new_version"]) for e in document["entities"]] == [
        ("topics/a", 0),
        ("topics/b", 0),
    ]
    assert sorted(e["change_number"] for e in document["entities"]) == [0, 1]
    again = json.loads(cli(zk_connect, "apply", "-f", file, "--yes", "--output", "json").stdout)
    assert again["applied_entities"] == 0 and again["entities"] == []


def test_plain_broker_password_with_the_encoder_secret(zk_connect, zk, tmp_path):
    key = "listener.name.internal.ssl.key.password"
    file = write(tmp_path, f"brokers:\n  '1': {{{key}: hunter2}}\n")
    refused = cli(zk_connect, "plan", "-f", file)
    assert refused.returncode == 1 and "given in plain text" in refused.stderr
    env = {"CONFIGCTL_PASSWORD_ENCODER_SECRET": "brokers-secret"}
    assert cli(zk_connect, "apply", "-f", file, "--yes", env=env).returncode == 0
    stored = json.loads(zk.get("/config/brokers/1")[0])["config"][key]
    assert "encryptedPassword:" in stored and "hunter2" not in stored
    again = cli(zk_connect, "plan", "-f", file, env=env)
    assert again.returncode == 0, again.stdout  # decrypted and compared: no spurious diff


# -- staleness: a change between plan and apply is detected ---------------------------------------


def test_a_change_after_the_plan_stops_apply_before_anything_is_written(zk_connect, zk):
    with ConfigStore.connect(zk_connect) as store:
        wanted = desired.parse("topics: {a: {retention.ms: 1}, b: {retention.ms: 2}, c: {}}", source="f")
        shown = plan.make_plan(store, wanted)
        # someone writes an entity the plan only looked at (c) ...
        assert (
            run_cli(
                "--zookeeper", zk_connect, "alter", "--topic", "c", "--add-config", "retention.ms=9"
            ).returncode
            == 0
        )
        before = config_nodes(zk)
        with pytest.raises(applying.StalePlan) as caught:
            applying.apply_plan(store, shown)
    assert (
        str(caught.value)
        == "the state moved since the plan: topics/c changed; nothing was written; re-run plan"
    )
    assert caught.value.exit_code == 5 and caught.value.applied == []
    assert config_nodes(zk) == before


def test_a_change_landing_between_batches_is_reported_exactly(zk_connect, zk):
    count = MAX_MULTI_OPS // OPS_PER_CHANGE + 10  # two batches
    text = "topics:\n" + "".join(f"  t{i:04d}: {{retention.ms: {i}}}\n" for i in range(count))
    with ConfigStore.connect(zk_connect) as store:
        shown = plan.make_plan(store, desired.parse(text, source="f"))
        groups = list(batches(shown.changes()))
        assert len(groups) == 2
        late = groups[1][0].entity
        zk.ensure_path("/config/topics")
        zk.create(late.znode, b'{"version":1,"config":{"retention.ms":"77"}}')
        # check_first=False stands for a write landing after the pre-check, during the apply
        with pytest.raises(PartiallyWritten) as caught:
            applying.apply_plan(store, shown, check_first=False)
    error = caught.value
    assert error.exit_code == 8  # the first batch is committed: never "nothing was written"
    assert error.committed == [c.entity.path for c in groups[0]]
    assert error.not_committed == [c.entity.path for c in groups[1]] and error.unknown == []
    assert str(error).startswith(
        f"the state moved since the plan: topics/{late.name} changed; committed {len(groups[0])} of {count}"
    )
    assert zk.exists(groups[0][-1].entity.znode) and not zk.exists(groups[1][1].entity.znode)
    assert zk.get(late.znode)[0] == b'{"version":1,"config":{"retention.ms":"77"}}'
    # applying is idempotent: a fresh plan shows exactly what is left
    with ConfigStore.connect(zk_connect) as store:
        rest = plan.make_plan(store, desired.parse(text, source="f"))
    assert {e.entity for e in rest.entities} == {c.entity for c in groups[1]}


# -- faults: what apply says after ZooKeeper dies under it ----------------------------------------


def many_topics(count: int) -> str:
    return "topics:\n" + "".join(f"  t{i:05d}: {{retention.ms: {1000 + i}}}\n" for i in range(count))


def stored_topics(connect: str) -> dict[str, bytes]:
    """Every topic config node in the server at ``connect`` (which must be up)."""
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=60)
    try:
        names = client.get_children("/config/topics") if client.exists("/config/topics") else []
        return {f"topics/{name}": client.get(f"/config/topics/{name}")[0] for name in names}
    finally:
        client.stop()
        client.close()


def check_report_matches_zookeeper(error: PartiallyWritten, changes: list, connect: str) -> None:
    """The three lists split the plan, and ZooKeeper holds exactly what was called committed."""
    planned = [c.entity.path for c in changes]
    assert sorted(error.committed + error.not_committed + error.unknown) == sorted(planned)
    assert len(set(error.committed) | set(error.not_committed) | set(error.unknown)) == len(planned)
    stored = stored_topics(connect)
    expected = {c.entity.path: encode_entity_config(c.config) for c in changes}
    assert {path: stored.get(path) for path in error.committed} == {p: expected[p] for p in error.committed}
    assert not set(error.not_committed) & set(stored)


def test_zookeeper_killed_mid_apply_names_what_was_committed(restartable_zk):
    connect = restartable_zk.connect_string
    with ConfigStore.connect(ConnectionSettings(connect, timeout=2.0)) as store:
        shown = plan.make_plan(store, desired.parse(many_topics(2000), source="bulk.yaml"))
        changes = shown.changes()
        groups = list(batches(changes))
        assert len(groups) >= 6  # several batches, so some are in flight when it dies

        def kill_after_the_first_batch(batch):
            if batch[0].entity == groups[0][0].entity:
                restartable_zk.kill_node(1)

        with pytest.raises(PartiallyWritten) as caught:
            applying.apply_plan(store, shown, on_batch=kill_after_the_first_batch)
    error = caught.value
    assert error.exit_code == 8
    assert error.committed[: len(groups[0])] == [c.entity.path for c in groups[0]]
    # the multis in flight when the connection dropped: sent, never answered, and ZooKeeper stayed down
    assert 0 < len(error.unknown) <= 2 * len(groups[0])
    assert error.not_committed == [c.entity.path for c in changes][-len(error.not_committed) :]
    message = str(error)
    assert "\n" not in message and message.startswith("lost the connection to ZooKeeper")
    assert f"committed {len(error.committed)} of 2000 entities" in message
    assert (
        f"not committed {len(error.not_committed)}" in message and f"unknown {len(error.unknown)}" in message
    )
    restartable_zk.start_node(1)
    check_report_matches_zookeeper(error, changes, connect)


def test_unknown_batches_are_resolved_when_zookeeper_comes_back_in_time(restartable_zk):
    connect = restartable_zk.connect_string
    restarted: list[threading.Thread] = []
    bounced: dict[str, object] = {}  # what the bounce did, and when: the failure message says it

    with ConfigStore.connect(ConnectionSettings(connect, timeout=60.0)) as store:
        shown = plan.make_plan(store, desired.parse(many_topics(1000), source="bulk.yaml"))
        changes = shown.changes()
        first = next(iter(batches(changes)))

        def bounce():
            try:
                time.sleep(1.0)  # the next multis are sent meanwhile, into a server that cannot answer
                restartable_zk.kill_node(1)
                bounced["killed"] = time.monotonic()
                restartable_zk.start_node(1, timeout=50.0)
                bounced["serving"] = time.monotonic()
            except Exception as exc:  # reported by the assertion below
                bounced["error"] = exc

        def bounce_after_the_first_batch(batch):
            # Freeze the server first: killed outright, the client could notice before the next
            # multi is sent, queue it and send it after reconnecting, and nothing would be unknown.
            if batch[0].entity == first[0].entity:
                restartable_zk.kill_node(1, signal.SIGSTOP)
                restarted.append(threading.Thread(target=bounce))
                restarted[0].start()

        with pytest.raises(PartiallyWritten) as caught:
            applying.apply_plan(store, shown, on_batch=bounce_after_the_first_batch)
        ended = time.monotonic()
    restarted[0].join(timeout=120)
    error = caught.value
    # The promise holds only if ZooKeeper came back within the session timeout: say so when not.
    assert "error" not in bounced and "serving" in bounced, f"the server did not come back: {bounced}"
    back_after = bounced["serving"] - bounced["killed"]
    assert error.unknown == [], (  # re-read once the server was back: every batch is known
        f"{len(error.unknown)} unknown though the server served again {back_after:.1f} s after the kill "
        f"and the apply ended {ended - bounced['killed']:.1f} s after it: {error}"
    )
    assert len(error.committed) >= len(first) and error.not_committed
    assert "re-read after reconnecting" in str(error)
    check_report_matches_zookeeper(error, changes, connect)
    # and the rest applies cleanly
    with ConfigStore.connect(ConnectionSettings(connect, timeout=30.0)) as store:
        rest = plan.make_plan(store, desired.parse(many_topics(1000), source="bulk.yaml"))
        assert {e.entity.path for e in rest.entities} == set(error.not_committed)
        applying.apply_plan(store, rest)


def test_apply_pauses_the_garbage_collector_and_gives_it_back(zk_connect):
    # configctl.gcpause: what an apply builds stays alive, so collections during it find nothing
    assert gc.isenabled()
    during: list[bool] = []
    with ConfigStore.connect(zk_connect) as store:
        shown = plan.make_plan(store, desired.parse(many_topics(10), source="bulk.yaml"))
        assert gc.isenabled()
        applying.apply_plan(store, shown, on_batch=lambda batch: during.append(gc.isenabled()))
    assert during == [False]
    assert gc.isenabled()


def test_saved_plan_applies_exactly_or_refuses(zk_connect, tmp_path):
    file = write(tmp_path, "topics: {a: {retention.ms: 1}}\n")
    saved = tmp_path / "plan.json"
    shown = cli(zk_connect, "plan", "-f", file, "--out", str(saved))
    assert shown.returncode == 2 and json.loads(saved.read_text())["seen"] == {"topics/a": -1}
    assert cli(zk_connect, "alter", "--topic", "a", "--add-config", "retention.ms=5").returncode == 0
    stale = cli(zk_connect, "apply", "-f", file, "--plan", str(saved), "--yes")
    assert stale.returncode == 5
    assert (
        stale.stderr.strip()
        == f"error: the state moved since the plan in {saved} was made: topics/a; re-run plan"
    )
    assert cli(zk_connect, "plan", "-f", file, "--out", str(saved)).returncode == 2
    Path(file).write_text("topics: {a: {retention.ms: 3}}\n")
    edited = cli(zk_connect, "apply", "-f", file, "--plan", str(saved), "--yes")
    assert edited.returncode == 1 and "file changed since the plan" in edited.stderr
    assert cli(zk_connect, "plan", "-f", file, "--out", str(saved)).returncode == 2
    applied = cli(zk_connect, "apply", "-f", file, "--plan", str(saved), "--yes")
    assert applied.returncode == 0, applied.stderr


def test_cli_apply_killed_mid_way_exits_8_with_the_lists(restartable_zk, tmp_path):
    connect = restartable_zk.connect_string
    file = write(tmp_path, many_topics(20_000))  # 80 multis: seconds of writing to kill it in
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    command = [sys.executable, "-m", "configctl", "--zookeeper", connect, "--zk-timeout", "2"]
    process = subprocess.Popen(
        [*command, "--output", "json", "apply", "-f", file, "--yes"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    watcher = KazooClient(hosts=connect, timeout=10.0)
    watcher.start(timeout=30)
    try:
        deadline = time.monotonic() + 120
        while not getattr(watcher.exists("/config/changes"), "numChildren", 0):  # the first batch landed
            assert process.poll() is None and time.monotonic() < deadline, "apply never started writing"
            time.sleep(0.01)
    finally:
        watcher.stop()
        watcher.close()
    restartable_zk.kill_node(1)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 8, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: lost the connection to ZooKeeper")
    assert "nothing was written" not in stderr
    document = json.loads(stdout)
    assert document["committed"] and document["not_committed"]
    assert document["applied_entities"] == len(document["committed"])
    assert f"committed {len(document['committed'])} of 20000 entities" in stderr
    assert document["error"] == stderr.removeprefix("error: ").strip()
    restartable_zk.start_node(1)
    error = PartiallyWritten(
        "",
        committed=document["committed"],
        not_committed=document["not_committed"],
        unknown=document["unknown"],
    )
    wanted = desired.parse(many_topics(20_000), source="f")
    check_report_matches_zookeeper(
        error, [Change(e, dict(c), -1) for e, c in wanted.configs.items()], connect
    )


def _cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


def test_a_failure_to_show_the_json_result_after_the_writes_says_they_were_committed(
    zk_connect, zk, tmp_path
):
    file = write(tmp_path, "topics: {a: {retention.ms: 1}, b: {retention.ms: 2}}\n")
    with open("/dev/full", "w") as full:  # every write to stdout fails: no space left on device
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "configctl",
                "--zookeeper",
                zk_connect,
                "-o",
                "json",
                "apply",
                "-f",
                file,
                "-y",
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            env=_cli_env(),
            text=True,
            timeout=120,
            check=False,
        )
    assert completed.returncode == 8, completed.stderr
    assert completed.stderr == (
        "error: apply committed all 2 entities (topics/a, topics/b), "
        "but showing the result failed: [Errno 28] No space left on device\n"
    )  # one line: no traceback, no second error from the flush at exit
    assert json.loads(zk.get("/config/topics/b")[0])["config"] == {"retention.ms": "2"}


def test_a_closed_stdout_after_the_writes_says_they_were_committed(zk_connect, zk, tmp_path):
    file = write(tmp_path, many_topics(300))
    process = subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "apply", "-f", file, "--yes"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_cli_env(),
    )
    for line in process.stdout:  # the whole plan is shown before anything is written ...
        if line.startswith(b"Plan: "):
            break
    process.stdout.close()  # ... then the reader goes away (| head, a closed terminal)
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 8, stderr
    assert stderr.startswith("error: apply committed all 300 entities (topics/t00000, ")
    assert (
        stderr.endswith("but showing the result failed: [Errno 32] Broken pipe\n") and stderr.count("\n") == 1
    )
    assert len(zk.get_children("/config/topics")) == 300


def test_stdout_failing_before_the_writes_is_one_line_and_nothing_is_written(zk_connect, zk, tmp_path):
    file = write(tmp_path, "topics: {a: {retention.ms: 1}}\n")
    with open("/dev/full", "w") as full:
        completed = subprocess.run(
            [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "apply", "-f", file, "--yes"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=_cli_env(),
            text=True,
            timeout=120,
            check=False,
        )
    assert (completed.returncode, completed.stderr) == (
        7,
        "error: cannot write to standard output: No space left on device; nothing was written\n",
    )
    assert not zk.exists("/config/topics/a")


def test_a_long_plan_is_summarized_by_plan_and_apply_unless_full(zk_connect, tmp_path):
    file = write(tmp_path, many_topics(600))
    shown = cli(zk_connect, "plan", "-f", file)
    assert shown.returncode == 2 and shown.stdout.splitlines() == [
        "Plan summary (--full shows every key; the full plan has 1,201 lines):",
        "  topics  600 created; keys: 600 to add, 0 to change, 0 to delete",
        "Plan: 600 to add, 0 to change, 0 to delete, on 600 of 600 entities examined.",
    ]
    full = cli(zk_connect, "plan", "-f", file, "--full")
    assert full.returncode == 2 and len(full.stdout.splitlines()) == 1201
    assert json.loads(cli(zk_connect, "plan", "-f", file, "-o", "json").stdout)["summary"] == {
        "topics": {
            "entities": {"create": 600, "update": 0, "clear": 0, "prune": 0, "replace": 0},
            "keys": {"add": 600, "change": 0, "delete": 0},
        }
    }
    applied = cli(zk_connect, "apply", "-f", file, "--yes")
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines()[:3] == shown.stdout.splitlines()
    assert applied.stdout.splitlines()[3].startswith("Applied 600 changes to 600 entities")
    small = cli(
        zk_connect, "plan", "-f", write(tmp_path, "topics: {t00000: {}}\n", "small.yaml"), "--summary"
    )
    assert small.returncode == 2 and small.stdout.splitlines() == [
        "Plan summary (--full shows every key):",
        "  topics  1 emptied; keys: 0 to add, 0 to change, 1 to delete",
        "Plan: 0 to add, 0 to change, 1 to delete, on 1 of 1 entities examined.",
    ]


# -- bulk ------------------------------------------------------------------------------------------


def test_bulk_apply_spans_batches_and_records_history(zk_connect, zk):
    count = 700
    text = "topics:\n" + "".join(
        f"  bulk-{i:04d}: {{retention.ms: {1000 + i}, cleanup.policy: [delete]}}\n" for i in range(count)
    )
    text += "users:\n  User:new:\n    producer_byte_rate: 1\n    clients: {c1: {consumer_byte_rate: 2}}\n"
    with ConfigStore.connect(zk_connect, identity="tester") as store:
        wanted = desired.parse(text, source="bulk.yaml")
        result = applying.apply_plan(store, plan.make_plan(store, wanted), reason="bulk")
        assert result.entities == count + 2 and result.batches >= 3
        assert not plan.make_plan(store, wanted).changed
        entry = store.history(Entity.of(EntityType.TOPICS, "bulk-0699"))
        assert [(e.version, e.identity, e.reason, e.config) for e in entry] == [
            (0, "tester", "bulk", {"retention.ms": "1699", "cleanup.policy": "delete"})
        ]
        # the multi-read path and plain reads agree, for present and absent nodes
        paths = [f"/config/topics/bulk-{i:04d}" for i in range(0, count, 7)] + ["/config/topics/none"]
        assert store.session._multi_get(paths) == store.session._pipelined_get(paths)
    assert zk.get_children("/config/topics", include_data=True)[1].numChildren == count
    assert len(zk.get_children("/configctl/history/topics")) == count


def _interactive_apply(zk_connect: str, file: str, *, before_answer=None, answer: str = "y"):
    """Run apply with a terminal on stdin; answer the confirmation once it is asked."""
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    process = subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "apply", "-f", file],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(slave)
    try:
        asked = b""
        deadline = time.monotonic() + 60
        os.set_blocking(process.stderr.fileno(), False)
        while b"[y/N]" not in asked:
            assert time.monotonic() < deadline, "apply never asked for confirmation"
            chunk = process.stderr.read() or b""
            asked += chunk
            time.sleep(0.05)
        if before_answer is not None:
            before_answer()
        os.write(master, answer.encode() + b"\n")
        stdout, stderr = process.communicate(timeout=60)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return process.returncode, stdout.decode(), (asked + (stderr or b"")).decode()


def test_interactive_apply_asks_and_notices_a_change_made_while_asking(zk_connect, zk, tmp_path):
    file = write(tmp_path, "topics: {a: {retention.ms: 1}, b: {retention.ms: 2}}\n")
    code, out, err = _interactive_apply(zk_connect, file, answer="n")
    assert code == 1 and "apply cancelled; nothing was written" in err
    assert "Apply 2 changes (2 to add, 0 to change, 0 to delete) to 2 entities?" in err

    def meanwhile():
        alter = run_cli("--zookeeper", zk_connect, "alter", "--topic", "b", "--add-config", "retention.ms=9")
        assert alter.returncode == 0

    code, out, err = _interactive_apply(zk_connect, file, before_answer=meanwhile)
    assert code == 5, err
    assert "error: the state moved since the plan: topics/b changed; nothing was written; re-run plan" in err
    assert not zk.exists("/config/topics/a")
    code, out, err = _interactive_apply(zk_connect, file)
    assert code == 0, err
    assert "Applied 2 changes to 2 entities" in out
