"""The console's guards (issue 36): the bearer scheme in any case (RFC 7235), the limits uvicorn
is given, and the log filter that keeps a flood of connections from filling the log."""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

import pytest

from configctl.console import security
from configctl.console.security import ActionGate, Flooding, Guard, Limits, bearer_matches

TOKEN = "s3cret-token-for-the-console-0123"


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_scheme_is_case_insensitive(scheme):
    assert bearer_matches(f"{scheme} {TOKEN}".encode(), TOKEN.encode())
    assert bearer_matches(f"{scheme}   {TOKEN}".encode(), TOKEN.encode())  # 1*SP


@pytest.mark.parametrize(
    "header",
    [
        f"Basic {TOKEN}",
        f"Bearer{TOKEN}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer ",
        "Bearer",
        TOKEN,
        "",
    ],
)
def test_anything_else_is_refused(header):
    assert not bearer_matches(header.encode(), TOKEN.encode())


def ask(guard: Guard, authorization: str) -> int:
    """The status ``guard`` answers a GET with this ``Authorization`` header."""
    answered: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def send(message: dict[str, Any]) -> None:
        answered.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    guard.app = app
    scope = {"type": "http", "headers": [(b"host", b"127.0.0.1"), (b"authorization", authorization.encode())]}
    asyncio.run(guard(scope, receive, send))
    return answered[0]["status"]


def test_the_guard_takes_the_scheme_in_any_case():
    guard = Guard(None, token=TOKEN, loopback_only=False)  # type: ignore[arg-type]
    assert ask(guard, f"bearer {TOKEN}") == 200
    assert ask(guard, f"BEARER {TOKEN}") == 200
    assert ask(guard, f"Bearer {TOKEN}") == 200
    assert ask(guard, f"bearer {TOKEN}-") == 401
    assert ask(guard, f"Basic {TOKEN}") == 401


def test_an_action_takes_the_scheme_in_any_case():
    gate = ActionGate(TOKEN, enabled=True)
    json = {"content-type": "application/json"}
    assert gate.check({"authorization": f"bearer {TOKEN}", **json}) is None
    assert gate.check({"authorization": f"BEARER {TOKEN}", **json}) is None
    refused = gate.check({"authorization": f"bearer {TOKEN}!", **json})
    assert refused is not None and refused.status == 401
    off = ActionGate(None, enabled=True).check({"authorization": "bearer ", **json})
    assert off is not None and off.status == 403


# -- the limits ---------------------------------------------------------------------------------


def test_the_connection_cap_leaves_room_below_the_open_file_limit(monkeypatch):
    for soft, cap in [(512, 192), (1024, 704), (4096, 1000), (256, 16), (resource.RLIM_INFINITY, 1000)]:
        monkeypatch.setattr(resource, "getrlimit", lambda which, soft=soft: (soft, soft))
        assert Limits.for_this_process().connections == cap, soft


def test_uvicorn_gets_a_header_deadline_a_cap_and_its_own_limits():
    options = Limits(connections=100).uvicorn_options()
    protocol = options.pop("http")
    assert issubclass(protocol, security.CappedConnection) and protocol.limits.connections == 100
    assert protocol.limits.header_timeout == security.HEADER_TIMEOUT_S
    assert options == {
        "ws": "none",
        "loop": "asyncio",
        "limit_concurrency": 101,
        "timeout_keep_alive": security.KEEP_ALIVE_S,
        "backlog": security.BACKLOG,
        "h11_max_incomplete_event_size": security.HEADER_BYTES,
    }


# -- the log ------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(message: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, exc_info)


ACCEPT = "socket.accept() out of system resource\nsocket: <asyncio.TransportSocket fd=6>"


def test_a_flood_is_one_line_per_interval_and_counted():
    clock = Clock()
    flooding = Flooding(interval=60, clock=clock)
    emfile = OSError(24, "Too many open files")
    first = record(ACCEPT, emfile)
    assert flooding.filter(first)
    assert first.getMessage() == "socket.accept() out of system resource: [Errno 24] Too many open files"
    assert first.exc_info is None  # one line: no traceback
    passed = 0
    for _ in range(10_000):
        clock.now += 0.001
        passed += flooding.filter(record(ACCEPT, emfile))
    assert passed == 0 and flooding.held == {"socket.accept() out of system resource": 10_000}
    clock.now += 60
    later = record(ACCEPT, emfile)
    assert flooding.filter(later)
    assert "(10000 more like it in the last 60 s, not logged)" in later.getMessage()
    assert flooding.held == {}


def test_each_kind_of_flood_has_its_own_interval_and_other_lines_pass():
    flooding = Flooding(interval=60, clock=Clock())
    assert flooding.filter(record(ACCEPT))
    assert flooding.filter(record("Invalid HTTP request received."))
    assert not flooding.filter(record("Invalid HTTP request received."))
    assert not flooding.filter(record(ACCEPT))
    for _ in range(3):
        assert flooding.filter(record("console: cannot refresh from ZooKeeper: lost"))


def test_the_filter_is_on_every_logger_a_flood_writes_to(caplog):
    flooding = security.quiet_floods()
    try:
        with caplog.at_level(logging.WARNING):
            for name in ("asyncio", "uvicorn.error", "configctl.console.security"):
                for _ in range(100):
                    logging.getLogger(name).warning("Exceeded concurrency limit.")
        assert len(caplog.records) == 1 and flooding.held["Exceeded concurrency limit"] == 299
    finally:
        for name in ("asyncio", "uvicorn.error", "configctl.console.security"):
            logging.getLogger(name).removeFilter(flooding)
