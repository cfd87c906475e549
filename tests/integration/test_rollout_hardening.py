"""Rollouts fail closed, and their options are refused as the command line is read (issue 23).

Real ZooKeeper (the session server, a chroot per test); the records are damaged with the raw
kazoo client, as an attacker or a broken tool would.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
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


# -- an open rollout whose record cannot be read fails closed ----------------------------------------

FOREIGN_A = b'{"version":1,"config":{"segment.ms":"600000","retention.ms":"1000"}}'


def _open_records(zk: KazooClient) -> dict[str, dict]:
    found = {}
    for name in zk.get_children(ROLLOUTS) if zk.exists(ROLLOUTS) else []:
        try:
            found[name] = json.loads(zk.get(f"{ROLLOUTS}/{name}")[0])
        except ValueError:
            found[name] = {}
    return found


def _claims(zk: KazooClient) -> dict[str, str]:
    if not zk.exists(CLAIMS):
        return {}
    return {n: json.loads(zk.get(f"{CLAIMS}/{n}")[0])["rollout"] for n in zk.get_children(CLAIMS)}


def _stopped_rollout(zk_connect: str, zk: KazooClient, tmp_path: Path) -> tuple[str, Path]:
    """A wave rollout left open (exit 12) after its first wave (topics/a) went out: no broker runs
    here, so the check is what fails the wave."""
    zk.create("/config/topics/a", FOREIGN_A, makepath=True)
    desired = _desired(tmp_path, {"a": "86400000", "b": "86400000"})
    stopped = cli(zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "2", "--check", "exit 1")
    assert stopped.returncode == 12, stopped.stderr
    (rollout_id,) = _open_records(zk)
    assert json.loads(zk.get("/config/topics/a")[0])["config"] == {"retention.ms": "86400000"}
    return rollout_id, desired


def _damage(zk: KazooClient, rollout_id: str, field: str, value: object) -> None:
    path = f"{ROLLOUTS}/{rollout_id}"
    document = json.loads(zk.get(path)[0])
    document[field] = value
    zk.set(path, json.dumps(document).encode())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("created_ms", "yesterday"),
        ("state", ["running"]),
        ("options", "fast"),
        ("step", {"step": "wave", "wave": "two"}),
        ("waves", 10**30),
        ("waves", 7),  # a number, but not the plan's
        ("step", {"step": "wave", "wave": 3, "activity": "failed"}),  # past the last wave
        ("events", [{"at_ms": "now", "text": 3}]),
    ],
)
def test_an_unreadable_open_rollout_keeps_its_claims_and_abort_force_finishes_it(
    zk_connect, zk: KazooClient, tmp_path, field, value
):
    rollout_id, desired = _stopped_rollout(zk_connect, zk, tmp_path)
    claims = _claims(zk)
    assert set(claims.values()) == {rollout_id} and len(claims) == 2
    _damage(zk, rollout_id, field, value)
    record_unreadable = (field, value) != ("waves", 7)  # else the record is readable, its plan disagrees
    damaged = zk.get(f"{ROLLOUTS}/{rollout_id}")[0]
    written = zk.get("/config/topics/a")[0]

    # a second rollout on the same entities is refused: the unreadable one keeps its claims
    second = cli(zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "1")
    assert second.returncode == 5, second.stderr
    assert second.stderr.count("\n") == 1 and rollout_id in second.stderr
    if record_unreadable:
        assert "whose record cannot be read" in second.stderr
        assert f"configctl rollout abort {rollout_id} --force" in second.stderr
    assert _claims(zk) == claims and set(_open_records(zk)) == {rollout_id}

    # resume, show and a plain abort refuse it in one line, naming the command that ends it
    for command in (["resume"], ["show"], ["abort"]):
        refused = cli(zk_connect, "rollout", *command, rollout_id)
        assert refused.returncode == 12, (command, refused.stderr)
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert f"abort {rollout_id} --force" in refused.stderr
    assert zk.get(f"{ROLLOUTS}/{rollout_id}")[0] == damaged
    assert zk.get("/config/topics/a")[0] == written
    listed = json.loads(cli(zk_connect, "rollout", "list", "--open", "-o", "json").stdout)
    assert [item["id"] for item in listed] == [rollout_id]
    if record_unreadable:
        assert "rollout record is malformed" in listed[0]["problem"]

    # abort --force ends it, restoring what its undo holds, and says what could not be read
    ended = cli(zk_connect, "rollout", "abort", rollout_id, "--force", "-o", "json")
    assert ended.returncode == 0, ended.stderr
    report = json.loads(ended.stdout)
    assert report["outcome"] == "aborted" and report["restored"] == ["topics/a"]
    assert report["not_restored"] == [] and any(field in item for item in report["unreadable"])
    assert zk.get("/config/topics/a")[0] == FOREIGN_A and zk.exists("/config/topics/b") is None
    record = json.loads(zk.get(f"{ROLLOUTS}/{rollout_id}")[0])
    assert record["state"] == "aborted" and _claims(zk) == {}
    assert zk.get_children(f"{ROLLOUTS}/{rollout_id}") == []
    shown = cli(zk_connect, "rollout", "show", rollout_id, "-o", "json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["state"] == "aborted"
    # and its entities are free again
    again = cli(zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "1", "-o", "json")
    assert again.returncode == 0, again.stderr


def test_an_unreadable_undo_entry_is_named_as_not_restored_and_the_rest_is(zk_connect, zk, tmp_path):
    zk.create("/config/topics/c", b'{"version":1,"config":{"retention.ms":"5"}}', makepath=True)
    rollout_id, _ = _stopped_rollout(zk_connect, zk, tmp_path)
    # the first wave wrote topics/a; forge a second undo entry the record cannot read
    (name,) = [n for n in zk.get_children(f"{ROLLOUTS}/{rollout_id}") if n.startswith("undo-")]
    chunk_path = f"{ROLLOUTS}/{rollout_id}/{name}"
    chunk = json.loads(zk.get(chunk_path)[0])
    chunk["entries"].append({"path": "topics/c", "previous_version": "zero"})
    zk.set(chunk_path, json.dumps(chunk).encode())

    refused = cli(zk_connect, "rollout", "abort", rollout_id)
    assert refused.returncode == 12 and refused.stderr.count("\n") == 1
    assert f"abort {rollout_id} --force" in refused.stderr
    ended = cli(zk_connect, "rollout", "abort", rollout_id, "--force")
    assert ended.returncode == 8, ended.stderr
    assert ended.stderr.count("\n") == 1 and "not restored: topics/c" in ended.stderr
    assert "restored to their previous bytes: topics/a" in ended.stderr
    assert zk.get("/config/topics/a")[0] == FOREIGN_A
    assert json.loads(zk.get(f"{ROLLOUTS}/{rollout_id}")[0])["state"] == "aborted" and _claims(zk) == {}
    assert zk.get_children(f"{ROLLOUTS}/{rollout_id}") == []


def test_a_record_that_is_not_even_json_is_finished_by_abort_force(zk_connect, zk, tmp_path):
    rollout_id, _ = _stopped_rollout(zk_connect, zk, tmp_path)
    zk.set(f"{ROLLOUTS}/{rollout_id}", b"\x00garbage")
    ended = cli(zk_connect, "rollout", "abort", rollout_id, "--force", "-o", "json")
    assert ended.returncode == 0, ended.stderr
    assert json.loads(ended.stdout)["restored"] == ["topics/a"]
    assert zk.get("/config/topics/a")[0] == FOREIGN_A and _claims(zk) == {}


def test_a_damaged_record_that_still_says_it_ended_holds_no_claim(zk_connect, zk, tmp_path):
    desired = _desired(tmp_path, {"a": "86400000"})
    done = cli(zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "1", "-o", "json")
    assert done.returncode == 0, done.stderr
    rollout_id = json.loads(done.stdout)["id"]
    # a claim left behind (a finish cut short), then the record damaged: its state still says it ended
    zk.create(f"{CLAIMS}/topics%2Fa", json.dumps({"rollout": rollout_id}).encode(), makepath=True)
    _damage(zk, rollout_id, "created_ms", "yesterday")
    changed = _desired(tmp_path, {"a": "172800000"})
    again = cli(zk_connect, "apply", "-f", str(changed), "--yes", "--waves", "1")
    assert again.returncode == 0, again.stderr
    ended = cli(zk_connect, "rollout", "abort", rollout_id, "--force")
    assert ended.returncode == 5 and "already ended (completed)" in ended.stderr


# -- the health check, through a real rollout -------------------------------------------------------


def test_a_rollouts_check_sees_no_secret_is_judged_by_its_status_and_leaves_nothing_running(
    zk_connect, zk: KazooClient, tmp_path
):
    seen, pids = tmp_path / "env", tmp_path / "pids"
    desired = _desired(tmp_path, {"a": "86400000"})
    secret_env = {"CONFIGCTL_PASSWORD_ENCODER_SECRET": "encoder-secret", "CONFIGCTL_ZK_SASL_PASSWORD": "sasl"}
    started = time.monotonic()
    done = cli(
        zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "1", "--check-timeout", "30",
        "--check", f'env > "{seen}"; setsid sleep 60 & echo $! > "{pids}"; echo healthy',
        "-o", "json", env=secret_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 25  # judged when its shell exited, not at the timeout
    check = next(s for s in json.loads(done.stdout)["steps"] if s["part"] == "check")
    assert check["ok"] and check["exit_code"] == 0 and check["output"] == "healthy\n"
    text = seen.read_text()
    assert "encoder-secret" not in text and "CONFIGCTL_ZK_SASL_PASSWORD" not in text
    assert "CONFIGCTL_ROLLOUT=" in text and "CONFIGCTL_ZOOKEEPER=" in text
    sleeper = int(pids.read_text())
    deadline = time.monotonic() + 5
    while not _gone(sleeper):
        assert time.monotonic() < deadline, "the check's detached child outlived it"
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_rollouts_check_that_times_out_is_reported_against_its_configured_timeout(zk_connect, tmp_path):
    desired = _desired(tmp_path, {"a": "86400000"})
    stopped = cli(
        zk_connect, "apply", "-f", str(desired), "--yes", "--waves", "1", "--check-timeout", "1.5",
        "--check", "sleep 30", "-o", "json",
    )  # fmt: skip
    assert stopped.returncode == 12, stopped.stderr
    report = json.loads(stopped.stdout)
    assert "the check did not finish within its timeout (1.5s) and was killed" in report["failure"]
