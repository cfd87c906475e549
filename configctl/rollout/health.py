"""Is a step healthy? The soak (no new problem on the brokers that run it) and the health check.

The soak watches the brokers' published states (the store's watches, no polling) for the soak time:
a new problem on any of them, or its listener going away, fails the step at once. The health
check is the operator's own command, run by the shell with the step's facts in its environment
(broker ids, change numbers, entities); the shell's exit status judges it: 0 is healthy, anything
else (or running past its timeout) is a failure. It stays bounded whatever it does: it sees none
of configctl's secrets (:func:`check_environment`), only the end of its output is kept while it
is read (:class:`Tail`), its output is read for at most :data:`DRAIN_SECONDS` once the shell
exited (a background job it left may hold the pipe for ever), and whatever it started, detached
children included, is killed when it is judged (:func:`stop_check`).

There is no metric gate: the soak's problem watch is the built-in gate, and a check command can
query anything else (the listeners' own ``/metrics``, ``configctl listener run --metrics-port``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psutil

from configctl import fleet, profiles, settings
from configctl.errors import InvalidInput, one_line
from configctl.handlers.base import Problem
from configctl.rollout.parsing import format_duration
from configctl.store import ConfigStore
from configctl.znodes import BrokerStateZNode

OUTPUT_KEPT = 4000
"""Characters of a check's output kept (its end: where a failing script says why)."""
DRAIN_SECONDS = 0.5
"""How long a check's output is still read once its shell exited: what it wrote last is kept,
and a background job it left holding the pipe is not waited for."""
READ_CHUNK = 64 * 1024
POLL_SECONDS = 0.05
"""How often the shell's exit is looked for while its output is silent."""
RUN_VARIABLE = "CONFIGCTL_CHECK_RUN"
"""A token in the check's environment, new for each run: a process that carries it was started by
this run of the check, detached (``setsid``, a double fork) or not, and is killed with it."""
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
    timeout: float = 0.0
    """The configured timeout (what a timed-out check is reported against, not the time spent)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def failure(self) -> str | None:
        if self.ok:
            return None
        if self.timed_out:
            return (
                f"the check did not finish within its timeout ({format_duration(self.timeout)}) "
                "and was killed"
            )
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
            "timeout_seconds": self.timeout,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "output": self.output,
        }


class Tail:
    """The last ``limit`` characters of a stream, kept as it is read: a check that writes gigabytes
    costs this process a few times ``limit`` bytes, never the whole of it."""

    def __init__(self, limit: int = OUTPUT_KEPT) -> None:
        self.limit = limit
        self.data = bytearray()
        self.cut = False

    @property
    def bound(self) -> int:
        """Bytes kept at most between two trims: ``limit`` characters of UTF-8 (4 bytes each), twice."""
        return 8 * self.limit

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.bound:
            del self.data[: len(self.data) - self.bound // 2]
            self.cut = True

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if len(text) > self.limit:
            text, self.cut = text[-self.limit :], True
        return "…" + text if self.cut else text


def check_environment(extra: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A check's environment: ``environ`` (default: this process's) without configctl's secrets, plus ``extra``.

    The check is the operator's script, often logging its environment: it gets the plain
    environment and configctl's settings that hold no secret (a password file's name passes, a
    password does not: :func:`configctl.settings.mask` says which values are secret), never a
    ``CONFIGCTL_*`` variable this version does not know (it may be a secret of a newer one).
    """
    source = os.environ if environ is None else environ
    kept = {k: v for k, v in source.items() if not k.startswith(settings.PREFIX) or _passable(k, v)}
    return {**kept, **extra}


_BY_VARIABLE = {s.env: s for s in settings.BY_NAME.values()}
_PROFILE_VARIABLES = (profiles.CONFIG_ENV, profiles.PROFILE_ENV)


def _passable(name: str, value: str) -> bool:
    """May the check see configctl's variable ``name``? Only a known setting whose value is no secret."""
    setting = _BY_VARIABLE.get(name)
    if setting is None:
        return name in _PROFILE_VARIABLES
    return bool(value) and settings.mask(setting, value) == value


