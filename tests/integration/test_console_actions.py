"""The console's one action (docs/console.md, "Actions"): aborting a rollout, behind the token.

A real ``configctl serve`` on real ZooKeeper, with three real listeners and a real canary
started through the CLI and killed while it soaks (so it stays open, as a rollout whose laptop
closed). The console is read-only unless started with ``--allow-actions``; then an abort needs
the token even on loopback, must be a JSON POST from the console's own origin, and answers with
what ``configctl rollout abort ID -o json`` prints and the exit status it ends with.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys

import pytest
import test_console
from helpers import child_env, wait_for
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from test_console import TOKEN, Console, cli, start

pytestmark = pytest.mark.zk

consoles = test_console.consoles  # the fixture: every console a test starts, stopped afterwards

ROLLOUTS = "/configctl/rollouts"
BROKER_1 = "/config/brokers/1"
ACTIONS = {"CONFIGCTL_SERVE_TOKEN": TOKEN}
JSON = {"Content-Type": "application/json"}


def post(
    console: Console,
    path: str,
    body: object,
    headers: dict[str, str] | None = None,
    *,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], dict]:
    """A POST as a script (or the page's script) sends it; the token only when ``headers`` has it."""
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=60)
    try:
        data = raw if raw is not None else json.dumps(body).encode()
        connection.request("POST", path, body=data, headers=dict(headers or {}))
        answer = connection.getresponse()
        text = answer.read()
        try:
            document = json.loads(text)
        except ValueError:
            document = {"text": text.decode(errors="replace")}
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, document
    finally:
        connection.close()


