"""Time travel against real ZooKeeper and real ``configctl listener run`` processes (see docs/investigating.md).

One fleet of two listeners with a shared state directory lives through a known sequence of
changes (a broker default, a topic, a per-broker override, a secret), broker 2 killed with
SIGKILL in between (its applied log torn) and restarted; then ``describe --effective --at``,
``blame``, ``diff`` and ``history --since`` must give exact answers, refuse a moment beyond the
horizon with exit 13, and never show a secret.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, child_env, run_cli, wait_for

from configctl import applied
from configctl.timeref import iso

pytestmark = pytest.mark.zk

SECRET = "hunter2-secret-value"
PASSWORD_KEY = "listener.name.internal.ssl.key.password"
ENCODER = {"CONFIGCTL_PASSWORD_ENCODER_SECRET": "example-cluster-encoder-secret"}


def _listener(connect: str, broker_id: int, state: Path, log: Path) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", connect, "--broker-id",
        str(broker_id), "--server-properties", str(REPO_ROOT / "examples" / f"server-{broker_id}.properties"),
        "--state-dir", str(state),
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "a"),
        env=child_env(),
    )


def _applied_change(connect: str, broker_id: int) -> int:
    result = run_cli("--zookeeper", connect, "status", "-o", "json")
    for broker in json.loads(result.stdout)["brokers"]:
        if broker["broker_id"] == broker_id and broker["live"]:
            return broker["last_applied_change"]
    return -2


class Fleet:
    def __init__(self, connect: str, state: Path) -> None:
        self.connect, self.state = connect, state
        self.changes: dict[str, int] = {}

    def cli(self, *args: str, env: dict[str, str] | None = None):
        if args[0] in ("describe", "blame", "diff"):  # what the brokers ran: their applied logs
            args = (*args, "--applied-log", str(self.state))
        return run_cli("--zookeeper", self.connect, *args, env=env)

    def alter(self, name: str, *args: str, env: dict[str, str] | None = None) -> int:
        result = self.cli("alter", *args, "--reason", name, "-o", "json", env=env)
        assert result.returncode in (0, 10), result.stderr
        self.changes[name] = json.loads(result.stdout)["change_number"]
        return self.changes[name]

    def json(self, *args: str, expect: int = 0) -> Any:
        result = self.cli(*args, "-o", "json")
        assert result.returncode == expect, (result.returncode, result.stderr, result.stdout)
        return json.loads(result.stdout)

    def history(self, *selector: str) -> list[dict]:
        return self.json("history", *selector)


@pytest.fixture(scope="module")
def fleet(zk_server, _zk_admin, tmp_path_factory) -> Iterator[Fleet]:
    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    _zk_admin.create(chroot)
    connect = f"{zk_server.connect_string}{chroot}"
    work = tmp_path_factory.mktemp("travel")
    state = work / "state"
    processes: dict[int, subprocess.Popen] = {}
    try:
        for broker_id in (1, 2):
            processes[broker_id] = _listener(connect, broker_id, state, work / f"listener-{broker_id}.log")
        wait_for(lambda: _applied_change(connect, 1) > -2 and _applied_change(connect, 2) > -2, timeout=90)
        f = Fleet(connect, state)
        f.alter("c0", "--broker-defaults", "--add-config", "log.retention.ms=10800000", "--wait", "30")
        f.alter("c1", "--topic", "orders", "--add-config", "retention.ms=1000", "--wait", "30")
        processes[2].send_signal(signal.SIGKILL)
        processes[2].wait(timeout=30)
        segment = applied.segments(state, 2)[2][-1]
        with segment.open("ab") as handle:  # what a SIGKILL mid-write leaves behind
            handle.write(b'{"v":1,"kind":"applied","broker_id":2,"change_number":99,"entity_pa')
        f.alter("c2", "--broker-defaults", "--add-config", "log.retention.ms=7200000")
        f.alter("c3", "--broker", "1", "--add-config", "log.retention.ms=3600000")
        f.alter("c4", "--broker", "1", "--add-config", f"{PASSWORD_KEY}={SECRET}", env=ENCODER)
        processes[2] = _listener(connect, 2, state, work / "listener-2.log")
        wait_for(
            lambda: min(_applied_change(connect, 1), _applied_change(connect, 2)) >= f.changes["c4"],
            timeout=90,
            message="both brokers at c4",
        )
        f.alter("c5", "--topic", "orders", "--add-config", "retention.ms=2000", "--wait", "30")
        f.alter("q1", "--user", "alice", "--add-config", "producer_byte_rate=1024", "--wait", "30")
        f.alter(
            "q2",
            "--user-defaults",
            "--add-config",
            "producer_byte_rate=2048,consumer_byte_rate=4096",
            "--wait",
            "30",
        )
        for value in ("1", "2", "3"):
            result = f.cli(
                "alter", "--topic", "trimmed", "--add-config", f"segment.ms={value}000000",
                env={"CONFIGCTL_HISTORY_LIMIT": "2"},
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
        yield f
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        with contextlib.suppress(Exception):
            _zk_admin.delete(chroot, recursive=True)


def _configs(document: dict) -> dict[str, dict]:
    return {entry["name"]: entry for entry in document["configs"]}


def _time_of(fleet: Fleet, selector: tuple[str, ...], version: int) -> int:
    return next(r["time_ms"] for r in fleet.history(*selector) if r["version"] == version)


def test_describe_at_a_change_or_a_time_answers_as_history_wrote_it(fleet):
    c = fleet.changes
    orders = ("--broker", "1", "--topic", "orders")
    first = fleet.json("describe", "--effective", *orders, "--at", f"change:{c['c1']}")
    assert _configs(first)["retention.ms"]["value"] == "1000"
    assert _configs(first)["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert first["at_ms"] == _time_of(fleet, ("--topic", "orders"), 0)
    assert first["applied_log"]["covered"] is True
    t5 = _time_of(fleet, ("--topic", "orders"), 1)
    just_before = fleet.json("describe", "--effective", *orders, "--at", iso(t5 - 1))
    assert _configs(just_before)["retention.ms"]["value"] == "1000" and just_before["at_ms"] == t5 - 1
    # at the very moment of the write the broker had not applied it yet: it ran 1000, history says 2000
    instant = fleet.json("describe", "--effective", *orders, "--at", iso(t5))
    assert _configs(instant)["retention.ms"]["value"] == "1000"
    assert _configs(instant)["retention.ms"]["stored"] == "2000"
    # as of change c5: once broker 1 applied it
    after = fleet.json("describe", "--effective", *orders, "--at", f"change:{c['c5']}")
    assert (
        _configs(after)["retention.ms"]["value"] == "2000" and "stored" not in _configs(after)["retention.ms"]
    )
    before_topic = fleet.json("describe", "--effective", *orders, "--at", f"change:{c['c0']}")
    assert _configs(before_topic)["retention.ms"]["value"] == "10800000"  # the broker default's fallback

    def broker(broker_id: int, change: str) -> dict:
        at = ("--at", f"change:{c[change]}")
        return _configs(fleet.json("describe", "--effective", "--broker", str(broker_id), *at))[
            "log.retention.ms"
        ]

    assert (broker(1, "c2")["value"], broker(1, "c2")["source"]) == (
        "7200000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    )
    assert (broker(1, "c3")["value"], broker(1, "c3")["source"]) == ("3600000", "DYNAMIC_BROKER_CONFIG")
    assert broker(2, "c0")["value"] == "10800000"


def test_where_the_applied_log_says_the_broker_ran_otherwise_it_is_shown_and_flagged(fleet):
    # broker 2 was killed before c2 and restarted after c4: at c3 it still ran c0's value
    document = fleet.json("describe", "--effective", "--broker", "2", "--at", f"change:{fleet.changes['c3']}")
    entry = _configs(document)["log.retention.ms"]
    assert entry["value"] == "10800000" and entry["stored"] == "7200000"
    (difference,) = [d for d in document["applied_log"]["differences"] if d["name"] == "log.retention.ms"]
    assert difference["written"] == "7200000" and difference["ran"] == "10800000"
    assert difference["change_number"] == fleet.changes["c0"]
    # once restarted it caught up: no difference at c5
    now = fleet.json("describe", "--effective", "--broker", "2", "--at", f"change:{fleet.changes['c5']}")
    assert _configs(now)["log.retention.ms"]["value"] == "7200000"
    assert now["applied_log"]["differences"] == []


def test_the_torn_line_left_by_sigkill_is_skipped_and_the_log_goes_on(fleet):
    stats = applied.ReadStats()
    records = list(applied.read(fleet.state, 2, stats))
    assert stats.skipped == 1
    assert [r.kind for r in records].count("load") == 2  # the first start and the restart
    assert fleet.changes["c5"] in [r.change_number for r in records if r.kind == "applied"]
    assert 99 not in [r.change_number for r in records]


def test_blame_gives_the_chain_of_writes_newest_first_with_when_each_broker_applied_it(fleet):
    c = fleet.changes
    topic = fleet.json("blame", "--broker", "1", "--topic", "orders", "--key", "retention.ms")
    assert (topic["entity_path"], topic["key"], topic["value"], topic["source"]) == (
        "topics/orders",
        "retention.ms",
        "2000",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert [(link["change_number"], link["version"], link["reason"]) for link in topic["chain"]] == [
        (c["c5"], 1, "c5"),
        (c["c1"], 0, "c1"),
        (c["c0"], 0, "c0"),  # the <default> it fell back to before c1
    ]
    assert [link["layer"] for link in topic["chain"]] == ["topics/orders", "topics/orders", "<default>"]
    assert all(link["applied_at_ms"] >= link["time_ms"] for link in topic["chain"])
    own = fleet.json("blame", "--broker", "1", "--key", "log.retention.ms")
    assert own["value"] == "3600000" and own["layer"] == "per-broker"
    assert [(x["change_number"], x["layer"]) for x in own["chain"]] == [
        (c["c3"], "per-broker"),
        (c["c2"], "<default>"),
        (c["c0"], "<default>"),
    ]
    other = fleet.json("blame", "--broker", "2", "--key", "log.retention.ms", "--at", f"change:{c['c2']}")
    assert [x["change_number"] for x in other["chain"]] == [c["c2"], c["c0"]]
    assert other["chain"][0]["applied_at_ms"] > other["chain"][0]["time_ms"]  # applied once restarted


def test_diff_two_brokers_and_one_broker_at_two_moments(fleet):
    c = fleet.changes
    payments = ("--topic", "payments")
    differ = fleet.json("diff", "--broker", "1", "--broker", "2", *payments, expect=2)
    assert [(d["key"], d["left"], d["right"]) for d in differ["differences"]] == [
        ("retention.ms", "3600000", "7200000")
    ]
    same = fleet.json("diff", "--broker", "1", "--broker", "2", *payments, "--at", f"change:{c['c2']}")
    assert same["differences"] == []
    moments = fleet.json(
        "diff", "--broker", "1", "--at", f"change:{c['c2']}", "--at", f"change:{c['c3']}", expect=2
    )
    changed = {d["key"]: (d["left"], d["right"]) for d in moments["differences"]}
    assert changed["log.retention.ms"] == ("7200000", "3600000")
    assert moments["left"]["at_ms"] < moments["right"]["at_ms"]
    since = fleet.json("diff", "--broker", "2", "--at", f"change:{c['c0']}", expect=2)  # against now
    assert {d["key"]: (d["left"], d["right"]) for d in since["differences"]} == {
        "log.retention.ms": ("10800000", "7200000")
    }
    assert since["right"]["at_ms"] is None


def test_quotas_at_a_moment_and_their_blame_resolve_through_the_quota_levels(fleet):
    c = fleet.changes
    alice = ("--broker", "1", "--user", "alice")
    before = _configs(fleet.json("describe", "--effective", *alice, "--at", f"change:{c['c5']}"))
    assert before["producer_byte_rate"]["value"] == "9223372036854775807"  # Kafka's unlimited default
    at_q1 = _configs(fleet.json("describe", "--effective", *alice, "--at", f"change:{c['q1']}"))
    assert (at_q1["producer_byte_rate"]["value"], at_q1["producer_byte_rate"]["source"]) == (
        "1024",
        "users/alice",
    )
    at_q2 = _configs(fleet.json("describe", "--effective", *alice, "--at", f"change:{c['q2']}"))
    assert at_q2["producer_byte_rate"]["value"] == "1024"  # alice's own level wins over <default>
    assert (at_q2["consumer_byte_rate"]["value"], at_q2["consumer_byte_rate"]["source"]) == (
        "4096",
        "users/<default>",
    )
    producer = fleet.json("blame", *alice, "--key", "producer_byte_rate")
    assert [link["reason"] for link in producer["chain"]] == ["q1"]  # q2 never moved alice's value
    consumer = fleet.json("blame", *alice, "--key", "consumer_byte_rate")
    assert [(link["reason"], link["layer"]) for link in consumer["chain"]] == [("q2", "users/<default>")]


def test_a_moment_beyond_the_horizon_is_refused_with_exit_13_naming_it(fleet):
    oldest = _time_of(fleet, ("--topic", "trimmed"), 1)  # version 0 was trimmed (history limit 2)
    result = fleet.cli("describe", "--effective", "--broker", "1", "--topic", "trimmed", "--at", "-3650d")
    assert result.returncode == 13, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"topics/trimmed reaches back to {iso(oldest)}" in result.stderr
    blame = fleet.cli(
        "blame", "--broker", "1", "--topic", "trimmed", "--key", "segment.ms", "--at", iso(oldest - 1)
    )
    assert blame.returncode == 13, blame.stderr
    bad = fleet.cli("describe", "--effective", "--broker", "1", "--at", "yesterday")
    assert bad.returncode == 2 and "change:N" in bad.stderr and bad.stderr.count("\n") == 1


def test_history_since_lists_every_change_across_the_fleet_newest_first(fleet):
    c1_time = _time_of(fleet, ("--topic", "orders"), 0)
    feed = fleet.json("history", "--since", iso(c1_time))
    reasons = [(entry["entity_path"], entry["reason"]) for entry in feed if entry["reason"].startswith("c")]
    assert reasons == [
        ("topics/orders", "c5"),
        ("brokers/1", "c4"),
        ("brokers/1", "c3"),
        ("brokers/<default>", "c2"),
        ("topics/orders", "c1"),
    ]
    assert next(e for e in feed if e["reason"] == "c4")["keys"] == [PASSWORD_KEY]
    window = fleet.json(
        "history", "--since", f"change:{fleet.changes['c2']}", "--until", f"change:{fleet.changes['c3']}"
    )
    assert [e["reason"] for e in window] == ["c3", "c2"]


def test_only_overrides_shows_the_dynamic_values_alone(fleet):
    document = fleet.json("describe", "--effective", "--broker", "1", "--only-overrides")
    assert {e["name"]: e["source"] for e in document["configs"]} == {
        "log.retention.ms": "DYNAMIC_BROKER_CONFIG",
        PASSWORD_KEY: "DYNAMIC_BROKER_CONFIG",
    }


def test_secrets_never_appear_in_clear(fleet):
    for path in fleet.state.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    outputs = [
        fleet.cli("blame", "--broker", "1", "--key", PASSWORD_KEY, "-o", "json"),
        fleet.cli(
            "diff", "--broker", "1", "--at", f"change:{fleet.changes['c3']}", "--at", "-0s", "-o", "json"
        ),
        fleet.cli("describe", "--effective", "--broker", "1", "--at", "-0s", "-o", "json"),
        fleet.cli("history", "--since", "-1d", "-o", "json"),
    ]
    for result in outputs:
        assert result.returncode in (0, 2), result.stderr
        assert SECRET not in result.stdout + result.stderr
    blame = json.loads(outputs[0].stdout)
    assert blame["value"] == "******" and blame["chain"][0]["change_number"] == fleet.changes["c4"]
    (difference,) = [d for d in json.loads(outputs[1].stdout)["differences"] if d["key"] == PASSWORD_KEY]
    assert difference["right"] == "******" and difference["left"] is None
    logged = [
        r
        for r in applied.read(fleet.state, 1)
        if r.kind == "applied" and r.entity_path == "brokers/1" and r.keys[0].key == PASSWORD_KEY
    ]
    assert logged and logged[0].keys[0].new.startswith("sha256:")
    assert os.path.isdir(fleet.state / "applied")


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("describe", "--broker", "1", "--at", "-1h"), 2, "needs --effective"),
        (("describe", "--effective", "--broker", "1", "--at", "change:99999"), 1, "has not happened yet"),
        (("blame", "--broker", "1", "--key", "no.such.key"), 1, "has no config 'no.such.key'"),
        (("blame", "--broker", "7", "--key", "log.retention.ms"), 6, "broker 7 has no running listener"),
        (("diff", "--broker", "1"), 2, "give --broker A --broker B"),
        (("diff", "--broker", "1", "--at", "-1h", "--at", "-2h", "--at", "-3h"), 2, "give --broker A"),
        (("diff", "--broker", "1", "--broker", "2", "--at", "-1h", "--at", "-2h"), 2, "give --broker A"),
        (("history", "--until", "-1h"), 2, "--until needs --since"),
        (("history", "--since", "soon"), 2, "change:N"),
    ],
)
def test_bad_input_is_one_line_with_a_truthful_exit_status(fleet, args, code, says):
    result = run_cli("--zookeeper", fleet.connect, *args)
    assert result.returncode == code, result.stderr
    assert says in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_an_applied_log_directory_that_is_not_there_is_one_line(fleet, tmp_path):
    at = ("--at", f"change:{fleet.changes['c1']}")
    missing = run_cli(
        "--zookeeper", fleet.connect, "describe", "--effective", "--broker", "1", *at, "--applied-log", str(tmp_path / "x")
    )  # fmt: skip
    assert missing.returncode == 1 and "no such directory" in missing.stderr
    empty = run_cli(
        "--zookeeper", fleet.connect, "describe", "--effective", "--broker", "1", *at, "--applied-log", str(tmp_path), "-o", "json"
    )  # fmt: skip
    assert empty.returncode == 0 and json.loads(empty.stdout)["applied_log"] is None


def test_the_fleet_timeline_shows_how_long_the_killed_broker_disagreed(fleet):
    from configctl.travel.timeline import intervals

    found = [
        i
        for i in intervals(applied.read(fleet.state))
        if (i.entity_path, i.key) == ("brokers/<default>", "log.retention.ms")
        and i.opened_by_change == fleet.changes["c2"]
    ]
    (interval,) = found
    assert interval.values == {"7200000": [1], "10800000": [2]}
    assert interval.closed_by_change == fleet.changes["c4"]  # broker 2's restart caught up
    assert interval.duration_ms > 0


def test_the_tables_people_read(fleet):
    c = fleet.changes
    described = fleet.cli("describe", "--effective", "--broker", "2", "--at", f"change:{c['c3']}")
    assert described.returncode == 0, described.stderr
    assert "as of" in described.stdout and "its applied log covers it" in described.stdout
    assert "differs log.retention.ms: history says 7200000, the broker ran 10800000" in " ".join(
        described.stdout.split()
    )
    blamed = fleet.cli("blame", "--broker", "1", "--key", "log.retention.ms")
    assert blamed.returncode == 0 and "layer per-broker" in blamed.stdout and "c3" in blamed.stdout
    differ = fleet.cli("diff", "--broker", "1", "--broker", "2", "--topic", "payments")
    assert differ.returncode == 2 and "retention.ms" in differ.stdout
    same = fleet.cli(
        "diff", "--broker", "1", "--broker", "2", "--topic", "payments", "--at", f"change:{c['c2']}"
    )
    assert same.returncode == 0 and "No difference" in same.stdout
    feed = fleet.cli("history", "--since", f"change:{c['c2']}", "--until", f"change:{c['c3']}")
    assert feed.returncode == 0 and "brokers/<default>" in feed.stdout
