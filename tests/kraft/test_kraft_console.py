"""``configctl serve`` on real Kafka 4.4 KRaft clusters: the console over HTTP, no ZooKeeper.

The server is started with the CLI (``--bootstrap-server``) on a free port and asked as a browser
or a script would. A KRaft cluster has no watches, so the console asks again every
``POLL_INTERVAL`` seconds: a write made by configctl or by Kafka's own kafka-configs.sh reaches an
open ``/events`` stream within one poll. ``/api/status`` is ``configctl status -o json``; the Fleet
page shows every node as the cluster reports it (brokers registered, fenced or no longer
registered; the controller quorum); an entity's verdicts are what each broker answers when asked
itself, never "applied" for a broker that did not answer. A soaking canary (its record in the
cluster) is followed on the Rollouts page and aborted through the console.
"""

from __future__ import annotations

import contextlib
import html
import http.client
import json
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KAFKA4_HOME, KRaftFleet
from helpers import child_env, free_port, run_cli, wait_for

from configctl.console.polling import POLL_INTERVAL
from configctl.console.views import entity_url
from configctl.entities import Entity, EntityType
from configctl.localkraft import KRaftCluster

TOKEN = "s3cret-token-for-the-console-0123"
HOSTILE = "<script>alert(1)</script>"
CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
"""Kafka 4's kafka-cluster.sh (``unregister --id N``)."""
ONE_POLL = POLL_INTERVAL + 10.0
"""How long a change may take to reach the console: one poll, and the poll itself on a busy machine."""


class Console:
    """A running ``configctl serve`` on a KRaft cluster, and a few ways to ask it."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log

    def get(self, path: str) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request("GET", path)
            answer = connection.getresponse()
            return answer.status, answer.read()
        finally:
            connection.close()

    def json(self, path: str) -> object:
        status, body = self.get(path)
        assert status == 200, (path, status, body[:300], self.log.read_text()[-2000:])
        return json.loads(body)

    def page(self, path: str) -> str:
        status, body = self.get(path)
        assert status == 200, (path, status, body[:300], self.log.read_text()[-2000:])
        return body.decode()


def start(kraft: KRaftFleet, *args: str, env: dict[str, str | None] | None = None) -> Console:
    """``configctl --bootstrap-server <the cluster> serve`` on a free port, once it answers."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="configctl-serve-kraft-", suffix=".log")[1])
    command = [sys.executable, "-m", "configctl", "--bootstrap-server", kraft.bootstrap, "serve",
               "--bind", f"127.0.0.1:{port}", *args]  # fmt: skip
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=child_env(env))
    console = Console(process, port, log)

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"configctl serve exited {process.returncode}: {log.read_text()!r}")
        with contextlib.suppress(OSError):
            return console.get("/api/console")[0] == 200
        return False

    wait_for(up, timeout=60, message="configctl serve answering")
    return console


@pytest.fixture
def consoles() -> Iterator[list[Console]]:
    """Every console a test starts, stopped with SIGTERM (as an operator would) afterwards."""
    started: list[Console] = []
    yield started
    for console in started:
        if console.process.poll() is None:
            console.process.send_signal(signal.SIGTERM)
        try:
            console.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            console.process.kill()
            console.process.wait()
        console.log.unlink(missing_ok=True)


class Events:
    """An ``/events`` stream read on a thread: ``(event, data)`` as they come."""

    def __init__(self, console: Console) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=120)
        self.connection.request("GET", "/events", headers={"Accept": "text/event-stream"})
        self.answer = self.connection.getresponse()
        assert self.answer.status == 200
        self.queue: queue.Queue[tuple[str, dict]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next(10)[0] == "hello"

    def _read(self) -> None:
        event, data = "message", ""
        with contextlib.suppress(Exception):
            while True:
                line = self.answer.fp.readline()
                if not line:
                    return
                text = line.decode().rstrip("\n")
                if text.startswith("event: "):
                    event = text[7:]
                elif text.startswith("data: "):
                    data = text[6:]
                elif text == "" and data:
                    self.queue.put((event, json.loads(data)))
                    event, data = "message", ""

    def next(self, timeout: float) -> tuple[str, dict]:
        return self.queue.get(timeout=timeout)

    def until(self, wanted: str, timeout: float) -> float:
        """Seconds until a ``wanted`` event came (fails after ``timeout``)."""
        began = time.monotonic()
        deadline = began + timeout
        while True:
            event, _ = self.next(max(0.01, deadline - time.monotonic()))
            if event == wanted:
                return time.monotonic() - began

    def drain(self) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self.queue.get_nowait()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.answer.fp.raw._sock.shutdown(2)  # type: ignore[attr-defined]
        self.connection.close()


def cli(kraft: KRaftFleet, *args: str):
    """``configctl --bootstrap-server <the cluster> ARGS``, as an operator types it."""
    return run_cli("--bootstrap-server", kraft.bootstrap, *args)


_ROW = re.compile(r'<tr class="[^"]*" data-live="(yes|no)" data-node="(\d+)">(.*?)</tr>', re.S)
_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.S)


