"""A real ``configctl serve`` process for the browser tests (a module of its own, not the conftest:
every test directory's conftest is a module named ``conftest``, so importing one by name is a
matter of which was loaded last)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers import child_env, free_port, wait_for


class Served:
    """A running ``configctl serve``: its process, its URL, its stderr log."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}"
        self.log = log


def serve(zk_connect: str, *args: str, env: dict[str, str] | None = None) -> Served:
    """``configctl serve`` on a free loopback port, returned once ``/api/console`` answers
    (``env``: a token in ``CONFIGCTL_SERVE_TOKEN``, as an operator gives it)."""
    import urllib.request

    port = free_port()
    log = Path(tempfile.mkstemp(prefix="configctl-serve-", suffix=".log")[1])
    command = [sys.executable, "-m", "configctl", "serve", "--zookeeper", zk_connect,
               "--bind", f"127.0.0.1:{port}", *args]  # fmt: skip
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=child_env(env))
    served = Served(process, port, log)

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"configctl serve exited {process.returncode}: {log.read_text()!r}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(served.url + "/api/console", timeout=5) as r,
        ):
            return r.status == 200
        return False

    wait_for(up, timeout=60, message="configctl serve answering")
    return served
