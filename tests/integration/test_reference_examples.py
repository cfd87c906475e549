"""Every JSON example of docs/reference/ has the shape of what configctl really prints or writes.

Each ```json block in the reference is preceded by a marker saying where its truth is:

* ``<!-- checked: ARGS -->``: ``configctl -o json ARGS`` against a real ZooKeeper;
* ``<!-- checked: node PATH -->``: the bytes of that ZooKeeper node;
* ``<!-- checked: snapshot-line ENTITY -->``: a line of the listener's snapshot file;
* ``<!-- checked: healthz -->``: the listener's ``/healthz`` body;
* ``<!-- not checked: WHY -->``: an example this test cannot produce, with the reason.

``; free: a, b`` after a marker names the dicts whose keys are data (a config, the settings):
their values are compared, not their keys; and values whose type depends on the data (a
setting's value). Everywhere else the keys must be exactly the
example's and each value of the same JSON type (null matches anything: it is "no value").
The commands run in the order of the pages, on one cluster, after the writes before them.
``<!-- file: NAME -->`` before a block writes it to NAME in the commands' directory first.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, child_env, free_port, run_cli, wait_for
from kazoo.client import KazooClient

REFERENCE = REPO_ROOT / "docs" / "reference"
PAGES = [
    "json-output.md",
    "zookeeper-nodes.md",
    "notifications.md",
    "state-and-fleet-nodes.md",
    "snapshots.md",
    "rollout-records.md",
    "metrics.md",
    "desired-state-files.md",
    "applied-log.md",
    "history-topic.md",
    "rollout-topic.md",
    "recorder-topic.md",
]
_BLOCK = re.compile(r"<!-- (checked|not checked|file): (.*?) -->\n```(json|yaml|text)\n(.*?)\n```", re.S)
_FENCE = re.compile(r"^```json$", re.M)


@dataclass(frozen=True)
class Example:
    page: str
    marker: str
    what: str
    language: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}: {self.what}"

    def parts(self) -> tuple[str, frozenset[str]]:
        """The check (``ARGS``, ``node PATH``, ...) and its free dicts."""
        check, _, free = self.what.partition("; free:")
        return check.strip(), frozenset(name.strip() for name in free.split(",") if name.strip())


def _examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = (REFERENCE / page).read_text(encoding="utf-8")
        found += [Example(page, *match.groups()) for match in _BLOCK.finditer(text)]
    return found


EXAMPLES = _examples()
CHECKED = [e for e in EXAMPLES if e.marker == "checked"]


def test_every_json_example_of_the_reference_says_how_it_is_checked() -> None:
    for path in sorted(REFERENCE.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        fences = len(_FENCE.findall(text))
        marked = sum(1 for m in _BLOCK.finditer(text) if m.group(3) == "json" and m.group(1) != "file")
        assert fences == marked, f"{path.name}: a ```json block without a <!-- checked: ... --> marker"
        assert path.name in PAGES or fences == 0, f"{path.name} has JSON examples: add it to PAGES"
    for example in EXAMPLES:
        if example.language == "json":
            json.loads(example.text)  # an example is valid JSON
        if example.marker == "not checked":
            assert len(example.what) > 10, f"{example.id}: say why it is not checked"


# -- comparing shapes ----------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def assert_shape(example: Any, actual: Any, free: frozenset[str], where: str = "$") -> None:
    """``actual`` has ``example``'s keys (exactly) and types, recursively; lists item by item."""
    name = where.rsplit(".", 1)[-1].split("[", 1)[0]
    if example is None or actual is None or (name in free and not isinstance(example, dict)):
        return
    assert _kind(example) == _kind(actual), (
        f"{where}: the example has {_kind(example)}, the output {_kind(actual)}"
    )
    if isinstance(example, dict):
        if name in free:
            if example:
                first = next(iter(example.values()))
                for key, value in actual.items():  # a map of maps (in_force: path -> config) is free too
                    assert_shape(first, value, free | {key}, f"{where}.{key}")
            return
        only_doc, only_output = sorted(set(example) - set(actual)), sorted(set(actual) - set(example))
        assert not only_doc and not only_output, (
            f"{where}: keys only in the example {only_doc}, only in the output {only_output}"
        )
        for key in example:
            assert_shape(example[key], actual[key], free, f"{where}.{key}")
    elif isinstance(example, list):
        for index, (item, real) in enumerate(zip(example, actual, strict=False)):
            assert_shape(item, real, free, f"{where}[{index}]")


def test_assert_shape_catches_a_new_key_and_a_new_type() -> None:
    assert_shape({"a": 1, "b": [{"c": "x"}]}, {"a": 2, "b": [{"c": "y"}, {"c": "z"}]}, frozenset())
    with pytest.raises(AssertionError, match="only in the output"):
        assert_shape({"a": 1}, {"a": 1, "new": 2}, frozenset())
    with pytest.raises(AssertionError, match="the example has number"):
        assert_shape({"a": 1}, {"a": "1"}, frozenset())
    assert_shape({"config": {"k": "v"}}, {"config": {"x": "1", "y": "2"}}, frozenset({"config"}))
    assert_shape({"m": {"a": {"k": "v"}}}, {"m": {"b": {}, "c": {"x": "1"}}}, frozenset({"m"}))


# -- the cluster the examples run on ------------------------------------------------------------------


@dataclass
class Cluster:
    connect: str
    directory: Path
    state_dir: Path
    metrics_port: int
    zk: KazooClient

    def configctl(self, *args: str) -> Any:
        result = run_cli("--zookeeper", self.connect, "--output", "json", *args, cwd=self.directory)
        assert result.returncode in (0, 2), f"configctl {' '.join(args)}: {result.stderr}"
        return json.loads(result.stdout)

    def last_applied(self) -> int:
        data = self.zk.exists("/configctl/brokers/1") and self.zk.get("/configctl/brokers/1")[0]
        return json.loads(data)["last_applied_change"] if data else -1


