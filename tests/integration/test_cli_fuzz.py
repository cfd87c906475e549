"""Random input thrown at the CLI: names, values, files and option values (issue 13's fuzz suite).

Every run must end with one line on stderr and a documented exit status, and whenever that status
says nothing was written (1 to 7), ZooKeeper's tree must be exactly as before. ``make test`` runs a
bounded number of examples; before a release run more (docs/cli.md):

    CONFIGCTL_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/integration/test_cli_fuzz.py
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from configctl.cli.main import main
from configctl.errors import EXIT_CODES

EXAMPLES = int(os.environ.get("CONFIGCTL_FUZZ_EXAMPLES", "120"))
NOTHING_WRITTEN = range(1, 8)

ENTITY_FLAGS = ["--topic", "--client", "--user", "--broker", "--ip"]
KEYS = [
    "retention.ms",
    "cleanup.policy",
    "consumer_byte_rate",
    "log.retention.ms",
    "connection_creation_rate",
    "SCRAM-SHA-256",
    "listeners",
    "bogus",
]
text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
add_config = st.one_of(
    text,
    st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(text, st.integers().map(str))), max_size=4).map(
        lambda pairs: ",".join(f"{k}={v}" for k, v in pairs)
    ),
    st.lists(st.sampled_from(["[", "]", ",", "=", "a", " ", "1"]), max_size=12).map("".join),
)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _snapshot(zk, path: str = "/") -> dict[str, bytes]:
    nodes = {}
    for child in zk.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        nodes[full] = zk.get(full)[0]
        nodes.update(_snapshot(zk, full))
    return nodes


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flag=st.sampled_from(ENTITY_FLAGS), name=text, config=add_config)
def test_random_input_never_tracebacks_or_half_writes(zk_connect, zk, flag, name, config):
    before = _snapshot(zk)
    code, stdout, stderr = _run(
        ["--zookeeper", zk_connect, "alter", flag, name, "--add-config", config, "--output", "json"]
    )
    assert "Traceback" not in stderr
    after = _snapshot(zk)
    if code != 0:
        assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
        assert after == before
        return
    document = json.loads(stdout)
    written = {k: v for k, v in after.items() if k not in before or before[k] != v}
    if document["changed"]:
        path = "/config/" + document["entity_path"]
        assert path in written
        assert any(k.startswith("/config/changes/config_change_") for k in written)
    else:
        assert written == {}


def _check(code: int, stderr: str, before: dict, after: dict) -> None:
    """The promise: one line on error, a documented status, and no write when it says none."""
    assert "Traceback" not in stderr
    assert code in EXIT_CODES, (code, stderr)
    if code != 0:
        assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    if code in NOTHING_WRITTEN:
        assert after == before


COMMANDS = [
    ["describe"],
    ["describe", "--effective", "--broker", "1"],
    ["history"],
    ["rollback", "--to", "0", "--yes"],
    ["alter", "--delete-config", "retention.ms"],
    ["alter", "--replace", "--yes", "--add-config", "retention.ms=1"],
    ["alter", "--add-config", "retention.ms=1", "--dry-run"],
    ["alter", "--add-config", "retention.ms=1", "--wait", "0"],
]
option_values = st.one_of(
    text,
    st.sampled_from(["nan", "inf", "-1", "1e308", "0", "", "0.01", "3", "abc", "1" * 400]),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), flag=st.sampled_from(ENTITY_FLAGS), name=text)
def test_random_names_on_every_command(zk_connect, zk, command, flag, name):
    before = _snapshot(zk)
    code, _, stderr = _run(["--zookeeper", zk_connect, *command, flag, name])
    _check(code, stderr, before, _snapshot(zk))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    option=st.sampled_from(["--zk-timeout", "--zookeeper", "--output", "--zk-auth", "--profile"]),
    value=option_values,
    before_subcommand=st.booleans(),
)
def test_random_global_option_values(zk_connect, zk, option, value, before_subcommand):
    before = _snapshot(zk)
    if option == "--zookeeper":
        value = zk_connect + "/" + value  # a chroot suffix: relative segments, control chars, ...
    command = ["alter", "--topic", "t", "--add-config", "retention.ms=5"]
    argv = [option, value, *command] if before_subcommand else [*command, option, value]
    if option != "--zookeeper":
        argv = ["--zookeeper", zk_connect, *argv]
    code, _, stderr = _run(argv)
    _check(code, stderr, before, _snapshot(zk))


yaml_text = st.one_of(
    text,
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), text),
        lambda children: st.one_of(
            st.lists(children, max_size=3), st.dictionaries(text, children, max_size=3)
        ),
        max_leaves=12,
    ).map(lambda value: json.dumps({"topics": value}) if not isinstance(value, str) else value),
    st.lists(
        st.sampled_from(["topics:", "  t:", "    retention.ms: 1", "&a [*a]", "{", "- ", "<<: *x", ":"]),
        max_size=6,
    ).map("\n".join),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=yaml_text, command=st.sampled_from(["plan", "apply"]))
def test_random_desired_state_files(zk_connect, zk, tmp_path_factory, document, command):
    path = tmp_path_factory.mktemp("fuzz") / "desired.yaml"
    path.write_text(document, encoding="utf-8", errors="surrogatepass")
    before = _snapshot(zk)
    argv = ["--zookeeper", zk_connect, command, "-f", str(path)] + (["--yes"] if command == "apply" else [])
    code, _, stderr = _run(argv)
    _check(code, stderr, before, _snapshot(zk))
