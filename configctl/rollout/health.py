"""Is a step healthy? The soak (no new problem on the brokers that run it) and the health check.

The soak watches the brokers' published states (the store's watches, no polling) for the soak time:
a new problem on any of them, or its listener going away, fails the step at once. The health
check is the operator's own command, run by the shell with the step's facts in its environment
(broker ids, change numbers, entities); exit 0 is healthy, anything else (or running past its
timeout, when it is killed with everything it started) is a failure.

Contract 10's listener metrics are not in this tree yet, so there is no metric gate: the soak's
problem watch is the built-in gate, and a check command can query anything else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from configctl import fleet
from configctl.errors import InvalidInput, one_line
from configctl.handlers.base import Problem
from configctl.store import ConfigStore
from configctl.znodes import BrokerStateZNode

OUTPUT_KEPT = 4000
"""Characters of a check's output kept (its end: where a failing script says why)."""
TICK = 0.5
"""How often the live view is told the soak time left."""

ProblemKey = tuple[str, str | None, str | None]


def problem_key(problem: Problem) -> ProblemKey:
    """What makes a problem the same problem (the listener's own key: kind, where, which key)."""
    return (problem.kind, problem.entity_path or problem.notification, problem.name)


def problems_now(store: ConfigStore, brokers: Iterable[int]) -> dict[int, set[ProblemKey] | None]:
    """Each broker's current problems (None: no live listener), the baseline a soak compares with."""
    result: dict[int, set[ProblemKey] | None] = {}
    for broker_id in brokers:
        state = fleet.broker_state(store, broker_id)
        result[broker_id] = None if state is None else {problem_key(p) for p in fleet.problems_of(state)}
    return result


# -- the soak ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SoakResult:
    seconds: float
    failure: str | None = None
    problems: tuple[tuple[int, Problem], ...] = ()
    interrupted_by_record: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_json(self) -> dict[str, Any]:
        return {
            "step": "soak",
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "failure": self.failure,
            "problems": [{"broker_id": b, **p.to_json()} for b, p in self.problems],
        }


def soak(
    store: ConfigStore,
    brokers: Iterable[int],
    seconds: float,
    baseline: Mapping[int, set[ProblemKey] | None],
    *,
    rollout_id: str | None = None,
    record_version: int | None = None,
    on_tick: Callable[[float], None] | None = None,
) -> SoakResult:
    """Watch ``brokers`` for ``seconds``: fail on a problem not in ``baseline`` or a listener that stops.

    With ``rollout_id``, a change to the rollout's record by someone else (``rollout abort`` from
    another terminal) ends the soak at once (``interrupted_by_record``).
    """
    ids = sorted(brokers)
    started = time.monotonic()
    if seconds <= 0 or not ids:
        return SoakResult(0.0)
    store.capabilities.require("watches", "fleet_state", what="a rollout's soak")
    changed = threading.Condition()
    failure: list[tuple[str, tuple[tuple[int, Problem], ...]]] = []
    record_moved: list[bool] = []
    finished: list[bool] = []

    def watcher(broker_id: int) -> Callable[[bytes | None], bool]:
        def on_data(data: bytes | None) -> bool:
            with changed:
                if failure or finished:
                    return False
                if data is None:
                    failure.append((f"broker {broker_id}'s listener stopped during the soak", ()))
                else:
                    try:
                        state = BrokerStateZNode.decode(data)
                    except InvalidInput:
                        return True
                    known = baseline.get(broker_id) or set()
                    new = [p for p in fleet.problems_of(state) if problem_key(p) not in known]
                    if new:
                        first = new[0]
                        where = first.entity_path or first.notification or "?"
                        key = f" {first.name}" if first.name else ""
                        failure.append(
                            (
                                f"broker {broker_id} reported a new problem during the soak: "
                                f"{first.kind} {where}{key}: {one_line(first.reason, 300)}",
                                tuple((broker_id, p) for p in new),
                            )
                        )
                changed.notify_all()
                return not failure

        return on_data

    def on_record(version: int | None) -> bool:
        if finished:
            return False
        if version is None or (record_version is not None and version != record_version):
            with changed:
                record_moved.append(True)
                changed.notify_all()
            return False
        return True

    for i in ids:
        store.watch_broker_state(i, watcher(i))
    if rollout_id is not None:
        store.rollouts.watch(rollout_id, on_record)
    deadline = started + seconds
    with changed:
        while not failure and not record_moved:
            remaining = deadline - time.monotonic()
            if on_tick is not None:
                on_tick(max(0.0, remaining))
            if remaining <= 0:
                break
            changed.wait(min(TICK, remaining))
        finished.append(True)
    # Each watch stops itself on its next event (its callback returns False once we are done).
    elapsed = time.monotonic() - started
    if record_moved:
        return SoakResult(elapsed, "the rollout's record was changed by someone else", (), True)
    if failure:
        return SoakResult(elapsed, failure[0][0], failure[0][1])
    return SoakResult(elapsed)


# -- the health check -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    command: str
    exit_code: int | None
    timed_out: bool
    seconds: float
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def failure(self) -> str | None:
        if self.ok:
            return None
        if self.timed_out:
            return f"the check did not finish within its timeout ({self.seconds:.0f}s) and was killed"
        last = next((line for line in reversed(self.output.splitlines()) if line.strip()), "")
        said = f": {one_line(last, 200)}" if last else ""
        how = (
            f"was killed by signal {-self.exit_code}"
            if self.exit_code is not None and self.exit_code < 0
            else f"exited {self.exit_code}"
        )
        return f"the check {how}{said}"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": "check",
            "command": self.command,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "output": self.output,
        }


def run_check(command: str, env: Mapping[str, str], timeout: float) -> CheckResult:
    """Run ``command`` with ``sh -c`` and ``env`` added to this process's environment.

    It runs in a process group of its own: at the timeout (or on Ctrl-C here) the whole group is
    killed, so a check that started a pipeline or a sleep does not outlive it.
    """
    started = time.monotonic()
    # The check inherits this process's environment as it is: handed on, not read (not a setting).
    child_env = {**os.environ, **env}
    process = subprocess.Popen(
        command,
        shell=True,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        output = _drain(process)
    except BaseException:
        _kill_group(process)
        _drain(process)
        raise
    text = output.decode("utf-8", errors="replace") if output else ""
    if len(text) > OUTPUT_KEPT:
        text = "…" + text[-OUTPUT_KEPT:]
    code = None if timed_out else process.returncode
    return CheckResult(command, code, timed_out, time.monotonic() - started, text)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _drain(process: subprocess.Popen[bytes]) -> bytes:
    """What the killed check wrote; bounded, as a grandchild that left the group may hold the pipe."""
    try:
        output, _ = process.communicate(timeout=5)
        return output or b""
    except subprocess.TimeoutExpired:
        process.kill()
        with contextlib.suppress(Exception):
            process.wait(timeout=5)
        return b""