def nodes_shown(page: str) -> dict[int, list[str]]:
    """The Fleet page's node table as text: node id -> its cells (tags removed), then healthy yes/no."""
    found = {}
    for healthy, node, row in _ROW.findall(page):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in _CELL.findall(row)]
        found[int(node)] = [*cells, healthy]
    return found


def newest_row(page: str) -> str:
    """The first row of the Fleet page's newest changes (KRaft: the newest write of the history)."""
    body = page.index("<tbody>", page.index("<h2>Newest changes</h2>"))
    return page[body : page.index("</tr>", body)]


def test_the_fleet_page_is_every_node_as_the_cluster_reports_it(kraft_cluster, consoles):
    kraft = kraft_cluster
    consoles.append(console := start(kraft))
    assert f"no watches, asked again every {POLL_INTERVAL:g} s" in console.log.read_text()
    ours = console.json("/api/status")
    done = cli(kraft, "status", "-o", "json")
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    # configctl status -o json, the same document; the quorum's offsets move between two asks
    assert {k: v for k, v in ours.items() if k != "quorum"} == {
        k: v for k, v in theirs.items() if k != "quorum"
    }
    assert ours["mode"] == "kraft" and [b["broker_id"] for b in ours["brokers"]] == [1, 2]
    assert ours["quorum"]["leader_id"] == 100
    stats = console.json("/api/console")
    assert stats["watches"] == 0 and stats["polling_seconds"] == POLL_INTERVAL and stats["problem"] is None
    page = console.page("/")
    shown = nodes_shown(page)
    assert sorted(shown) == [1, 2, 100]
    for broker in (1, 2):  # node, roles, registration, address, answers, ..., quorum role, ..., healthy
        row = shown[broker]
        assert row[1] == "broker" and row[2] == "registered" and row[4] == "yes" and row[-1] == "yes", row
        assert row[3] in kraft.bootstrap.split(",")
        assert row[8] == "observer"
    assert shown[100][1] == "controller" and shown[100][8] == "leader" and shown[100][4] == "not asked"
    assert "metadata.version <strong>4.4" in page and "Kafka 4.4" in page
    assert "ZooKeeper" not in page  # nothing on this page is ZooKeeper's
    assert 'href="/rollouts"' in page  # the KRaft store keeps rollout records (its rollout topic)
    assert console.json("/api/rollouts") == json.loads(cli(kraft, "rollout", "list", "-o", "json").stdout)


def test_writes_by_configctl_and_by_kafkas_tool_reach_the_pages_within_a_poll(
    kraft_cluster, consoles, unique
):
    kraft = kraft_cluster
    topic = unique("console")
    kraft.create_topics(topic)
    consoles.append(console := start(kraft))
    events = Events(console)
    try:
        events.drain()
        done = cli(
            kraft, "alter", "--topic", topic, "--add-config", "retention.ms=7200000", "--reason", "OPS-1"
        )
        assert done.returncode == 0, done.stderr
        took = events.until("changes", ONE_POLL)
        print(f"configctl alter -> the console's changes event: {took:.1f} s")
        page = console.page("/")
        link = f'href="/entity/topics/{topic}"'
        assert link in page
        first = newest_row(page)
        assert link in first and "retention.ms" in first and "7200000" not in first  # keys, never values
        events.drain()
        theirs = kraft.config_command(
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--add-config",
            "retention.ms=3600000",
        )
        assert theirs.returncode == 0, theirs.stderr
        events.until("changes", ONE_POLL)
        page = console.page("/")
        first = newest_row(page)
        assert link in first and "written outside configctl" in first
    finally:
        events.close()
    document = console.json(f"/api/entity/topics/{topic}")
    assert document["verdicts_from"] == "brokers" and document["latest_change_number"] is None
    assert document["stored"]["config"] == {"retention.ms": "3600000"}
    assert {a["broker_id"]: a["status"] for a in document["applied"]} == {1: "applied", 2: "applied"}
    assert all(a["reason"] == "reported by the broker" for a in document["applied"])
    for report in document["effective"]:  # each broker's own answer, as Kafka's tool reads it
        assert report["truth"] == "reported"
        found = {c["name"]: (c["value"], c["source"]) for c in report["configs"]}
        assert found["retention.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG"), report["broker_id"]
    assert sorted(r["broker_id"] for r in document["effective"]) == [1, 2]
    described = kraft.config_command("--describe", "--entity-type", "topics", "--entity-name", topic)
    assert "retention.ms=3600000" in described.stdout
    history = document["history"]
    assert history[0]["written_outside_configctl"] is True and history[0]["version"] == 1
    assert history[1]["reason"] == "OPS-1" and history[1]["config"] == {"retention.ms": "7200000"}
    page = console.page(f"/entity/topics/{topic}")
    assert "Reported by the brokers (each asked itself)" in page and "/config/" not in page
    assert "written outside configctl" in page and "OPS-1" in page


