"""Supervising server processes: launch in their own session, recognise them safely, signal, wait.

Servers run in their own session (``start_new_session``) so they outlive the command that started
them and a Ctrl-C in that terminal does not reach them. A pid read back from the state file may
have been recycled by the time anyone looks, so a process counts as ours only while it has the
recorded creation time *and* our main class and config file on its command line: a stranger that
inherited the pid is never signalled.
"""

from __future__ import annotations

import contextlib
import subprocess
import time

import psutil

from configctl.errors import EnvironmentProblem, InvalidInput
from configctl.files import read_bytes
from configctl.localzk.nodeconfig import QUORUM_MAIN, STANDALONE_MAIN
from configctl.localzk.state import Node

SIGNAL_TIMEOUT = 10.0


class Supervisor:
    """Launches nodes and finds, signals and waits for their processes.

    It remembers the children it launched itself: those are ours beyond doubt and must be reaped
    (waited for) so their zombies go and their ports are free after a stop.
    """

    def __init__(self) -> None:
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def launch(self, node: Node) -> None:
        """Start the node's recorded command in the background; record pid and creation time."""
        with open(node.console_file, "ab") as console:
            try:
                child = subprocess.Popen(
                    node.command,
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    cwd=node.dir,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise EnvironmentProblem(f"cannot run {node.command[0]}: {exc.strerror}") from None
        self._children[node.id] = child
        node.pid = child.pid
        try:
            node.create_time = psutil.Process(child.pid).create_time()
        except psutil.Error:
            node.create_time = None

    def exit_code(self, node: Node) -> int | None:
        """The exit status of a node this supervisor launched, once it has exited; else None."""
        child = self._children.get(node.id)
        return child.poll() if child is not None else None

    def launched(self, node: Node) -> bool:
        """Whether this supervisor launched the node (so :meth:`exit_code` can tell its fate)."""
        return node.id in self._children

    def process(self, node: Node) -> psutil.Process | None:
        """The node's live process if it is still ours: same start time, main class, our config file."""
        if node.pid is None:
            return None
        child = self._children.get(node.id)
        try:
            if child is not None and child.pid == node.pid and child.poll() is None:
                proc = psutil.Process(child.pid)  # launched by this very object: ours beyond doubt
                return None if proc.status() == psutil.STATUS_ZOMBIE else proc  # zombie: dying
            proc = psutil.Process(node.pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                self._reap(node.id)
                return None
            if node.create_time is not None and abs(proc.create_time() - node.create_time) > 1.0:
                return None
            cmdline = proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        config = str(node.config_file)
        ours = config in cmdline and any(main in cmdline for main in (STANDALONE_MAIN, QUORUM_MAIN))
        return proc if ours else None

    def terminate(self, nodes: list[Node], timeout: float = SIGNAL_TIMEOUT) -> None:
        """SIGTERM every node still ours, SIGKILL those still there after ``timeout``, reap all."""
        procs = [proc for proc in (self.process(node) for node in nodes) if proc is not None]
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.terminate()
        if not self.wait_gone(procs, timeout):
            for proc in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
            self.wait_gone(procs, timeout)
        for node in nodes:
            self._reap(node.id)

    def wait_gone(self, procs: list[psutil.Process], timeout: float) -> bool:
        """Wait until every process has exited; our own children are also reaped.

        A process that is not our child counts as gone once it is a zombie (its parent may be
        an init that never reaps); our children are waited for, so their ports are free after.
        """
        deadline = time.monotonic() + timeout
        children = {child.pid: child for child in self._children.values()}
        for proc in procs:
            child = children.get(proc.pid)
            if child is not None:
                try:
                    child.wait(timeout=max(deadline - time.monotonic(), 0.0))
                except subprocess.TimeoutExpired:
                    return False
        while any(_is_alive(proc) for proc in procs if proc.pid not in children):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _reap(self, node_id: int) -> None:
        child = self._children.pop(node_id, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=0)


def _is_alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def last_error(node: Node) -> str:
    """The last ERROR line of the node's logs, shortened, so a failed start says why on one line."""
    for path in (node.log_file, node.console_file):
        try:
            lines = read_bytes(path, "log").decode("utf-8", "replace").splitlines()
        except InvalidInput:  # no log yet, or not a file: nothing to quote
            continue
        for line in reversed(lines):
            if " ERROR " in line or line.startswith(("Error:", "Exception")):
                text = " ".join(line.split(" - ", 1)[-1].split())
                return f": {text[:200]}"
    return ""