def authorized(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", **JSON, **(extra or {})}


def record(zk: KazooClient, rollout_id: str) -> dict:
    return json.loads(zk.get(f"{ROLLOUTS}/{rollout_id}")[0])


def open_canary(zk_connect: str, zk: KazooClient, broker: str = "1") -> str:
    """A canary started through the CLI, killed while it soaks: open, with its override out."""
    process = subprocess.Popen(
        [sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "--zk-timeout", "2", "alter",
         "--broker-defaults", "--add-config", "log.retention.ms=7200000", "--canary", broker,
         "--soak", "120s", "--reason", "ticket OPS-9"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True,
    )  # fmt: skip

    def soaking() -> str | None:
        assert process.poll() is None, process.communicate()
        with contextlib.suppress(NoNodeError):
            for name in zk.get_children(ROLLOUTS):
                with contextlib.suppress(NoNodeError, ValueError):
                    found = record(zk, name)
                    if found["state"] == "running" and found["step"].get("activity") == "soaking":
                        return name
        return None

    try:
        rollout_id = wait_for(soaking, timeout=90, message="the canary to soak")
    finally:
        process.kill()
        process.communicate()
    return rollout_id


def abort_path(rollout_id: str) -> str:
    return f"/api/rollouts/{rollout_id}/abort"


def same_kind(document: dict) -> dict:
    """An abort's document without what differs between two rollouts: the id and the change numbers."""
    steps = [{k: v for k, v in step.items() if k != "change_numbers"} for step in document["steps"]]
    return {**document, "id": None, "steps": steps}


def cli_error(result) -> str:
    """The one line the CLI printed on stderr, without its ``error: `` prefix."""
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), result.stderr
    return line[len("error: ") :]


# -- off unless asked for ----------------------------------------------------------------------------


def test_actions_are_off_by_default(zk_connect, zk, fleet_of_three, consoles):
    rollout_id = open_canary(zk_connect, zk)
    consoles.append(plain := start(zk_connect))
    consoles.append(with_token := start(zk_connect, env=ACTIONS))  # a token alone turns nothing on
    for console in (plain, with_token):
        status, _, body = console.get("/rollouts")
        assert status == 200 and rollout_id.encode() in body
        assert b"data-abort" not in body and b"actions.js" not in body and b"abort-dialog" not in body
        status, _, answer = post(console, abort_path(rollout_id), {"reason": "try"}, authorized())
        assert status == 403, answer
        assert "--allow-actions" in answer["error"]
        assert console.get(abort_path(rollout_id))[0] == 405  # and never a GET
    assert record(zk, rollout_id)["state"] == "running"  # nothing was done
    # --allow-actions without a token is refused at start: an action must always carry one
    refused = cli(zk_connect, "serve", "--allow-actions", "--bind", "127.0.0.1:0")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "--allow-actions needs a token" in refused.stderr
    # a token too short is refused too (the token rules of serve)
    short = cli(
        zk_connect, "serve", "--allow-actions", "--bind", "127.0.0.1:0", env={"CONFIGCTL_SERVE_TOKEN": "x"}
    )
    assert short.returncode == 2 and short.stderr.count("\n") == 1
    assert cli(zk_connect, "rollout", "abort", rollout_id).returncode == 0  # tidy: the CLI ends it


# -- the token, JSON and the console's own origin ----------------------------------------------------


def test_an_abort_needs_the_token_json_and_the_consoles_own_origin(zk_connect, zk, fleet_of_three, consoles):
    rollout_id = open_canary(zk_connect, zk)
    consoles.append(console := start(zk_connect, "--allow-actions", env=ACTIONS))
    assert "actions allowed with the bearer token" in console.errors()
    # on loopback the pages stay readable without the token; the page offers the button
    status, headers, body = console.get("/rollouts", headers={"Authorization": ""})
    assert status == 200, body[:300]
    page = body.decode()
    assert f'data-abort="{rollout_id}"' in page and '<script src="/static/actions.js" defer>' in page
    assert "<script>" not in page and " style=" not in page  # nothing inline: the policy stays strict
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"]
    assert console.get("/static/actions.js", headers={"Authorization": ""})[0] == 200
    path = abort_path(rollout_id)
    body_ok = {"reason": "stop it"}
    # no token, a wrong one, the token anywhere but the Authorization header: 401
    for headers in (
        JSON,
        {**JSON, "Authorization": "Bearer wrong-token-of-some-length"},
        {**JSON, "Authorization": TOKEN},  # not a bearer token
        {**JSON, "Cookie": f"token={TOKEN}"},
    ):
        status, answer_headers, answer = post(console, path, body_ok, headers)
        assert status == 401, (headers, answer)
        assert answer_headers.get("www-authenticate", "").startswith("Bearer")
        assert "content-security-policy" in answer_headers
    status, _, answer = post(console, f"{path}?token={TOKEN}", body_ok, JSON)
    assert status == 401, answer
    # the token, but from another origin (a page elsewhere): 403
    for extra in (
        {"Origin": "http://evil.example"},
        {"Origin": f"http://127.0.0.1:{console.port + 1}"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        status, _, answer = post(console, path, body_ok, authorized(extra))
        assert status == 403, (extra, answer)
    # the token, but not JSON (what a cross-site form can send): 415
    for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        status, _, answer = post(console, path, body_ok, {**authorized(), "Content-Type": media})
        assert status == 415, (media, answer)
    # JSON, but no reason, an unknown field (--force stays with the CLI), not an object, too large
    for given in ({}, {"reason": "  "}, {"reason": "x", "force": True}, ["reason"], {"reason": "a\nb"}):
        status, _, answer = post(console, path, given, authorized())
        assert status == 400, (given, answer)
    status, _, answer = post(console, path, None, authorized(), raw=b"{not json")
    assert status == 400, answer
    status, _, answer = post(console, path, None, authorized(), raw=b'{"reason": "' + b"x" * 20_000 + b'"}')
    assert status == 413, answer
    # a page elsewhere naming another host (DNS rebinding) is not answered at all
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=30)
    connection.request("POST", path, body=b'{"reason":"x"}', headers={**authorized(), "Host": "evil.example"})
    assert connection.getresponse().status == 421
    connection.close()
    # none of that did anything; every refusal is logged
    assert record(zk, rollout_id)["state"] == "running"
    assert console.errors().count(f"refused POST {path}") >= 15
    # the same request from the console's own page is carried out
    status, _, answer = post(
        console,
        path,
        body_ok,
        authorized({"Origin": f"http://127.0.0.1:{console.port}", "Sec-Fetch-Site": "same-origin"}),
    )
    assert status == 200 and answer["exit_code"] == 0, answer


# -- the same truth as the CLI ----------------------------------------------------------------------------


def test_an_abort_is_the_cli_abort_recorded_as_the_console(zk_connect, zk, fleet_of_three, consoles):
    before = zk.exists(BROKER_1) and zk.get(BROKER_1)[0]
    consoles.append(console := start(zk_connect, "--allow-actions", env=ACTIONS))
    # through the console
    first = open_canary(zk_connect, zk)
    status, _, answer = post(console, abort_path(first), {"reason": "latency up on broker 1"}, authorized())
    assert status == 200, answer
    assert answer["exit_code"] == 0 and answer["error"] is None and answer["action"] == "abort"
    from_console = answer["document"]
    assert from_console["outcome"] == "aborted" and from_console["restored"] == ["brokers/1"]
    assert (zk.exists(BROKER_1) and zk.get(BROKER_1)[0]) == before  # the exact previous bytes
    assert record(zk, first)["state"] == "aborted"
    # through the CLI, the same kind of rollout: the same document and exit status
    second = open_canary(zk_connect, zk)
    by_cli = cli(zk_connect, "rollout", "abort", second, "--reason", "latency up on broker 1", "-o", "json")
    assert by_cli.returncode == answer["exit_code"] == 0, by_cli.stderr
    from_cli = json.loads(by_cli.stdout)
    assert same_kind(from_cli) == same_kind(from_console)
    # recorded as the operator's identity, via the console, with the reason
    identity = answer["identity"]
    assert identity.endswith(" via console") and identity.removesuffix(" via console")
    shown = json.loads(cli(zk_connect, "rollout", "show", first, "-o", "json").stdout)
    assert any(
        e["text"].startswith(f"aborted by {identity}: latency up on broker 1") for e in shown["events"]
    ), shown["events"]
    history = json.loads(cli(zk_connect, "history", "--broker", "1", "-o", "json").stdout)
    mine = [
        h
        for h in history
        if h["reason"] == f"rollout {first}: canary aborted, previous bytes restored: latency up on broker 1"
    ]
    assert len(mine) == 1 and mine[0]["identity"] == identity, history
    cli_identity = [h for h in history if h["reason"].startswith(f"rollout {second}: canary aborted")]
    assert cli_identity[0]["identity"] == identity.removesuffix(" via console")
    # the server's log names the action, who asked and how it ended
    wait_for(lambda: f"abort of rollout {first} as {identity}" in console.errors(), timeout=10)
    # the page follows: the rollout shows aborted, and has no button any more
    page = wait_for(
        lambda: (b := console.get("/rollouts")[2].decode()) and f"canary {first}: aborted" in b and b,
        timeout=10,
        message="the page to show the abort",
    )
    assert f'data-abort="{first}"' not in page


def test_aborting_what_is_finished_or_unknown_is_the_clis_exit_status_and_line(
    zk_connect, zk, fleet_of_three, consoles
):
    consoles.append(console := start(zk_connect, "--allow-actions", env=ACTIONS))
    rollout_id = open_canary(zk_connect, zk)
    # someone changed the canary broker since the rollout wrote it: both refuse, exit 12, nothing restored
    assert cli(zk_connect, "alter", "--broker", "1", "--add-config", "num.io.threads=9").returncode == 0
    by_cli = cli(zk_connect, "rollout", "abort", rollout_id, "-o", "json")
    status, _, answer = post(console, abort_path(rollout_id), {"reason": "try"}, authorized())
    assert status == 409 and by_cli.returncode == answer["exit_code"] == 12, (answer, by_cli.stderr)
    assert answer["document"]["outcome"] == json.loads(by_cli.stdout)["outcome"] == "stopped"
    assert answer["error"] == cli_error(by_cli)
    # ended with --force at the CLI (the console never forces), then: already ended, exit 5, the same line
    assert cli(zk_connect, "rollout", "abort", "--force", rollout_id).returncode == 0
    by_cli = cli(zk_connect, "rollout", "abort", rollout_id)
    status, _, answer = post(console, abort_path(rollout_id), {"reason": "again"}, authorized())
    assert status == 409, answer
    assert by_cli.returncode == answer["exit_code"] == 5
    assert answer["error"] == cli_error(by_cli) and "already ended (aborted)" in answer["error"]
    assert answer["document"] is None  # the CLI printed none either
    # no such rollout: exit 6 (404); not a rollout id at all: exit 1 (400), each the CLI's line
    for wanted, http_status, given in ((6, 404, "20250101-000000-0000"), (1, 400, "not-an-id")):
        by_cli = cli(zk_connect, "rollout", "abort", given)
        status, _, answer = post(console, abort_path(given), {"reason": "x"}, authorized())
        assert status == http_status and by_cli.returncode == answer["exit_code"] == wanted, (answer, by_cli)
        assert answer["error"] == cli_error(by_cli)
