"""The fleet console (see docs/console.md): ``configctl serve`` as a real process on real ZooKeeper.

Each test starts the server with the CLI on a free port and talks HTTP to it, as a browser or a
script would: the JSON documents are the CLI's own, a change and a dying listener reach an open
``/events`` stream within a second, stored strings come back escaped, the token and the headers
guard every answer, and a server holds one set of watches however many browsers listen.
"""

from __future__ import annotations

import contextlib
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
from urllib.parse import quote

import pytest
from helpers import REPO_ROOT, child_env, free_port, run_cli, wait_for

pytestmark = pytest.mark.zk

TOKEN = "s3cret-token-for-the-console-0123"
HOSTILE = "<script>alert(1)</script>"


class Console:
    """A running ``configctl serve`` and a few ways to ask it."""

    def __init__(
        self, process: subprocess.Popen, port: int, token: str | None = None, log: Path | None = None
    ) -> None:
        self.process = process
        self.port = port
        self.token = token
        self.log = log

    def errors(self) -> str:
        """What the server wrote on stderr so far (its one start-up line, and any error)."""
        return self.log.read_text() if self.log is not None else ""

    def get(
        self, path: str, headers: dict[str, str] | None = None, host: str = "127.0.0.1"
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(host, self.port, timeout=30)
        try:
            sent = dict(headers or {})
            if self.token is not None and "Authorization" not in sent:
                sent["Authorization"] = f"Bearer {self.token}"
            connection.request("GET", path, headers=sent)
            answer = connection.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            connection.close()

    def json(self, path: str) -> object:
        status, _, body = self.get(path)
        assert status == 200, (path, status, body[:300], self.errors()[-3000:])
        return json.loads(body)


def start(
    zk_connect: str | None, *args: str, env: dict[str, str | None] | None = None, bind_host: str = "127.0.0.1"
) -> Console:
    """``configctl serve`` on a free port (``zk_connect`` None: the environment says where, as a
    profile or ``CONFIGCTL_*`` variables would), once it answers."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="configctl-serve-", suffix=".log")[1])
    where = ["--zookeeper", zk_connect] if zk_connect else []
    command = [sys.executable, "-m", "configctl", "serve", *where, "--bind", f"{bind_host}:{port}", *args]
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=child_env(env))
    token = (env or {}).get("CONFIGCTL_SERVE_TOKEN")
    console = Console(process, port, token, log)

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"configctl serve exited {process.returncode}: {console.errors()!r}")
        with contextlib.suppress(OSError):
            return console.get("/api/console")[0] == 200
        return False

    wait_for(up, timeout=60, message="configctl serve answering")
    return console


@pytest.fixture
def consoles() -> Iterator[list[Console]]:
    """Every console a test starts, stopped (SIGTERM, as an operator would) afterwards."""
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
        if console.process.stderr is not None:
            console.process.stderr.close()
        if console.log is not None:
            console.log.unlink(missing_ok=True)


class Events:
    """An ``/events`` stream read on a thread: ``(monotonic time, wall time, event, data)`` per event."""

    def __init__(self, console: Console) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=60)
        headers = {"Accept": "text/event-stream"}
        if console.token is not None:
            headers["Authorization"] = f"Bearer {console.token}"
        self.connection.request("GET", "/events", headers=headers)
        self.answer = self.connection.getresponse()
        assert self.answer.status == 200
        self.headers = {k.lower(): v for k, v in self.answer.getheaders()}
        self.queue: queue.Queue[tuple[float, float, str, dict]] = queue.Queue()
        self.seen: list[tuple[float, float, str, dict]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        first = self.next(timeout=10)
        assert first[2] == "hello", first
        self.hello = first[3]

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
                    self.queue.put((time.monotonic(), time.time(), event, json.loads(data)))
                    event, data = "message", ""

    def next(self, timeout: float) -> tuple[float, float, str, dict]:
        item = self.queue.get(timeout=timeout)
        self.seen.append(item)
        return item

    def saw(self, wanted: str, timeout: float) -> bool:
        """Whether ``wanted`` came (already read, or within ``timeout``)."""
        if any(item[2] == wanted for item in self.seen):
            return True
        with contextlib.suppress(queue.Empty):
            self.until(wanted, timeout)
            return True
        return False

    def until(self, wanted: str, timeout: float) -> tuple[float, float, str, dict]:
        deadline = time.monotonic() + timeout
        while True:
            item = self.next(timeout=max(0.01, deadline - time.monotonic()))
            if item[2] == wanted:
                return item

    def drain(self) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self.queue.get_nowait()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.answer.fp.raw._sock.shutdown(2)  # type: ignore[attr-defined]
        self.connection.close()


def cli(connect: str, *args: str, **kwargs):
    return run_cli("--zookeeper", connect, *args, **kwargs)


# -- the documents are the CLI's ------------------------------------------------------------------


def test_api_status_is_the_status_command_document(zk_connect, fleet_of_three, consoles):
    consoles.append(console := start(zk_connect))

    def same() -> bool:
        result = cli(zk_connect, "status", "-o", "json")
        assert result.returncode == 0, result.stderr
        return console.json("/api/status") == json.loads(result.stdout)

    # the listeners' fleet records catch up within about a second of starting: wait for quiet
    wait_for(same, timeout=20, interval=0.5, message="/api/status == configctl status -o json")
    document = console.json("/api/status")
    assert [b["broker_id"] for b in document["brokers"]] == [1, 2, 3]
    assert all(b["live"] for b in document["brokers"])
    listing = cli(zk_connect, "rollout", "list", "-o", "json")
    assert console.json("/api/rollouts") == json.loads(listing.stdout)


def test_a_change_reaches_an_open_stream_within_a_second(zk_connect, zk, fleet_of_three, consoles):
    consoles.append(console := start(zk_connect))
    events = Events(console)
    try:
        # a page says which documents it was made from: its script compares them with the stream's hello
        _, _, page = console.get("/")
        shown = re.search(rb"data-versions='([^']*)'", page)
        assert shown is not None and json.loads(shown.group(1)) == events.hello["versions"]
        result = cli(
            zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=86400000", "-o", "json"
        )
        returned = time.monotonic()
        assert result.returncode == 0, result.stderr
        number = json.loads(result.stdout)["change_number"]
        arrived, wall, _, data = events.until("changes", timeout=5)
        ctime_ms = zk.get(f"/config/changes/config_change_{number:010d}")[1].ctime
        print(f"commit (notification ctime) to SSE event: {wall * 1000 - ctime_ms:.0f} ms")
        assert wall * 1000 - ctime_ms < 1000
        assert arrived - returned < 1.0
        assert data["topic"] == "changes"
        # the pages answer from the hub: the newest change is on the fleet page
        status, _, body = console.get("/")
        assert status == 200 and b'href="/entity/topics/orders"' in body
        changes = console.json("/api/status")
        assert changes["latest_change_number"] == number  # type: ignore[index]
        # and the brokers applying it move the status document too
        assert events.saw("status", timeout=5)
        wait_for(
            lambda: all(b["last_applied_change"] == number for b in console.json("/api/status")["brokers"]),  # type: ignore[index]
            timeout=10,
            message="every broker applied it, as /api/status says",
        )
    finally:
        events.close()


def test_a_listener_that_dies_is_pushed_and_shown_not_live(zk_connect, fleet_of_three, consoles):
    consoles.append(console := start(zk_connect))
    events = Events(console)
    try:
        watches = console.json("/api/console")["watches"]  # type: ignore[index]
        listener = fleet_of_three[3]
        stopping = time.monotonic()
        listener.terminate()
        listener.wait(timeout=30)
        gone = time.monotonic()
        arrived, _, _, _ = events.until("status", timeout=5)
        print(f"SIGTERM to a listener to the SSE event: {(arrived - stopping) * 1000:.0f} ms")
        assert arrived - gone < 1.0
        brokers = {b["broker_id"]: b for b in console.json("/api/status")["brokers"]}  # type: ignore[index]
        assert brokers[3]["live"] is False and brokers[1]["live"] is True
        status, _, body = console.get("/")
        assert status == 200 and b"not live" in body
        # its state node is gone, and so is the watch on it (a restarted listener is watched anew)
        assert console.json("/api/console")["watches"] == watches - 1  # type: ignore[index]
        # a listener started again is live again, pushed, and watched again
        events.drain()
        again = subprocess.Popen(
            [sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", zk_connect, "--broker-id", "3",
             "--server-properties", str(REPO_ROOT / "examples" / "server-3.properties")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env(),
        )  # fmt: skip
        try:
            events.until("status", timeout=60)
            wait_for(
                lambda: all(b["live"] for b in console.json("/api/status")["brokers"]),  # type: ignore[index]
                timeout=30,
                message="broker 3 live again",
            )
            assert console.json("/api/console")["watches"] == watches  # type: ignore[index]
        finally:
            again.terminate()
            again.wait(timeout=30)
    finally:
        events.close()


def test_an_entity_is_its_stored_config_effective_values_verdicts_and_history(
    zk_connect, fleet_of_three, consoles
):
    result = cli(
        zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=86400000", "--wait", "30",
        "--reason", "OPS-1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    consoles.append(console := start(zk_connect))
    document = console.json("/api/entity/topics/orders")
    described = json.loads(cli(zk_connect, "describe", "--topic", "orders", "-o", "json").stdout)
    assert document["stored"] == described[0]  # type: ignore[index]
    history = json.loads(cli(zk_connect, "history", "--topic", "orders", "-o", "json").stdout)
    assert document["history"] == history  # type: ignore[index]
    assert {a["broker_id"]: a["status"] for a in document["applied"]} == {
        1: "applied",
        2: "applied",
        3: "applied",
    }  # type: ignore[index]
    effective = {r["broker_id"]: r for r in document["effective"]}  # type: ignore[index]
    one = json.loads(
        cli(zk_connect, "describe", "--effective", "--broker", "1", "--topic", "orders", "-o", "json").stdout
    )
    assert effective[1] == one
    status, _, body = console.get("/entity/topics/orders")
    assert status == 200 and b"OPS-1" in body and b"retention.ms" in body
    assert console.get("/api/entity/nonsense/x")[0] == 404


def test_a_canary_is_followed_step_by_step(zk_connect, fleet_of_three, consoles):
    consoles.append(console := start(zk_connect))
    events = Events(console)
    try:
        canary = subprocess.Popen(
            [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "alter", "--broker-defaults",
             "--add-config", "log.retention.ms=7200000", "--reason", "ticket OPS-7",
             "--canary", "1,3", "--soak", "3s", "--wait", "30", "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True,
        )  # fmt: skip
        events.until("rollouts", timeout=30)  # its record appeared
        listing = wait_for(lambda: console.json("/api/rollouts"), timeout=10, message="a rollout listed")
        rollout_id = listing[0]["id"]  # type: ignore[index]
        status, _, body = console.get("/rollouts")
        assert status == 200 and rollout_id.encode() in body and b"canary" in body
        # while it runs, where each broker stands with what it wrote (the canary's two overrides)
        wait_for(lambda: b"Brokers on what it wrote so far" in console.get("/rollouts")[2], timeout=10)
        seen: list[tuple[str, str, str]] = []  # (state, step, activity) as each event brought it
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            item = console.json("/api/rollouts")[0]  # type: ignore[index]
            step = (item["state"], item["step"].get("step"), item["step"].get("activity"))
            if not seen or seen[-1] != step:
                seen.append(step)
            if not item["open"]:
                break
            with contextlib.suppress(queue.Empty):
                events.until("rollouts", timeout=5)
        out, err = canary.communicate(timeout=60)
        assert canary.returncode == 0, err
        assert json.loads(out)["outcome"] == "promoted"
        print(f"canary steps seen live: {seen}")
        assert len(seen) >= 2 and seen[-1][0] == "promoted"
        wait_for(
            lambda: (
                console.json("/api/rollouts")
                == json.loads(cli(zk_connect, "rollout", "list", "-o", "json").stdout)
            ),
            timeout=10,
            message="/api/rollouts == configctl rollout list -o json",
        )
        status, _, body = console.get("/rollouts")
        assert status == 200 and b"promoted" in body and b"brokers/&lt;default&gt;" in body
    finally:
        events.close()


# -- safety --------------------------------------------------------------------------------------------


def test_stored_strings_are_text_never_markup(zk_connect, consoles):
    reason = '<img src=x onerror="alert(2)">'
    result = cli(
        zk_connect, "alter", "--client", HOSTILE, "--add-config", "producer_byte_rate=1024", "--reason", reason,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    consoles.append(console := start(zk_connect))
    path = json.loads(cli(zk_connect, "describe", "--client", HOSTILE, "-o", "json").stdout)[0]["entity_path"]
    status, headers, body = console.get("/entity/" + quote(path, safe="/"))
    assert status == 200, body[:300]
    page = body.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in page
    assert page.count("<script") == 1  # the console's own, from /static
    document = console.json("/api/entity/" + quote(path, safe="/"))
    assert document["entity_label"] == f"clients/{HOSTILE}"  # type: ignore[index]
    assert "text/html" in headers["content-type"]


def test_a_password_is_never_rendered(zk_connect, consoles):
    secret = "hunter2-do-not-show"
    result = cli(
        zk_connect,
        "alter",
        "--broker",
        "1",
        "--add-config",
        f"listener.name.internal.ssl.key.password={secret}",
        env={"CONFIGCTL_PASSWORD_ENCODER_SECRET": "encoder-secret-for-the-test"},
    )
    assert result.returncode == 0, result.stderr
    consoles.append(console := start(zk_connect))
    for path in ("/entity/brokers/1", "/api/entity/brokers/1", "/", "/api/status"):
        status, _, body = console.get(path)
        assert status == 200, (path, body[:300])
        assert secret.encode() not in body, path
    described = json.loads(cli(zk_connect, "describe", "--broker", "1", "-o", "json").stdout)[0]
    assert console.json("/api/entity/brokers/1")["stored"] == described  # type: ignore[index]  # masked as there


def test_every_answer_carries_a_strict_policy_and_no_external_url(zk_connect, consoles, tmp_path):
    consoles.append(console := start(zk_connect))
    for path in (
        "/",
        "/rollouts",
        "/drift",
        "/api/status",
        "/static/console.js",
        "/static/console.css",
        "/nope",
    ):
        status, headers, body = console.get(path)
        assert status == (404 if path == "/nope" else 200), path
        policy = headers.get("content-security-policy", "")
        assert "default-src 'none'" in policy and "script-src 'self'" in policy, path
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert b"http://" not in body and b"https://" not in body, path
        if path.endswith((".html", "/", "/rollouts", "/drift")):
            assert b"<script>" not in body and b" style=" not in body, path  # nothing inline
    assert console.get("/nope")[0] == 404
    # DNS rebinding: a page elsewhere naming another host is not answered on loopback
    assert console.get("/api/status", headers={"Host": "evil.example:80"})[0] == 421


def test_beyond_loopback_a_token_is_required(zk_connect, consoles, tmp_path):
    refused = cli(zk_connect, "serve", "--bind", f"0.0.0.0:{free_port()}")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "token" in refused.stderr and "Traceback" not in refused.stderr
    short = cli(zk_connect, "serve", "--bind", f"0.0.0.0:{free_port()}", env={"CONFIGCTL_SERVE_TOKEN": "abc"})
    assert short.returncode == 2 and short.stderr.count("\n") == 1
    bad = cli(zk_connect, "serve", "--bind", "nonsense")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1

    consoles.append(console := start(zk_connect, env={"CONFIGCTL_SERVE_TOKEN": TOKEN}, bind_host="0.0.0.0"))
    assert console.get("/api/status")[0] == 200
    assert console.get("/")[0] == 200
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong-token-of-some-length"}):
        for path in ("/api/status", "/", "/events", "/static/console.js"):
            status, answer_headers, _ = console.get(path, headers=headers)
            assert status == 401, (path, headers)
            assert "content-security-policy" in answer_headers
    # the same from a file (never from argv)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "configctl", "serve", "--zookeeper", zk_connect, "--bind", f"0.0.0.0:{port}",
         "--token-file", str(token_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env(),
    )  # fmt: skip
    consoles.append(from_file := Console(process, port, TOKEN))
    wait_for(lambda: from_file.get("/api/status")[0] == 200, timeout=60, message="served with a token file")
    assert from_file.get("/api/status", headers={"Authorization": "Bearer nope"})[0] == 401


def test_zookeeper_lost_and_back_is_said_and_pushed(restartable_zk, consoles):
    consoles.append(console := start(restartable_zk.connect_string))
    events = Events(console)
    try:
        restartable_zk.stop()
        _, _, _, data = events.until("problem", timeout=10)
        assert data["problem"]
        status, _, body = console.get("/api/status")
        assert status == 503 and "ZooKeeper" in json.loads(body)["error"]
        status, _, body = console.get("/")
        assert status == 200 and b'class="banner"' in body  # what was known, under a banner
        restartable_zk.start()
        _, _, _, data = events.until("problem", timeout=60)
        assert data["problem"] is None
        assert console.json("/api/status")["brokers"] == []  # type: ignore[index]
    finally:
        events.close()


def test_sigterm_stops_it_cleanly_with_browsers_listening(zk_connect, consoles):
    consoles.append(console := start(zk_connect))
    streams = [Events(console) for _ in range(3)]
    try:
        stopping = time.monotonic()
        console.process.send_signal(signal.SIGTERM)
        # a stop asked for: the streams are closed, and it exits as the signal says (as a shell expects)
        assert console.process.wait(timeout=15) == -signal.SIGTERM
        assert time.monotonic() - stopping < 5
        assert "Traceback" not in console.errors()
        consoles.append(again := start(zk_connect))
        streams.append(Events(again))
        again.process.send_signal(signal.SIGINT)  # Ctrl-C: as every configctl command
        assert again.process.wait(timeout=15) == 130
        assert "Traceback" not in again.errors()
    finally:
        for stream in streams:
            stream.close()


def test_a_taken_port_is_one_line(zk_connect):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli(zk_connect, "serve", "--bind", f"127.0.0.1:{port}")
    assert result.returncode == 7 and result.stderr.count("\n") == 1, result.stderr


def test_the_console_connects_as_every_command_does_tls_and_sasl(secure_zk, consoles):
    """The same connection settings as every command: here TLS and SASL from CONFIGCTL_* variables."""
    import uuid

    from kazoo.client import KazooClient

    admin = KazooClient(timeout=10.0, **secure_zk.kazoo_options())
    admin.start(timeout=30)
    chroot = f"/console-{uuid.uuid4().hex[:12]}"
    admin.create(chroot)
    try:
        env = {**secure_zk.env(), "CONFIGCTL_ZOOKEEPER": f"{secure_zk.connect}{chroot}"}
        consoles.append(console := start(None, env=env))
        events = Events(console)
        try:
            written = run_cli("alter", "--topic", "orders", "--add-config", "retention.ms=86400000", env=env)
            assert written.returncode == 0, written.stderr
            events.until("changes", timeout=5)
        finally:
            events.close()
        expected = json.loads(run_cli("status", "-o", "json", env=env).stdout)
        assert console.json("/api/status") == expected
        assert console.json("/api/status")["latest_change_number"] == 0  # type: ignore[index]
    finally:
        admin.delete(chroot, recursive=True)
        admin.stop()
        admin.close()


# -- drift ---------------------------------------------------------------------------------------------


AUDIT = {
    "brokers": 3,
    "rows": 120,
    "malformed": {"unparseable": 0, "missing_fields": 0, "examples": []},
    "latest_change_number": 12,
    "latest_change_source": "snapshots",
    "stale_brokers": [{"broker_id": 3, "change_number": 10, "behind": 2}],
    "divergent": [],
    "per_broker_overrides": [{"broker_id": 2, "name": "num.replica.fetchers", "value": "4"}],
    "static_skew": [],
    "missed_changes": None,
    "counts": {"stale_brokers": 1, "divergent": 0, "per_broker_overrides": 1, "static_skew": 0},
    "truncated": {"stale_brokers": 0, "divergent": 0, "per_broker_overrides": 0, "static_skew": 0},
    "heatmap": {
        "keys": [{"key": f"brokers/2 {HOSTILE}", "brokers": 1}],
        "brokers": [{"broker_id": 2, "deviations": 1, "stale": False}],
        "cells": [["override"]],
    },
    "limits": {"limit": 1000, "max_listed": 100},
}


def test_drift_is_404_without_an_audit_and_the_audit_with_one(zk_connect, consoles, tmp_path: Path):
    consoles.append(console := start(zk_connect))
    assert console.get("/api/drift")[0] == 404
    assert console.get("/drift")[0] == 200
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps(AUDIT))
    consoles.append(with_audit := start(zk_connect, "--audit-json", str(audit)))
    assert with_audit.json("/api/drift") == AUDIT
    status, _, body = with_audit.get("/drift")
    assert (
        status == 200
        and b"heat-override" in body
        and b"&lt;script&gt;" in body
        and b"<script>alert" not in body
    )
    AUDIT["brokers"] = 4  # the next audit run replaces the file: the console shows the new one
    audit.write_text(json.dumps(AUDIT))
    wait_for(lambda: with_audit.json("/api/drift")["brokers"] == 4, timeout=5)  # type: ignore[index]
    broken = cli(
        zk_connect, "serve", "--bind", f"127.0.0.1:{free_port()}", "--audit-json", str(tmp_path / "none.json")
    )
    assert broken.returncode != 0 and broken.stderr.count("\n") == 1


def test_drift_says_why_from_the_fleet_now(zk_connect, fleet_of_three, consoles, tmp_path: Path):
    """Stale brokers are grouped by the change they stopped at, and a group says which of its
    brokers are down now; a heat-map row says so too."""
    listener = fleet_of_three[3]
    listener.terminate()
    listener.wait(timeout=30)
    document = json.loads(json.dumps(AUDIT))
    document["stale_brokers"] = [
        {"broker_id": 1, "change_number": 10, "behind": 2},
        {"broker_id": 3, "change_number": 10, "behind": 2},
    ]
    document["heatmap"]["brokers"] = [{"broker_id": 3, "deviations": 1, "stale": True}]
    document["heatmap"]["stale_groups"] = [{"change_number": 10, "brokers": [1], "cells": ["missed"]}]
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps(document))
    consoles.append(console := start(zk_connect, "--audit-json", str(audit)))
    wait_for(
        lambda: not {b["broker_id"]: b for b in console.json("/api/status")["brokers"]}[3]["live"],  # type: ignore[index]
        timeout=30,
        message="broker 3 not live",
    )
    page = console.get("/drift")[2].decode()
    group = re.search(
        r"<td class=\"num\">10</td><td class=\"num\">2</td><td class=\"ids\">1, 3</td><td>(.*?)</td>", page
    )
    assert group is not None and "1 down (3)" in group.group(1), page[:3000]
    assert re.search(
        r'<tr class="stale-group"><th class="num"[^>]*><span class="stale-mark">S</span> 1 at 10</th>', page
    )
    assert '<span class="bad" title="no live listener now">down</span> 3' in page


# -- one set of watches ----------------------------------------------------------------------------


def test_one_set_of_watches_whatever_the_number_of_browsers(zk_connect, fleet_of_three, consoles):
    consoles.append(console := start(zk_connect))
    first = Events(console)
    streams = [first]
    try:
        one = console.json("/api/console")
        streams += [Events(console) for _ in range(19)]
        twenty = console.json("/api/console")
        print(f"ZooKeeper watches: {one['watches']} with 1 stream, {twenty['watches']} with 20")  # type: ignore[index]
        assert twenty["watches"] == one["watches"]  # type: ignore[index]
        assert twenty["subscribers"] == 20  # type: ignore[index]
        before = console.json("/api/console")["refreshes"]  # type: ignore[index]
        for stream in streams:
            stream.drain()
        result = cli(zk_connect, "alter", "--topic", "orders", "--add-config", "retention.ms=86400000")
        assert result.returncode == 0, result.stderr
        for stream in streams:  # every browser hears of it
            stream.until("changes", timeout=5)
        for _ in range(20):  # and twenty browsers fetching the pages read nothing from ZooKeeper
            assert console.get("/")[0] == 200
            console.json("/api/status")
        time.sleep(1.5)  # the brokers apply it and publish meanwhile
        after = console.json("/api/console")["refreshes"]  # type: ignore[index]
        reads = {topic: after[topic] - before[topic] for topic in before}
        print(f"document refreshes for one change with 20 browsers: {reads}")
        assert reads["changes"] <= 3 and reads["status"] <= 8
        for stream in streams[1:]:
            stream.close()
        wait_for(
            lambda: console.json("/api/console")["subscribers"] == 1,
            timeout=10,
            message="closed streams dropped",
        )  # type: ignore[index]
    finally:
        for stream in streams:
            stream.close()


# -- a thousand brokers ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_thousand_brokers_one_page_and_one_set_of_watches(zk_connect, zk, consoles):
    """A simulated fleet of 1,000 brokers (their state nodes and fleet records as listeners write
    them, the state nodes ephemeral as a live listener's are; some behind, some with a mismatch): the fleet page, its cost and a state change pushed."""
    from configctl.znodes import BrokerStateZNode, FleetRecordZNode

    now_ms = int(time.time() * 1000)

    def state(broker_id: int, applied: int) -> bytes:
        problems = []
        if broker_id % 97 == 0:
            problems.append(
                {"kind": "mismatch", "entity_path": "topics/orders", "change_number": applied,
                 "reason": "the broker reports another value", "key": "retention.ms",
                 "expected": "86400000", "reported": "3600000"}
            )  # fmt: skip
        return BrokerStateZNode.encode(
            {"broker_id": broker_id, "host": f"kafka-{broker_id}.example", "last_applied_change": applied,
             "applied_at_ms": now_ms, "problems": problems, "observed": broker_id % 2 == 0}
        )  # fmt: skip

    transaction = zk.transaction()
    zk.ensure_path(BrokerStateZNode.ROOT)
    zk.ensure_path(FleetRecordZNode.ROOT)
    for broker_id in range(1, 1001):
        applied = 5 if broker_id % 10 else 3  # every tenth broker is two changes behind
        transaction.create(BrokerStateZNode.path(broker_id), state(broker_id, applied), ephemeral=True)
        transaction.create(
            FleetRecordZNode.path(broker_id),
            FleetRecordZNode.encode(broker_id, f"kafka-{broker_id}", now_ms, applied),
        )
        if broker_id % 100 == 0:
            transaction.commit()
            transaction = zk.transaction()
    transaction.commit()

    consoles.append(console := start(zk_connect))
    started = time.monotonic()
    status, _, body = console.get("/")
    first_paint = time.monotonic() - started
    assert status == 200 and body.count(b"<tr class=") == 1000
    assert b"row-mismatch" in body
    stats = console.json("/api/console")
    print(
        f"1,000 brokers: fleet page {len(body) / 1e6:.2f} MB in {first_paint * 1000:.0f} ms; "
        f"{stats['watches']} ZooKeeper watches"  # type: ignore[index]
    )
    assert first_paint < 3.0
    assert stats["watches"] == 5 + 2 * 1000  # type: ignore[index]
    for _ in range(20):  # twenty browsers opening it share that one rendering (nothing moved)
        assert console.get("/")[0] == 200
    assert console.json("/api/console")["shared_reads"] == stats["shared_reads"]  # type: ignore[index]

    events = Events(console)
    try:
        before = console.json("/api/console")["refreshes"]["status"]  # type: ignore[index]
        wrote = time.monotonic()
        zk.set(BrokerStateZNode.path(7), state(7, 1))
        arrived, _, _, _ = events.until("status", timeout=5)
        print(f"1,000 brokers: a broker's new state to the SSE event: {(arrived - wrote) * 1000:.0f} ms")
        assert arrived - wrote < 1.0
        brokers = {b["broker_id"]: b for b in console.json("/api/status")["brokers"]}  # type: ignore[index]
        assert brokers[7]["last_applied_change"] == 1 and len(brokers) == 1000
        after = console.json("/api/console")["refreshes"]["status"]  # type: ignore[index]
        assert after - before <= 2
    finally:
        events.close()


def test_a_browser_that_stops_reading_is_cut_off_not_buffered():
    """The fan-out itself: a stream that does not read past its bounded queue ends (its browser
    reconnects), one that reads gets every message in order; both are dropped when they end."""
    import asyncio

    from configctl.console.fanout import Fanout

    async def scenario() -> tuple[list[str], list[str], Fanout]:
        fanout = Fanout(limit=4)
        fanout.attach(asyncio.get_running_loop())
        slow, quick = fanout.stream("hello\n\n"), fanout.stream("hello\n\n")
        assert await slow.__anext__() == await quick.__anext__() == "hello\n\n"
        assert fanout.count == 2
        read: list[str] = []
        for version in range(3):
            fanout.publish("status", {"version": version})
            await asyncio.sleep(0.01)
            read.append(await quick.__anext__())
        for version in range(3, 10):  # nobody reads the slow one: past 4 messages it is cut off
            fanout.publish("status", {"version": version})
        await asyncio.sleep(0.05)
        left = [text async for text in slow]
        await quick.aclose()
        return read, left, fanout

    read, left, fanout = asyncio.run(scenario())
    assert [json.loads(text.split("data: ")[1])["version"] for text in read] == [0, 1, 2]
    assert left == [] and fanout.dropped == 1 and fanout.count == 0
