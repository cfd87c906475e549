"""The console under hostile or unlucky load (issue 36): ``configctl serve`` as a real process.

* Clients without the token that open connections and never finish their headers cannot starve
  it: each connection has a deadline for its headers, the connections are capped below the
  process's open-file limit (the oldest unfinished one gives way to a new one), and a request
  with the token still answers at once.
* ``Authorization: bearer <token>``: the scheme is case-insensitive (RFC 7235).
* With ZooKeeper stopped, entity requests fail at once (503, naming the lost connection) and the
  fleet page, made from the hub's documents, never waits behind them.
* An audit document with odd interval times is a Drift page, never a 500.
* The served script closes its event stream in a hidden tab (browsers allow six per host).
"""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import test_console
from test_console import TOKEN, Console, start

from configctl.console.security import HEADER_TIMEOUT_S

pytestmark = pytest.mark.zk

consoles = test_console.consoles  # the fixture: every console a test starts, stopped afterwards

WITH_TOKEN = {"CONFIGCTL_SERVE_TOKEN": TOKEN}
UNFINISHED = b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n"  # no blank line: never ends


@contextlib.contextmanager
def open_file_limit(soft: int) -> Iterator[None]:
    """Processes started inside get a soft limit of ``soft`` open files (this one gets its own back)."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def half_open(port: int, count: int) -> list[socket.socket]:
    """``count`` connections to 127.0.0.1 that send part of a request's headers and stop there."""
    held: list[socket.socket] = []
    for _ in range(count):
        try:
            connection = socket.create_connection(("127.0.0.1", port), timeout=2)
            connection.sendall(UNFINISHED)
        except OSError:
            break  # the server no longer accepts: what the defect was
        held.append(connection)
    return held


def closed_by_server(connection: socket.socket, within: float) -> bool:
    """Whether the server closed ``connection`` within ``within`` seconds (it never answers it)."""
    connection.settimeout(within)
    try:
        return connection.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def timed(console: Console, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, float]:
    started = time.monotonic()
    status, _, body = console.get(path, headers)
    return status, body, time.monotonic() - started


# -- slow and many clients (defect 5) -------------------------------------------------------------


def test_half_open_connections_never_starve_a_request_with_the_token(zk_connect, consoles):
    """Many more unfinished requests than the server has files for: a request with the token still
    answers within a few seconds, and the log does not fill."""
    with open_file_limit(512):  # the probe's 1,024 in small: a few hundred connections exhaust it
        consoles.append(console := start(zk_connect, env=WITH_TOKEN))
    held = half_open(console.port, 600)
    try:
        assert len(held) == 600  # every connection was accepted: the server never ran out of files
        status, body, took = timed(console, "/api/status")
        print(f"a request with the token among 600 unfinished ones: {took * 1000:.0f} ms")
        assert status == 200 and took < 3, (status, body[:200])
        assert json.loads(body)["brokers"] == []
        assert console.get("/api/status", {"Authorization": "Bearer wrong-token-0123456789"})[0] == 401
    finally:
        for connection in held:
            connection.close()
    assert timed(console, "/api/status")[0] == 200
    log = console.errors()
    assert "out of system resource" not in log  # the cap left room: no accept ever failed
    assert len(log) < 20_000 and "Traceback" not in log, log[-3000:]


def test_headers_never_finished_are_cut_off_at_the_deadline(zk_connect, consoles):
    """A connection that never finishes its headers is closed after the header deadline, even
    one that keeps sending a byte a second (an idle timer alone would never fire on it)."""
    consoles.append(console := start(zk_connect, env=WITH_TOKEN))
    held = half_open(console.port, 20)
    dribbler = socket.create_connection(("127.0.0.1", console.port), timeout=2)
    try:
        started = time.monotonic()
        for byte in UNFINISHED * 4:
            try:
                dribbler.sendall(bytes([byte]))
            except OSError:
                break  # closed by the server
            if time.monotonic() - started > HEADER_TIMEOUT_S + 5:
                break
            time.sleep(0.5)
        assert closed_by_server(dribbler, within=1), "a request dribbling its headers was never cut off"
        assert time.monotonic() - started < HEADER_TIMEOUT_S + 3
        assert all(closed_by_server(c, within=3) for c in held)
    finally:
        dribbler.close()
        for connection in held:
            connection.close()
    assert console.get("/api/status")[0] == 200


# -- the bearer scheme (defect 15) ---------------------------------------------------------------


def test_the_bearer_scheme_is_case_insensitive(zk_connect, consoles):
    consoles.append(console := start(zk_connect, env=WITH_TOKEN))
    for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
        assert console.get("/api/status", {"Authorization": f"{scheme} {TOKEN}"})[0] == 200, scheme
    for refused in (f"Basic {TOKEN}", f"Bearer{TOKEN}", f"bearer {TOKEN}x", "bearer", TOKEN, ""):
        assert console.get("/api/status", {"Authorization": refused})[0] == 401, refused


