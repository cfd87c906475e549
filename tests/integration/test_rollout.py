"""Safe rollout (see docs/rollout.md) with three real ``configctl listener run`` processes.

Broker 2 runs a plugin that rejects retention under 60 s. Every test reads the config nodes'
exact bytes with the raw kazoo client: an abort or a revert must give back byte for byte what
was there (including nodes written by another tool in another key order, and nodes that did not
exist), and a promotion must leave the canary brokers exactly as they were.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import child_env, run_cli, wait_for
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from configctl import fleet
from configctl.znodes import HistoryZNodes

pytestmark = pytest.mark.zk

ROLLOUTS = "/configctl/rollouts"
CLAIMS = "/configctl/rollout-claims"
DEFAULT = "/config/brokers/<default>"
# Bytes another tool wrote: another key order than configctl's, so only an exact restore matches.
FOREIGN_1 = b'{"version":1,"config":{"num.io.threads":"8","log.cleaner.threads":"2"}}'
FOREIGN_DEFAULT = b'{"version":1,"config":{"log.segment.bytes":"536870912","log.cleaner.threads":"1"}}'


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


def start(connect: str, *args: str) -> subprocess.Popen:
    """A rollout in the background, with a short session so a killed one's owner node goes fast."""
    return subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", connect, "--zk-timeout", "2", *args],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def raw(zk: KazooClient, path: str) -> bytes | None:
    try:
        return zk.get(path)[0]
    except NoNodeError:
        return None


def snapshot(zk: KazooClient, paths: list[str]) -> dict[str, bytes | None]:
    return {path: raw(zk, path) for path in paths}


def config(zk: KazooClient, path: str) -> dict[str, str] | None:
    data = raw(zk, path)
    return None if data is None else json.loads(data)["config"]


def records(zk: KazooClient) -> dict[str, dict]:
    if not zk.exists(ROLLOUTS):
        return {}
    result = {}
    for name in zk.get_children(ROLLOUTS):
        with contextlib.suppress(NoNodeError):
            result[name] = json.loads(zk.get(f"{ROLLOUTS}/{name}")[0])
    return result


def open_records(zk: KazooClient) -> dict[str, dict]:
    return {i: r for i, r in records(zk).items() if r["state"] not in ("promoted", "completed", "aborted")}


def open_claims(zk: KazooClient) -> list[str]:
    """Claims held by an open rollout (a finished rollout's leftover claim is free)."""
    live = open_records(zk)
    if not zk.exists(CLAIMS):
        return []
    held = []
    for name in zk.get_children(CLAIMS):
        with contextlib.suppress(NoNodeError):
            if json.loads(zk.get(f"{CLAIMS}/{name}")[0])["rollout"] in live:
                held.append(name)
    return held


def reasons(zk: KazooClient, entity_path: str) -> list[str]:
    """The entity's history reasons, oldest first: the directory's own record, then each child."""
    directory = f"/configctl/history/{entity_path}"
    head = zk.get(directory)[0]
    children = sorted((n for n in zk.get_children(directory) if n.startswith("v")), key=HistoryZNodes.order)
    records = ([head] if head else []) + [zk.get(f"{directory}/{n}")[0] for n in children]
    return [json.loads(record)["reason"] for record in records]