def test_a_quota_entity_and_a_hostile_name_are_text_and_sigterm_stops_it(kraft_combined, consoles):
    kraft = kraft_combined
    done = cli(kraft, "alter", "--client", HOSTILE, "--add-config", "producer_byte_rate=4096")
    assert done.returncode == 0, done.stderr
    consoles.append(console := start(kraft))
    url = entity_url(Entity.named(EntityType.CLIENTS, HOSTILE).path)  # as the pages link it
    document = console.json("/api" + url)
    assert document["stored"]["config"] == {"producer_byte_rate": "4096"}
    assert [a["status"] for a in document["applied"]] == ["applied"]  # broker 1 reports it, asked
    # no broker resolves a quota for the Admin API: said once, not computed
    assert document["effective"] == [] and len(document["effective_unavailable"]) == 1
    page = console.page(url)
    assert HOSTILE not in page and html.escape(HOSTILE) in page
    assert HOSTILE not in console.page("/")
    stream = Events(console)  # a stop asked for ends the stream and the polls, as on ZooKeeper
    try:
        stopping = time.monotonic()
        console.process.send_signal(signal.SIGTERM)
        assert console.process.wait(timeout=15) == -signal.SIGTERM
        assert time.monotonic() - stopping < 5
        assert "Traceback" not in console.log.read_text()
    finally:
        stream.close()


KEY = "log.cleaner.backoff.ms"
"""A cluster-wide dynamic broker config every 4.4 broker applies at once (a cleaner setting)."""


