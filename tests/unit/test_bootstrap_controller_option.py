"""``--bootstrap-controller`` as typed: checked before anything opens, never beside ``--bootstrap-server``.

What the controllers then do is shown on real KRaft clusters (tests/kraft/test_bootstrap_controller.py);
here only what is decided before a socket opens: each refusal is one line, and nothing is contacted
(the addresses are ports nothing listens on, so a connection attempt would be a different error).
"""

from __future__ import annotations

import pytest
from helpers import run_cli

pytestmark = pytest.mark.unit

NOWHERE = "127.0.0.1:1"


@pytest.mark.parametrize("where", ["before", "after"])
def test_both_bootstrap_options_are_refused_as_kafkas_tool_refuses_them(where):
    options = ["--bootstrap-server", NOWHERE, "--bootstrap-controller", NOWHERE]
    args = [*options, "describe", "--broker-defaults"]
    if where == "after":
        args = ["describe", "--broker-defaults", *options]
    done = run_cli(*args)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1
    assert "give only one of --bootstrap-server or --bootstrap-controller" in done.stderr
    assert "nothing was written" in done.stderr


def test_the_environments_bootstrap_server_is_named_when_it_meets_the_flag():
    done = run_cli(
        "--bootstrap-controller",
        NOWHERE,
        "alter",
        "--broker-defaults",
        "--add-config",
        "log.cleaner.threads=2",
        env={"CONFIGCTL_BOOTSTRAP_SERVER": NOWHERE},
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: CONFIGCTL_BOOTSTRAP_SERVER and --bootstrap-controller:")


@pytest.mark.parametrize("value", ["nope", "127.0.0.1:99999", "127.0.0.1:9093/chroot", ""])
def test_a_malformed_controller_address_is_a_usage_error(value):
    done = run_cli("--bootstrap-controller", value, "describe", "--broker-defaults")
    assert done.returncode == 2, done.stderr
    assert "--bootstrap-controller" in done.stderr
    assert done.stderr.count("\n") == 1


def test_nothing_listening_is_one_line_naming_the_address():
    done = run_cli("--bootstrap-controller", NOWHERE, "describe", "--broker-defaults")
    assert done.returncode == 3, done.stderr
    assert f"no Kafka controller at {NOWHERE} answered" in done.stderr and "connection refused" in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_option_is_listed_beside_bootstrap_server():
    done = run_cli("describe", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert text.index("--bootstrap-server") < text.index("--bootstrap-controller")