def _alive(pid: int) -> bool:
    """A process that runs (a killed one nobody reaped yet is a zombie: dead)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def document(result) -> dict:
    return json.loads(result.stdout)


# -- canary -------------------------------------------------------------------------------------------


def test_a_canary_that_promotes_sets_the_default_and_leaves_the_canary_brokers_byte_for_byte(
    zk_connect, zk, fleet_of_three, tmp_path
):
    zk.create("/config/brokers/1", FOREIGN_1, makepath=True)
    zk.create(DEFAULT, FOREIGN_DEFAULT, makepath=True)
    before = snapshot(zk, ["/config/brokers/1", "/config/brokers/3"])
    seen = tmp_path / "check.env"
    result = cli(
        zk_connect,
        "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--reason", "ticket OPS-7",
        "--canary", "1,3", "--soak", "2s", "--wait", "30",
        "--check", f'env | grep ^CONFIGCTL_ | sort > "{seen}"',
        "-o", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = document(result)
    assert report["outcome"] == "promoted" and report["kind"] == "canary"
    assert report["canary_brokers"] == [1, 3]
    parts = [(s["step"], s["part"]) for s in report["steps"]]
    assert parts == [
        ("canary", "write"),
        ("canary", "wait"),
        ("canary", "soak"),
        ("canary", "check"),
        ("promote", "write"),
    ]
    assert {b["broker_id"]: b["status"] for b in report["rollout"]["brokers"]} == {
        1: "applied",
        2: "applied",
        3: "applied",
    }
    # the default has the change on top of its own keys; the canary brokers are exactly as they were
    assert config(zk, DEFAULT) == {
        "log.segment.bytes": "536870912",
        "log.cleaner.threads": "1",
        "log.retention.ms": "7200000",
    }
    assert snapshot(zk, ["/config/brokers/1", "/config/brokers/3"]) == before
    # the check saw the canary brokers and the canary's change numbers
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines())
    canary_changes = report["steps"][0]["change_numbers"]
    assert env["CONFIGCTL_CANARY_BROKERS"] == "1,3"
    assert env["CONFIGCTL_CHANGE"] == str(max(canary_changes))
    assert env["CONFIGCTL_CHANGES"] == ",".join(map(str, sorted(canary_changes)))
    assert env["CONFIGCTL_ROLLOUT"] == report["id"] and env["CONFIGCTL_ROLLOUT_STEP"] == "canary"
    # every step is in the entities' history, with the rollout, the step and the operator's reason
    assert reasons(zk, "brokers/1") == [
        f"rollout {report['id']}: canary on broker(s) 1,3: ticket OPS-7",
        f"rollout {report['id']}: canary promoted: ticket OPS-7",
    ]
    assert reasons(zk, "brokers/<default>") == [f"rollout {report['id']}: canary promoted: ticket OPS-7"]
    # the record is finished, and nothing is claimed any more
    assert records(zk)[report["id"]]["state"] == "promoted"
    assert open_claims(zk) == [] and open_records(zk) == {}
    listed = document(cli(zk_connect, "rollout", "list", "-o", "json"))
    assert [(r["id"], r["state"], r["running"]) for r in listed] == [(report["id"], "promoted", False)]


def test_a_canary_with_a_failing_check_aborts_and_restores_exact_bytes(zk_connect, zk, fleet_of_three):
    zk.create("/config/brokers/1", FOREIGN_1, makepath=True)
    zk.create(DEFAULT, FOREIGN_DEFAULT, makepath=True)
    paths = ["/config/brokers/1", "/config/brokers/3", DEFAULT]
    before = snapshot(zk, paths)
    default_version = zk.exists(DEFAULT).version
    result = cli(
        zk_connect,
        "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000",
        "--canary", "1,3", "--check", "echo 'p99 latency too high' >&2; exit 3",
    )  # fmt: skip
    assert result.returncode == 11, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: rollout ") and "the check exited 3: p99 latency too high" in last
    assert "every entity it wrote has its previous bytes again" in last
    assert snapshot(zk, paths) == before  # brokers/3 did not exist, and does not again
    assert zk.exists(DEFAULT).version == default_version  # never touched
    (rollout_id,) = records(zk)
    assert records(zk)[rollout_id]["state"] == "aborted"
    assert reasons(zk, "brokers/1")[-1] == f"rollout {rollout_id}: canary aborted, previous bytes restored"
    assert open_claims(zk) == []


def test_a_canary_a_broker_plugin_rejects_aborts_and_restores_exact_bytes(zk_connect, zk, fleet_of_three):
    zk.create("/config/brokers/2", FOREIGN_1, makepath=True)
    before = snapshot(zk, ["/config/brokers/2", DEFAULT])
    result = cli(
        zk_connect,
        "alter", "--broker-defaults", "--add-config", "log.retention.ms=1000", "--canary", "2", "--wait", "30",
        "-o", "json",
    )  # fmt: skip
    assert result.returncode == 11, result.stderr
    report = document(result)
    assert report["outcome"] == "aborted"
    assert "configctl's plugin log-retention-applier rejected it on broker 2" in report["failure"]
    assert "below the minimum" in report["failure"]
    assert report["restored"] == ["brokers/2"]
    assert snapshot(zk, ["/config/brokers/2", DEFAULT]) == before
    # broker 2 runs its previous config again: the rejection is gone once it applied the restore
    wait_for(
        lambda: not fleet.problems_of(json.loads(zk.get("/configctl/brokers/2")[0])),
        timeout=30,
        message="broker 2's problem to clear",
    )


def test_a_canary_broker_that_never_applies_it_times_out_and_is_restored(zk_connect, zk, fleet_of_three):
    zk.create("/config/brokers/3", FOREIGN_1, makepath=True)
    before = snapshot(zk, ["/config/brokers/3", DEFAULT])
    frozen = fleet_of_three[3]
    os.kill(frozen.pid, signal.SIGSTOP)
    try:
        result = cli(
            zk_connect,
            "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "3",
            "--wait", "2", "-o", "json",
        )  # fmt: skip
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
    assert result.returncode == 11, result.stderr
    report = document(result)
    assert "broker(s) 3 had not applied it after 2s" in report["failure"]
    assert snapshot(zk, ["/config/brokers/3", DEFAULT]) == before


def test_a_hanging_check_is_killed_at_its_timeout_and_the_canary_aborts(
    zk_connect, zk, fleet_of_three, tmp_path
):
    pid_file = tmp_path / "check.pid"
    before = snapshot(zk, ["/config/brokers/1", DEFAULT])
    started = time.monotonic()
    result = cli(
        zk_connect,
        "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "1",
        "--check", f'sh -c \'echo $$ > "{pid_file}"; exec sleep 120\'', "--check-timeout", "2", "-o", "json",
    )  # fmt: skip
    assert result.returncode == 11, result.stderr
    assert time.monotonic() - started < 60
    assert "did not finish within its timeout" in document(result)["failure"]
    check = next(s for s in document(result)["steps"] if s["part"] == "check")
    assert check["timed_out"] is True and check["exit_code"] is None
    sleeper = int(pid_file.read_text())
    assert not _alive(sleeper)  # killed with the check's whole process group
    assert snapshot(zk, ["/config/brokers/1", DEFAULT]) == before


def test_a_promoted_change_a_non_canary_broker_refuses_exits_9_and_stays_promoted(
    zk_connect, zk, fleet_of_three
):
    # broker 1 has no plugin: the canary passes there, and broker 2's plugin refuses the new default
    result = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=1000", "--canary", "1",
        "--wait", "30", "-o", "json",
    )  # fmt: skip
    assert result.returncode == 9, result.stderr
    assert document(result)["outcome"] == "promoted"
    assert {b["broker_id"]: b["status"] for b in document(result)["rollout"]["brokers"]}[2] == "rejected"
    # the veto is worded as the plugin's (configctl's plugin on broker 2), not as Kafka's broker's
    assert "promoted the change to brokers/<default>" in result.stderr and "plugin" in result.stderr
    assert "brokers/2" in result.stderr or "broker 2" in result.stderr
    assert config(zk, DEFAULT) == {"log.retention.ms": "1000"} and raw(zk, "/config/brokers/1") is None


def test_a_canary_dry_run_and_a_change_that_changes_nothing_write_nothing(zk_connect, zk, fleet_of_three):
    zk.create(DEFAULT, b'{"version":1,"config":{"log.retention.ms":"7200000"}}', makepath=True)
    same = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "1"
    )
    assert same.returncode == 0 and "no rollout was started" in same.stdout
    dry = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=3600000", "--canary", "1",
        "--dry-run", "-o", "json",
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert document(dry)["dry_run"] is True and document(dry)["canary_entities"] == ["brokers/1"]
    assert raw(zk, "/config/brokers/1") is None and records(zk) == {}


def test_a_canary_broker_that_already_overrides_the_key_is_refused_and_nothing_is_written(
    zk_connect, zk, fleet_of_three
):
    zk.create("/config/brokers/1", b'{"version":1,"config":{"log.retention.hours":"72"}}', makepath=True)
    before = snapshot(zk, ["/config/brokers/1", "/config/brokers/3", DEFAULT])
    result = cli(
        zk_connect,
        "alter",
        "--broker-defaults",
        "--add-config",
        "log.retention.ms=7200000",
        "--canary",
        "3,1",
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1
    assert "broker 1 already overrides log.retention.hours" in result.stderr
    # what cannot be a canary is refused the same way: a deletion, a broker with no listener, not a default
    deletion = cli(
        zk_connect, "alter", "--broker-defaults", "--delete-config", "log.retention.ms", "--canary", "3"
    )
    assert deletion.returncode == 1 and "--canary cannot test --delete-config" in deletion.stderr
    absent = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "9"
    )
    assert absent.returncode == 1 and "canary broker(s) 9 have no live listener" in absent.stderr
    topic = cli(zk_connect, "alter", "--topic", "t", "--add-config", "retention.ms=86400000", "--canary", "1")
    assert topic.returncode == 1 and "use it with --broker-defaults" in topic.stderr
    loose = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--soak", "5m"
    )
    assert loose.returncode == 1 and "--soak only applies with --canary" in loose.stderr
    bad = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=1", "--canary", "1,x"
    )
    assert bad.returncode == 2 and "'x' is not a broker id" in bad.stderr  # a usage error
    assert snapshot(zk, ["/config/brokers/1", "/config/brokers/3", DEFAULT]) == before
    assert records(zk) == {}


def _wait_for_soak(zk: KazooClient, process: subprocess.Popen) -> str:
    def soaking() -> str | None:
        assert process.poll() is None, process.communicate()
        for rollout_id, record in open_records(zk).items():
            if record["step"].get("activity") == "soaking":
                return rollout_id
        return None

    return wait_for(soaking, timeout=60, message="the canary to soak")


def test_a_killed_canary_is_finished_with_rollout_abort(zk_connect, zk, fleet_of_three):
    zk.create("/config/brokers/1", FOREIGN_1, makepath=True)
    before = snapshot(zk, ["/config/brokers/1", DEFAULT])
    process = start(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "1",
        "--soak", "60s",
    )  # fmt: skip
    rollout_id = _wait_for_soak(zk, process)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert config(zk, "/config/brokers/1")["log.retention.ms"] == "7200000"  # the canary is still out
    listed = document(cli(zk_connect, "rollout", "list", "--open", "-o", "json"))
    assert [(r["id"], r["state"], r["kind"]) for r in listed] == [(rollout_id, "running", "canary")]
    shown = document(cli(zk_connect, "rollout", "show", rollout_id, "-o", "json"))
    assert [u["entity_path"] for u in shown["to_undo"]] == ["brokers/1"]
    assert shown["to_undo"][0]["previous_config"] == {"num.io.threads": "8", "log.cleaner.threads": "2"}
    # abort does not wait for the dead process's session: the record's version decides
    aborted = cli(zk_connect, "rollout", "abort", rollout_id, "--reason", "operator went home", "-o", "json")
    assert aborted.returncode == 0, aborted.stderr
    assert document(aborted)["outcome"] == "aborted" and document(aborted)["restored"] == ["brokers/1"]
    assert snapshot(zk, ["/config/brokers/1", DEFAULT]) == before
    assert records(zk)[rollout_id]["state"] == "aborted" and open_claims(zk) == []
    assert reasons(zk, "brokers/1")[-1].endswith(
        "canary aborted, previous bytes restored: operator went home"
    )
    again = cli(zk_connect, "rollout", "abort", rollout_id)
    assert again.returncode == 5 and "already ended (aborted)" in again.stderr


def test_rollout_abort_stops_a_canary_whose_process_still_runs(zk_connect, zk, fleet_of_three):
    before = snapshot(zk, ["/config/brokers/2", DEFAULT])
    process = start(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "2",
        "--soak", "120s", "-o", "json",
    )  # fmt: skip
    rollout_id = _wait_for_soak(zk, process)
    started = time.monotonic()
    aborted = cli(zk_connect, "rollout", "abort", rollout_id)
    assert aborted.returncode == 0, aborted.stderr
    out, err = process.communicate(timeout=60)
    assert time.monotonic() - started < 60  # the soak noticed at once, it did not sit out its 120 s
    assert process.returncode == 11, err
    assert json.loads(out)["failure"].startswith("aborted by someone else")
    assert snapshot(zk, ["/config/brokers/2", DEFAULT]) == before
    assert records(zk)[rollout_id]["state"] == "aborted"


def test_a_killed_canary_is_finished_with_rollout_resume(zk_connect, zk, fleet_of_three):
    zk.create("/config/brokers/1", FOREIGN_1, makepath=True)
    zk.create(DEFAULT, FOREIGN_DEFAULT, makepath=True)
    before = raw(zk, "/config/brokers/1")
    process = start(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "1",
        "--soak", "3s", "--check", "true",
    )  # fmt: skip
    rollout_id = _wait_for_soak(zk, process)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    owner = f"{ROLLOUTS}/{rollout_id}/owner"
    early = cli(zk_connect, "rollout", "resume", rollout_id)
    if zk.exists(owner) is not None or early.returncode == 5:
        assert early.returncode == 5 and "is still run by pid" in early.stderr
        wait_for(lambda: zk.exists(owner) is None, timeout=30, message="the dead process's session to expire")
        resumed = cli(zk_connect, "rollout", "resume", rollout_id, "-o", "json")
    else:
        resumed = early
    assert resumed.returncode == 0, resumed.stderr
    report = document(resumed)
    assert report["outcome"] == "promoted"
    assert [(s["step"], s["part"]) for s in report["steps"]] == [
        ("canary", "wait"),
        ("canary", "soak"),
        ("canary", "check"),
        ("promote", "write"),
    ]
    assert raw(zk, "/config/brokers/1") == before
    assert config(zk, DEFAULT)["log.retention.ms"] == "7200000"
    assert records(zk)[rollout_id]["state"] == "promoted" and open_claims(zk) == []


# -- waves --------------------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d", "e"]


def _desired(tmp_path: Path, retention: dict[str, str], extra: str = "") -> Path:
    lines = ["topics:"] + [f"  {t}: {{retention.ms: {v}}}" for t, v in retention.items()]
    path = tmp_path / "desired.yaml"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def test_waves_that_complete_go_out_in_order_each_applied_and_checked(
    zk_connect, zk, fleet_of_three, tmp_path
):
    zk.create("/config/topics/c", b'{"config":{"retention.ms":"5000000"},"version":1}', makepath=True)
    log = tmp_path / "waves.log"
    desired = _desired(tmp_path, dict.fromkeys(TOPICS, "86400000"))
    result = cli(
        zk_connect,
        "apply", "-f", str(desired), "--yes", "--reason", "OPS-9", "--waves", "3", "--soak", "1s",
        "--check", f'echo "$CONFIGCTL_WAVE/$CONFIGCTL_WAVES $CONFIGCTL_ENTITIES $CONFIGCTL_BROKERS" >> "{log}"',
        "-o", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = document(result)
    assert report["outcome"] == "completed" and report["kind"] == "waves"
    assert [w["entities"] for w in report["waves"]] == [
        ["topics/a"],
        ["topics/b", "topics/c"],
        ["topics/d", "topics/e"],
    ]
    assert all(w["went_out"] for w in report["waves"])
    assert log.read_text().splitlines() == [
        "1/3 topics/a 1,2,3",
        "2/3 topics/b,topics/c 1,2,3",
        "3/3 topics/d,topics/e 1,2,3",
    ]
    for topic in TOPICS:
        assert config(zk, f"/config/topics/{topic}") == {"retention.ms": "86400000"}
    assert reasons(zk, "topics/d") == [f"rollout {report['id']}: wave 3 of 3: OPS-9"]
    assert records(zk)[report["id"]]["state"] == "completed" and open_claims(zk) == []
    # nothing left to do
    assert cli(zk_connect, "plan", "-f", str(desired)).returncode == 0


def test_waves_stop_at_the_first_failing_wave_naming_what_went_out(zk_connect, zk, fleet_of_three, tmp_path):
    desired = _desired(
        tmp_path, {"a": "86400000", "b": "86400000", "c": "1000", "d": "86400000", "e": "86400000"}
    )
    paths = [f"/config/topics/{t}" for t in TOPICS]
    before = snapshot(zk, paths)
    result = cli(zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "40%", "-o", "json")
    assert result.returncode == 12, result.stderr
    report = document(result)
    assert report["outcome"] == "stopped"
    assert report["failure"].startswith(
        "wave 2 of 3 failed: configctl's plugin log-retention-applier rejected it on broker 2"
    )
    assert report["went_out"] == ["topics/a", "topics/b", "topics/c", "topics/d"]
    assert report["not_out"] == ["topics/e"]
    error = result.stderr.strip().splitlines()[-1]
    assert "went out: topics/a, topics/b, topics/c, topics/d; not out: topics/e" in error
    assert f"configctl rollout abort {report['id']}" in error
    assert raw(zk, "/config/topics/e") is None  # wave 3 never went out
    assert config(zk, "/config/topics/d") == {"retention.ms": "86400000"}
    (open_id,) = open_records(zk)
    assert open_id == report["id"] and open_records(zk)[open_id]["state"] == "stopped"
    # the open rollout holds its entities: another rollout touching one of them is refused
    other = _desired(tmp_path, {"e": "90000000"})
    refused = cli(zk_connect, "apply", "-f", str(other), "--yes", "--waves", "1")
    assert refused.returncode == 5 and f"open rollout {report['id']}" in refused.stderr
    # abort gives back every byte
    aborted = cli(zk_connect, "rollout", "abort", report["id"])
    assert aborted.returncode == 0, aborted.stderr
    assert snapshot(zk, paths) == before
    assert open_claims(zk) == []


def test_revert_on_failure_leaves_every_byte_as_before(zk_connect, zk, fleet_of_three, tmp_path):
    zk.create(
        "/config/topics/b",
        b'{"config":{"retention.ms":"5000000","cleanup.policy":"delete"},"version":1}',
        makepath=True,
    )
    zk.create("/config/users/bob", b'{"version":1,"config":{"producer_byte_rate":"1024"}}', makepath=True)
    users = "users:\n  alice:\n    producer_byte_rate: 2048\n    clients:\n      app1: {consumer_byte_rate: 4096}\n"
    users += "  bob: {producer_byte_rate: 4096}\n"
    desired = _desired(tmp_path, {"a": "86400000", "b": "86400000"}, users)
    paths = [
        "/config/topics/a",
        "/config/topics/b",
        "/config/users/alice",
        "/config/users/alice/clients",
        "/config/users/alice/clients/app1",
        "/config/users/bob",
    ]
    before = snapshot(zk, paths)
    result = cli(
        zk_connect,
        "apply", "-f", str(desired), "--yes", "--waves", "5", "--revert-on-failure",
        "--check", 'test "$CONFIGCTL_WAVE" -lt 5',
        "-o", "json",
    )  # fmt: skip
    assert result.returncode == 11, result.stderr
    report = document(result)
    assert report["outcome"] == "aborted"
    assert report["failure"].startswith("wave 5 of 5 failed: the check exited 1")
    assert report["restored"] == sorted(
        ["topics/a", "topics/b", "users/alice", "users/alice/clients/app1", "users/bob"]
    )
    assert snapshot(zk, paths) == before  # alice's nodes are gone again, bob's and b's bytes as they were
    assert records(zk)[report["id"]]["state"] == "aborted" and open_claims(zk) == []
    assert (
        reasons(zk, "topics/b")[-1]
        == f"rollout {report['id']}: wave revert, previous bytes restored: apply desired.yaml"
    )


def test_killed_waves_are_finished_with_rollout_resume(zk_connect, zk, fleet_of_three, tmp_path):
    desired = _desired(tmp_path, dict.fromkeys(TOPICS, "86400000"))
    process = start(zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "3", "--soak", "3s")

    def second_wave_soaking() -> str | None:
        assert process.poll() is None, process.communicate()
        for rollout_id, record in open_records(zk).items():
            if record["step"].get("wave") == 2 and record["step"].get("activity") == "soaking":
                return rollout_id
        return None

    rollout_id = wait_for(second_wave_soaking, timeout=60, message="wave 2 to soak")
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert raw(zk, "/config/topics/d") is None  # wave 3 had not gone out
    wait_for(
        lambda: zk.exists(f"{ROLLOUTS}/{rollout_id}/owner") is None,
        timeout=30,
        message="the session to expire",
    )
    resumed = cli(zk_connect, "rollout", "resume", rollout_id, "-o", "json")
    assert resumed.returncode == 0, resumed.stderr
    report = document(resumed)
    assert report["outcome"] == "completed"
    assert [(s.get("wave"), s["part"]) for s in report["steps"]] == [
        (2, "wait"),
        (2, "soak"),
        (3, "write"),
        (3, "wait"),
        (3, "soak"),
    ]
    for topic in TOPICS:
        assert config(zk, f"/config/topics/{topic}") == {"retention.ms": "86400000"}
    assert records(zk)[rollout_id]["state"] == "completed" and open_claims(zk) == []


# -- races and kills ------------------------------------------------------------------------------------


def test_two_rollouts_racing_on_one_entity(zk_connect, zk, fleet_of_three):
    before = snapshot(zk, ["/config/brokers/1", "/config/brokers/3"])
    first = start(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "1",
        "--soak", "4s",
    )  # fmt: skip
    rollout_id = _wait_for_soak(zk, first)
    # while it is open, a second rollout on the same entity is refused, and nothing of it is written
    second = cli(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=9000000", "--canary", "3"
    )
    assert second.returncode == 5, second.stderr
    assert f"brokers/<default> is part of open rollout {rollout_id}" in second.stderr
    assert raw(zk, "/config/brokers/3") == before["/config/brokers/3"]
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert config(zk, DEFAULT) == {"log.retention.ms": "7200000"}
    # two started at the same moment: exactly one gets the claims, the other writes nothing
    racers = [
        start(zk_connect, "alter", "--broker-defaults", "--add-config", f"log.retention.ms={value}",
              "--canary", canary, "--soak", "3s")
        for value, canary in (("8000000", "1"), ("8100000", "3"))
    ]  # fmt: skip
    results = [(p.wait(timeout=120), p.communicate()) for p in racers]
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 5], [0, 0]), results
    if codes == [0, 5]:
        winner = next(i for i, (code, _) in enumerate(results) if code == 0)
        assert (
            "open rollout" in results[1 - winner][1][1] or "at the same moment" in results[1 - winner][1][1]
        )
        assert config(zk, DEFAULT) == {"log.retention.ms": ("8000000", "8100000")[winner]}
    assert snapshot(zk, ["/config/brokers/1", "/config/brokers/3"]) == before
    assert open_records(zk) == {} and open_claims(zk) == []


def test_a_concurrent_writer_stops_the_canary_and_is_never_overwritten(zk_connect, zk, fleet_of_three):
    zk.create("/config/brokers/1", FOREIGN_1, makepath=True)
    before = raw(zk, "/config/brokers/1")
    process = start(
        zk_connect, "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", "1",
        "--soak", "3s", "-o", "json",
    )  # fmt: skip
    _wait_for_soak(zk, process)
    other = cli(zk_connect, "alter", "--broker-defaults", "--add-config", "log.cleaner.threads=3")
    assert other.returncode == 0, other.stderr
    out, err = process.communicate(timeout=120)
    assert process.returncode == 11, err
    assert "brokers/<default> changed while the canary ran" in json.loads(out)["failure"]
    assert config(zk, DEFAULT) == {"log.cleaner.threads": "3"}  # the other writer's change stands
    assert raw(zk, "/config/brokers/1") == before


def _settled(zk: KazooClient, connect: str, before: dict[str, bytes | None], after_ok) -> str:
    """After a SIGKILL: an open record says what to undo (abort restores the before state), or the
    state is fully before or fully after. Returns which."""
    still_open = open_records(zk)
    if still_open:
        (rollout_id,) = still_open
        aborted = cli(connect, "rollout", "abort", rollout_id)
        assert aborted.returncode == 0, aborted.stderr
        assert snapshot(zk, list(before)) == before
        return "open, aborted"
    now = snapshot(zk, list(before))
    if now == before:
        return "before"
    assert after_ok(now), now
    return "after"


def test_nothing_is_half_done_after_a_sigkill_at_random_moments(zk_connect, zk, fleet_of_three, tmp_path):
    rng = random.Random(int(os.environ.get("ROLLOUT_KILL_SEED", "20250612")))
    zk.create("/config/brokers/1", FOREIGN_1, makepath=True)
    zk.create(DEFAULT, FOREIGN_DEFAULT, makepath=True)
    paths = ["/config/brokers/1", "/config/brokers/3", DEFAULT]
    outcomes = []
    for attempt in range(5):
        before = snapshot(zk, paths)
        value = str(3_600_000 + attempt * 1000)
        process = start(
            zk_connect, "alter", "--broker-defaults", "--add-config", f"log.retention.ms={value}",
            "--canary", "1,3", "--soak", "1s", "--check", "sleep 0.3",
        )  # fmt: skip
        time.sleep(rng.uniform(0.3, 3.0))
        process.send_signal(signal.SIGKILL)
        process.communicate()

        def promoted(now, before=before, value=value):
            default = json.loads(now[DEFAULT])["config"]
            return (
                now["/config/brokers/1"] == before["/config/brokers/1"]
                and now["/config/brokers/3"] == before["/config/brokers/3"]
                and default == {**json.loads(before[DEFAULT])["config"], "log.retention.ms": value}
            )

        outcomes.append(_settled(zk, zk_connect, before, promoted))
    # the same for waves: a plan of topics and a user with a client, killed at random moments
    topics = [f"k{i}" for i in range(6)]
    wave_paths = [f"/config/topics/{t}" for t in topics] + [
        "/config/users/carol",
        "/config/users/carol/clients/x",
    ]
    for attempt in range(4):
        before = snapshot(zk, wave_paths)
        value = str(86_400_000 + attempt)
        extra = f"users:\n  carol:\n    producer_byte_rate: {1000 + attempt}\n    clients:\n      x: {{consumer_byte_rate: 2048}}\n"
        desired = _desired(tmp_path, dict.fromkeys(topics, value), extra)
        process = start(
            zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "4", "--check", "sleep 0.2"
        )
        time.sleep(rng.uniform(0.3, 3.5))
        process.send_signal(signal.SIGKILL)
        process.communicate()

        def completed(now, value=value, attempt=attempt):
            return all(
                json.loads(now[f"/config/topics/{t}"])["config"] == {"retention.ms": value} for t in topics
            ) and json.loads(now["/config/users/carol"])["config"] == {
                "producer_byte_rate": str(1000 + attempt)
            }

        outcomes.append(_settled(zk, zk_connect, before, completed))
    assert open_records(zk) == {} and open_claims(zk) == []
    print("outcomes after SIGKILL:", outcomes)