@pytest.fixture(scope="module")
def cluster(zk_server, _zk_admin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Topic orders, user alice and her client app1, broker 1's listener, and a node it cannot apply."""
    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    _zk_admin.create(chroot)
    connect = f"{zk_server.connect_string}{chroot}"
    directory = tmp_path_factory.mktemp("reference")
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.start(timeout=30)
    port = free_port()
    listener = None
    try:
        for args in (
            ["--topic", "orders", "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]"],
            ["--user", "alice", "--add-config", "producer_byte_rate=1048576"],
            ["--user", "alice", "--client", "app1", "--add-config", "consumer_byte_rate=2048"],
        ):
            result = run_cli("--zookeeper", connect, "alter", *args)
            assert result.returncode == 0, result.stderr
        command = [
            sys.executable, "-m", "configctl", "listener", "run", "--zookeeper", connect, "--broker-id", "1",
            "--server-properties", str(REPO_ROOT / "examples" / "server-1.properties"),
            "--state-dir", str(directory / "state"), "--metrics-port", str(port), "--metrics-address", "127.0.0.1",
        ]  # fmt: skip
        listener = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=open(directory / "listener.log", "w"),  # noqa: SIM115 - closed with the process
            env=child_env(),
        )
        found = Cluster(connect, directory, directory / "state", port, zk)
        wait_for(lambda: found.last_applied() >= 2, timeout=90, message="broker 1's listener")
        # A topic node a listener cannot apply (a number where Kafka stores a string): a problem.
        zk.create("/config/topics/broken", b'{"version":1,"config":{"retention.ms":5}}')
        zk.create(
            "/config/changes/config_change_", b'{"version":2,"entity_path":"topics/broken"}', sequence=True
        )
        wait_for(lambda: found.last_applied() >= 3, timeout=30, message="the broken node reported")
        yield found
    finally:
        if listener is not None:
            listener.terminate()
            try:
                listener.wait(timeout=30)
            except subprocess.TimeoutExpired:
                listener.kill()
        zk.stop()
        zk.close()
        with contextlib.suppress(Exception):
            _zk_admin.delete(chroot, recursive=True)


def _actual(cluster: Cluster, check: str) -> Any:
    verb, _, rest = check.partition(" ")
    if verb == "node":
        path = rest.replace("{rollout_id}", _rollout_id(cluster))
        return json.loads(cluster.zk.get(path)[0])
    if verb == "snapshot-line":
        lines = (cluster.state_dir / "broker-1.jsonl").read_text(encoding="utf-8").splitlines()
        return next(json.loads(line) for line in lines if json.loads(line)["entity_path"] == rest)
    if verb == "healthz":
        with urllib.request.urlopen(f"http://127.0.0.1:{cluster.metrics_port}/healthz", timeout=10) as answer:
            return json.loads(answer.read())
    return cluster.configctl(*shlex.split(check))


def _rollout_id(cluster: Cluster) -> str:
    return str(cluster.configctl("rollout", "list")[0]["id"])


@pytest.mark.parametrize("example", CHECKED, ids=[e.id for e in CHECKED])
def test_the_example_has_the_shape_of_the_real_output(cluster: Cluster, example: Example) -> None:
    for block in EXAMPLES:  # the files the pages show, before the commands that read them
        if block.marker == "file":
            (cluster.directory / block.what.strip()).write_text(block.text + "\n", encoding="utf-8")
    check, free = example.parts()
    if example.language == "yaml":  # a desired-state file: valid, and plan finds changes in it
        name = cluster.directory / "example.yaml"
        name.write_text(example.text + "\n", encoding="utf-8")
        result = run_cli("--zookeeper", cluster.connect, "plan", "-f", str(name), cwd=cluster.directory)
        assert result.returncode == 2, result.stderr
        return
    actual = _actual(cluster, check)
    assert_shape(json.loads(example.text), actual, free)


def test_the_metrics_table_names_every_metric_served(cluster: Cluster) -> None:
    page = (REFERENCE / "metrics.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(configctl_[a-z_]+)", page, re.M))
    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.metrics_port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    # Every family has a TYPE line; the histogram's creation time is the client library's own.
    served = {
        name
        for name in re.findall(r"^# TYPE (configctl_[a-z_]+) ", text, re.M)
        if not name.endswith("_created")
    }
    assert documented == served, f"only documented: {documented - served}; only served: {served - documented}"


def test_the_kafka_configs_mapping_runs_as_written(cluster: Cluster) -> None:
    """Each configctl command of docs/kafka-compatibility.md's kafka-configs.sh mapping succeeds."""
    page = (REPO_ROOT / "docs" / "kafka-compatibility.md").read_text(encoding="utf-8")
    section = page.split("## Coming from kafka-configs.sh", 1)[1].split("\n## ", 1)[0]
    commands = [
        span
        for row in section.splitlines()
        if row.startswith("| `--")
        for span in re.findall(r"`(configctl (?:alter|describe) [^`]+)`", row.split("|")[2])
    ]
    assert len(commands) >= 8
    (cluster.directory / "retention.properties").write_text("retention.ms=86400000\n", encoding="utf-8")
    for command in commands:
        result = run_cli("--zookeeper", cluster.connect, *shlex.split(command)[1:], cwd=cluster.directory)
        assert result.returncode == 0, f"{command}: {result.stderr}"
