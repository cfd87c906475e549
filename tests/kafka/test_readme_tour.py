"""The README's short tour, typed as shown, prints what the README shows (``readme_tour`` reads it).

Real parts only: the tour's own ZooKeeper (port 2181, as typed), its three Kafka 3.9 brokers,
three listeners, Kafka's own ConfigCommand and the Spark audit, in a scratch home directory that
links the checkout's ``examples``, ``.venv`` and ``build/kafka``. Slow (a few minutes): it is the
whole tour.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from readme_tour import REPO_ROOT, Shell, missing, steps, tour_block

pytestmark = pytest.mark.slow


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_the_tour_parses_into_commands_and_what_each_prints() -> None:
    tour = steps(tour_block())
    assert tour[0].command.startswith(". .venv/bin/activate")
    assert tour[-1].command == "configctl zk stop"
    refused = [s for s in tour if s.must_fail]
    assert refused and all(s.expected for s in refused)
    assert any(s.exit_status == 9 for s in tour)
    assert sum(s.background for s in tour) == 4
    assert missing(["broker 1: 127.0.0.1:40001, .../x"], "broker 1: 127.0.0.1:5, /h/x", "/h") == []
    assert missing(["a │ b"], "b a", "/h") == ["a │ b"]


def test_every_command_of_the_readme_tour_prints_what_the_readme_shows(tmp_path: Path) -> None:
    if not _port_free(2181):
        pytest.fail("the README's tour starts ZooKeeper on port 2181, which something else holds")
    home = tmp_path / "home"
    (home / "build").mkdir(parents=True)
    for name in ("examples", ".venv"):
        (home / name).symlink_to(REPO_ROOT / name)
    (home / "build" / "kafka").symlink_to(REPO_ROOT / "build" / "kafka")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)  # the listener's plugin module (examples.plugins) too
    shell = Shell(home, env)
    failures = []
    try:
        for step in steps(tour_block()):
            status, printed = shell.type(step, timeout=300)
            absent = missing(step.expected, printed, str(home))
            if absent:
                failures.append(f"$ {step.command}\n  missing: {absent}\n  printed:\n{printed}")
            if status is None:
                continue
            if step.exit_status is not None and status != step.exit_status:
                failures.append(
                    f"$ {step.command}: exit {status}, the README says {step.exit_status}\n{printed}"
                )
            elif step.must_fail and status == 0:
                failures.append(f"$ {step.command}: exit 0, the README shows an error\n{printed}")
            elif not step.must_fail and step.exit_status is None and status != 0:
                failures.append(f"$ {step.command}: exit {status}\n{printed}")
    finally:
        shell.close()
        if not _port_free(2181):  # a failure before the tour's own `zk stop`
            os.system(f"HOME={home} {REPO_ROOT / '.venv' / 'bin' / 'configctl'} zk stop >/dev/null 2>&1")
    assert not failures, "\n\n".join(failures)