# -- ZooKeeper lost (defect 7) ---------------------------------------------------------------------


def test_zookeeper_lost_entity_requests_fail_fast_and_the_fleet_page_stays_quick(restartable_zk, consoles):
    consoles.append(console := start(restartable_zk.connect_string))
    assert console.get("/api/entity/topics/orders")[0] == 200
    restartable_zk.stop()
    deadline = time.monotonic() + 30
    while not console.json("/api/console")["problem"]:  # type: ignore[index]
        assert time.monotonic() < deadline, "the console never said ZooKeeper was lost"
        time.sleep(0.1)
    with ThreadPoolExecutor(100) as pool:
        asked = [pool.submit(timed, console, f"/api/entity/topics/t-{i}") for i in range(300)]
        asked += [pool.submit(timed, console, f"/entity/topics/p-{i}") for i in range(50)]
        time.sleep(0.3)  # the requests are in
        status, page, took = timed(console, "/")
        answers = [future.result() for future in asked]
    print(f"fleet page among 350 entity requests, ZooKeeper stopped: {took * 1000:.0f} ms")
    assert status == 200 and b'class="banner"' in page and took < 3
    slowest = max(seconds for _, _, seconds in answers)
    print(f"slowest entity answer: {slowest * 1000:.0f} ms")
    assert slowest < 5
    for status, body, _ in answers[:300]:
        assert status == 503, body[:300]
        assert json.loads(body)["error"].startswith("ZooKeeper: "), body[:300]
    assert all(status == 503 and b"ZooKeeper: " in body for status, body, _ in answers[300:])


def test_a_frozen_zookeeper_never_makes_the_fleet_page_wait(restartable_zk, consoles):
    """ZooKeeper frozen (SIGSTOP): the connection looks alive, so entity reads wait on it until
    the client gives up. They wait on threads of their own, bounded (the rest are refused at
    once): the fleet page, made from the hub's documents, answers meanwhile."""
    consoles.append(console := start(restartable_zk.connect_string))
    restartable_zk.kill_node(1, signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(100) as pool:
            asked = [pool.submit(timed, console, f"/api/entity/topics/t-{i}") for i in range(200)]
            time.sleep(1.0)  # the requests are in, the first ones waiting on ZooKeeper
            status, page, took = timed(console, "/")
            print(f"fleet page among 200 entity reads, ZooKeeper frozen: {took * 1000:.0f} ms")
            assert status == 200 and b'<main id="main"' in page and took < 2
            answers = [future.result() for future in asked]
    finally:
        restartable_zk.kill_node(1, signal.SIGCONT)
    refused = [a for a in answers if a[0] == 503 and b"busy" in a[1]]
    print(f"{len(refused)} of 200 refused at once, the slowest in {max(a[2] for a in refused) * 1000:.0f} ms")
    assert len(refused) >= 100 and max(seconds for _, _, seconds in refused) < 2
    assert all(status in (200, 503) for status, _, _ in answers)


# -- the drift page (defect 11) ------------------------------------------------------------------


ODD_TIMES = ["soon", -5, 1e20, 10**20, None, True, [], {"ms": 1}, 1.5, 253402300800000]


def test_odd_interval_times_are_unknown_never_a_500(zk_connect, consoles, tmp_path: Path):
    intervals = [
        {
            "entity_path": "topics/orders",
            "key": "retention.ms",
            "start_ms": odd,
            "end_ms": odd,
            "duration_ms": odd,
            "values": {"1000": [1, 2], "2000": [3]},
            "opened_by_change": 7,
            "closed_by_change": None,
        }
        for odd in ODD_TIMES
    ]
    intervals.append({**intervals[0], "start_ms": 1_700_000_000_000, "end_ms": 1_700_000_060_000})
    audit = tmp_path / "timeline.json"
    audit.write_text(json.dumps({"intervals": intervals}))
    consoles.append(console := start(zk_connect, "--audit-json", str(audit)))
    status, _, body = console.get("/drift")
    assert status == 200, body[:500]
    page = body.decode()
    assert page.count("<tr class=") >= len(intervals) and "unknown" in page
    assert "2023-11-14 22:13:20Z" in page  # a sound time still shows


# -- the event stream in a hidden tab (defect 13) --------------------------------------------------


def test_the_served_script_closes_its_stream_in_a_hidden_tab(zk_connect, consoles):
    consoles.append(console := start(zk_connect))
    status, headers, body = console.get("/static/console.js")
    assert status == 200 and "javascript" in headers["content-type"]
    script = body.decode()
    assert 'addEventListener("visibilitychange"' in script and "document.hidden" in script
    assert ".close()" in script