def run_check(command: str, env: Mapping[str, str], timeout: float) -> CheckResult:
    """Run ``command`` with ``sh -c`` in :func:`check_environment` (``env`` added), judged by its exit status.

    It runs in a process group of its own, its output read into a :class:`Tail`. The shell's exit
    ends it (a background job left holding the output is not waited for, beyond
    :data:`DRAIN_SECONDS`); ``timeout`` (or Ctrl-C here) ends it too. Either way, everything it
    started is then killed (:func:`stop_check`), so nothing it started outlives its judgement.
    """
    started = time.monotonic()
    token = secrets.token_hex(8)
    process = subprocess.Popen(
        command,
        shell=True,
        env=check_environment({**env, RUN_VARIABLE: token}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    tail = Tail()
    exited = False
    try:
        exited = _follow(process, tail, started + timeout)
    finally:
        code = stop_check(process, token)
        _last_words(process, tail)
    return CheckResult(
        command, code if exited else None, not exited, time.monotonic() - started, tail.text(), timeout
    )


def _follow(process: subprocess.Popen[bytes], tail: Tail, deadline: float) -> bool:
    """Read the check's output into ``tail`` until its shell exits (True) or ``deadline`` passes (False).

    The shell is not reaped here (:func:`_exited`): its pid, its process group's id, stays reserved
    until :func:`stop_check` killed the group.
    """
    assert process.stdout is not None
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    reading = True
    while not _exited(process.pid):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if reading:
            reading = not _readable(fd, min(POLL_SECONDS, left)) or _read(fd, tail)
        else:
            time.sleep(min(POLL_SECONDS, left))
    if reading:
        _drain(fd, tail, time.monotonic() + DRAIN_SECONDS)
    return True


def _exited(pid: int) -> bool:
    """Has the shell exited? Asked without reaping it (``WNOWAIT``)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _read(fd: int, tail: Tail) -> bool:
    """One read into ``tail``; False at the end of the output."""
    try:
        chunk = os.read(fd, READ_CHUNK)
    except BlockingIOError:
        return True
    if chunk:
        tail.add(chunk)
    return bool(chunk)


def _drain(fd: int, tail: Tail, until: float) -> None:
    """What is left in the pipe, until its end or ``until`` (a background job may hold it open)."""
    while (left := until - time.monotonic()) > 0:
        if _readable(fd, left) and not _read(fd, tail):
            return


def _readable(fd: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``fd`` to have something to read (or its end); ``poll``, not
    ``select``, so a process with more than 1024 files open can run a check too."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(seconds * 1000))))


def stop_check(process: subprocess.Popen[bytes], token: str) -> int | None:
    """Kill everything the check started, then reap its shell: its exit status (None if it would not die).

    First its process group (its jobs, a pipeline, a sleep), then any process carrying the run's
    ``token`` in its environment or holding its output pipe: what left the group (``setsid``, a
    double fork) is found that way. Killing the group before the shell is reaped keeps its id
    from being given to some other process meanwhile.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    pipe = _pipe_link(process)
    for _ in range(3):  # a stray may fork once more while the first is killed
        strays = _strays(token, pipe, exclude=process.pid)
        if not strays:
            break
        for stray in strays:
            with contextlib.suppress(psutil.Error):
                stray.kill()
    try:
        return process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def _last_words(process: subprocess.Popen[bytes], tail: Tail) -> None:
    """What the killed processes had written and nobody read yet (their pipe's end comes at once now,
    bounded all the same), then the pipe closed."""
    if process.stdout is None:
        return
    with contextlib.suppress(OSError, ValueError):
        _drain(process.stdout.fileno(), tail, time.monotonic() + DRAIN_SECONDS)
    process.stdout.close()


def _pipe_link(process: subprocess.Popen[bytes]) -> str | None:
    """How ``/proc/PID/fd`` names the check's output pipe (``pipe:[inode]``)."""
    if process.stdout is None:
        return None
    try:
        return f"pipe:[{os.fstat(process.stdout.fileno()).st_ino}]"
    except OSError:
        return None


def _strays(token: str, pipe: str | None, *, exclude: int) -> list[psutil.Process]:
    """This user's processes (not this one, nor the shell) that carry ``token`` or hold ``pipe``."""
    me = os.getpid()
    uid = os.getuid()
    found = []
    for proc in psutil.process_iter():
        if proc.pid in (me, exclude):
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if proc.uids().real != uid:
                continue
            if proc.environ().get(RUN_VARIABLE) == token or (pipe is not None and _holds(proc.pid, pipe)):
                found.append(proc)
    return found


def _holds(pid: int, link: str) -> bool:
    """Does process ``pid`` have ``link`` (a pipe) open? Linux's ``/proc``; False where there is none."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for name in names:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{name}") == link:
                return True
    return False