def post(console: Console, path: str, body: object, headers: dict[str, str]) -> tuple[int, dict]:
    """A POST as the Rollouts page's script sends it."""
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=120)
    try:
        connection.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_a_soaking_canary_is_followed_and_aborted_through_the_console(kraft_cluster, consoles):
    kraft = kraft_cluster
    consoles.append(console := start(kraft, "--allow-actions", env={"CONFIGCTL_SERVE_TOKEN": TOKEN}))
    before = {r["id"] for r in console.json("/api/rollouts")}
    running = subprocess.Popen(
        [sys.executable, "-m", "configctl", "--bootstrap-server", kraft.bootstrap, "alter", "--broker-defaults",
         "--add-config", f"{KEY}=17000", "--canary", "1", "--soak", "90s", "--wait", "30", "--reason", "OPS-5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )  # fmt: skip
    try:

        def soaking() -> dict | None:
            listed = [r for r in console.json("/api/rollouts") if r["id"] not in before]  # type: ignore[union-attr]
            return (
                listed[0] if listed and "soak" in str((listed[0].get("step") or {}).get("activity")) else None
            )

        record = wait_for(soaking, timeout=60 + ONE_POLL, interval=1, message="the canary soaking, polled")
        page = console.page("/rollouts")
        assert record["id"] in page and "Abort" in page
        now = page[page.index(f'id="brokers-{record["id"]}"') :]
        now = now[: now.index("</table>")]  # broker 1, asked itself, reports the canary's value
        assert re.search(r'<td class="num">1</td><td class="ok">applied</td>', now), now
        status, answer = post(
            console,
            f"/api/rollouts/{record['id']}/abort",
            {"reason": "latency up on broker 1"},
            {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        assert status == 200, answer
        assert answer["exit_code"] == 0 and answer["document"]["outcome"] == "aborted"
        assert answer["identity"].endswith(" via console")
        out, err = running.communicate(timeout=90)
    finally:
        if running.poll() is None:
            running.kill()
        cli(kraft, "alter", "--broker-defaults", "--delete-config", KEY)
        cli(kraft, "alter", "--broker", "1", "--delete-config", KEY)
    assert running.returncode != 0 and "aborted by someone else" in out + err
    for selector in (("--entity-name", "1"), ("--entity-default",)):
        assert KEY not in kraft.config_command("--describe", "--entity-type", "brokers", *selector).stdout
    listed = json.loads(cli(kraft, "rollout", "list", "-o", "json").stdout)
    assert next(r for r in listed if r["id"] == record["id"])["state"] == "aborted"


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftFleet]:
    """A KRaft cluster of this module's own (brokers 1, 2 and controller 100): its broker 2 is
    stopped and unregistered."""
    work = tmp_path_factory.mktemp("kraft-console")
    cluster = KRaftCluster(KAFKA4_HOME, work, brokers=2, combined=False)
    fleet = KRaftFleet(cluster, work / "unused.properties")
    cluster.start()
    try:
        with fleet.admin() as admin:
            wait_for(lambda: admin.broker_ids() == [1, 2], timeout=60, message="every broker registered")
        yield fleet
    finally:
        cluster.stop()


STALE_AUDIT = {
    "brokers": 2,
    "latest_change_number": 12,
    "stale_brokers": [
        {"broker_id": 1, "change_number": 10, "behind": 2},
        {"broker_id": 2, "change_number": 10, "behind": 2},
    ],
    "counts": {"stale_brokers": 2},
    "heatmap": {"keys": [], "brokers": [], "cells": []},
}


def test_a_stopped_broker_is_fenced_never_applied_then_not_registered_and_no_broker_is_a_banner(
    own_cluster, consoles, unique, tmp_path
):
    kraft = own_cluster
    topic = unique("stopping")
    kraft.create_topics(topic)
    done = cli(kraft, "alter", "--topic", topic, "--add-config", "retention.ms=600000", "--wait", "60")
    assert done.returncode == 0, done.stderr
    audit = tmp_path / "audit.json"  # an audit that found brokers 1 and 2 stale at one change
    audit.write_text(json.dumps(STALE_AUDIT))
    consoles.append(console := start(kraft, "--audit-json", str(audit)))
    assert nodes_shown(console.page("/"))[2][2] == "registered"
    assert "down (" not in console.page("/drift")  # both answer: neither is down
    kraft.cluster.stop(ids=[2])

    def fenced() -> list[str] | None:
        row = nodes_shown(console.page("/")).get(2)
        return row if row and row[2] == "fenced" else None

    row = wait_for(fenced, timeout=60 + ONE_POLL, interval=1, message="broker 2 shown fenced")
    assert row[4].startswith("no") and row[-1] == "no", row  # asked, it does not answer

    def answered() -> bytes | None:
        # A poll whose client happened to ask the stopped broker first says the cluster could not
        # be read then (503, seen once in CI); the next poll reads it through broker 1.
        status, body = console.get(f"/api/entity/topics/{topic}")
        return body if status == 200 else None

    document = json.loads(wait_for(answered, timeout=ONE_POLL * 3, interval=1, message="the entity's page"))
    verdicts = {a["broker_id"]: a for a in document["applied"]}
    assert verdicts[1]["status"] == "applied"
    assert verdicts[2]["status"] == "unreachable" and verdicts[2]["reason"].startswith("did not answer")
    assert [r["broker_id"] for r in document["effective"]] == [1]
    assert [u["broker_id"] for u in document["effective_unavailable"]] == [2]
    group = re.search(r'<td class="ids">1-2</td><td>(.*?)</td>', console.page("/drift"))
    assert group is not None and "1 down (2)" in group.group(
        1
    )  # the Drift page says why, from the cluster now
    unregistered = kraft.cluster.tool(
        CLUSTER_TOOL, "unregister", "--bootstrap-server", kraft.bootstrap, "--id", "2"
    )
    assert unregistered.returncode == 0, unregistered.stderr

    def gone() -> list[str] | None:
        row = nodes_shown(console.page("/")).get(2)
        return row if row and row[2].startswith("not registered") else None

    row = wait_for(gone, timeout=ONE_POLL * 2, interval=1, message="broker 2 shown not registered")
    assert "registered when this console last saw it" in row[2] and row[-1] == "no"
    assert [b["broker_id"] for b in console.json("/api/status")["brokers"]] == [1]  # status -o json, as asked
    document = console.json(f"/api/entity/topics/{topic}")
    assert [a["broker_id"] for a in document["applied"]] == [1]
    assert console.json("/api/console")["problem"] is None
    kraft.cluster.stop(ids=[1])  # no broker left: the last documents, under a banner saying why

    def lost() -> bytes | None:
        status, body = console.get("/api/status")
        return body if status == 503 else None

    said = json.loads(wait_for(lost, timeout=ONE_POLL * 2, interval=1, message="/api/status 503"))["error"]
    assert said.startswith("the cluster: ") and "\n" not in said
    page = console.page("/")
    assert '<p class="banner">the cluster: ' in page and "(what is shown may be old)" in page
    assert 1 in nodes_shown(page)  # the last documents, still shown
    assert console.get(f"/api/entity/topics/{topic}")[0] == 503
