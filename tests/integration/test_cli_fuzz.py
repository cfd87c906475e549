"""Random --add-config strings and entity names thrown at the CLI: no traceback, no partial write."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from configctl.cli.main import main

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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
