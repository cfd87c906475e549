"""Random sequences of configctl commands on a real Kafka 4.4 KRaft cluster, checked step by step
against what the cluster reports and what configctl's history holds.

Each example is a short sequence of commands typed as an operator types them: ``alter
--add-config`` (sometimes with ``--wait`` or ``--dry-run``) and ``--delete-config`` on two topics,
one broker, the broker default, a user, a client, a user+client, the user, client and
user+client-default quotas, an IP, the IP default and the user's SCRAM credentials;
``--if-version`` with the entity's version or a stale one; ``rollback --to`` a version this run
recorded, or one never recorded; a value the rules refuse. After every step:

- the exit status is the one the step calls for (0; 1 for bad input, nothing written; 5 for a
  stale ``--if-version``; 6 for a version never recorded), a failure in one line; ``--dry-run``
  writes nothing;
- every entity reads, in the cluster's own answer, as the commands so far asked: kafka-python's
  DescribeConfigs (the topic's, the broker's and the default's dynamic layers), DescribeClientQuotas
  and DescribeUserScramCredentials, not configctl's reads. A write that changed something is
  answered only once the cluster holds it; ``--wait`` reports ``applied`` for every broker;
- configctl's history, read raw from its topic (docs/reference/history-topic.md), gained exactly
  one record for each write and none for a refusal or a write that changed nothing: the version
  one past the entity's last (0 for an entity that had none), the command's reason, the config
  the cluster holds (secrets masked), and ``changed`` leading back to the previous config.

At the end of each example, ``configctl history -o json`` of the last entity lists the records
this run wrote and no write outside configctl (all writes were configctl's).

The cluster is the session's (``kraft``: once on the combined node, once on two brokers with a
controller of their own); what the run writes to shared entities is put back afterwards. A few
examples in the ordinary run; ``make test-long`` (``-m long``) runs the long one.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import KAFKA4_HOME, KRaftFleet
from helpers import create_topics, run_cli, unique_name
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.consumer import KafkaConsumer
from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest
from kafka.structs import TopicPartition

from configctl.entities import Entity
from configctl.kraft.historytopic import TOPIC as HISTORY_TOPIC
from configctl.kraft.store import KRaftStore
from configctl.localkraft import KRaftCluster
from configctl.secrets import MASK, masked
from configctl.store import version_after

SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")

# Keys each kind of entity takes, with values Kafka 4.4 accepts and reports exactly as written.
TOPIC_KEYS = {
    "retention.ms": ["60000", "86400000", "-1"],
    "segment.ms": ["3600000", "86400000"],
    "cleanup.policy": ["delete", "compact", "compact,delete"],
    "compression.type": ["producer", "snappy", "zstd"],
    "max.message.bytes": ["1048588", "524288"],
    "min.cleanable.dirty.ratio": ["0.5", "0.1"],
}
BROKER_KEYS = {
    "log.retention.ms": ["3600000", "86400000", "-1"],
    "log.roll.ms": ["3600000", "604800000"],
    "log.cleanup.policy": ["delete", "compact,delete"],
    "compression.type": ["producer", "gzip", "uncompressed"],  # lz4: its own cluster, below
    "log.cleaner.min.cleanable.ratio": ["0.5", "0.25"],
    "log.message.timestamp.type": ["CreateTime", "LogAppendTime"],
    "log.cleaner.threads": ["1", "2"],
}
# Named principals and clients nobody connects as: any quota. Defaults apply to every client of
# the shared cluster (configctl's own included), so only limits nothing here comes near.
NAMED_QUOTAS = {
    "producer_byte_rate": ["1024", "1048576"],
    "consumer_byte_rate": ["2048", "4096"],
    "request_percentage": ["12.5", "50"],
    "controller_mutation_rate": ["10", "100"],
}
DEFAULT_QUOTAS = {
    "producer_byte_rate": ["1073741824", "2147483648"],
    "consumer_byte_rate": ["1073741824", "2147483648"],
    "controller_mutation_rate": ["100000", "200000"],
}
SCRAM_KEYS = {mechanism: ["4096", "8192"] for mechanism in SCRAM}  # iterations; a new password each time
IP_KEYS = {"connection_creation_rate": ["5", "25"]}
IP_DEFAULT_KEYS = {"connection_creation_rate": ["100000", "200000"]}

# Each entity of a run: its path, its keys, and a value the rules refuse (exit 1, nothing written).
SLOTS: dict[str, tuple[str, dict[str, list[str]], str]] = {
    "topic-a": ("topics/{a}", TOPIC_KEYS, "retention.ms=soon"),
    "topic-b": ("topics/{b}", TOPIC_KEYS, "cleanup.policy=sometimes"),
    "broker": ("brokers/{broker}", BROKER_KEYS, "log.roll.ms=soon"),
    "broker-default": ("brokers/<default>", BROKER_KEYS, "log.message.timestamp.type=Whenever"),
    "user": ("users/{user}", {**NAMED_QUOTAS, **SCRAM_KEYS}, "SCRAM-SHA-512=[iterations=10,password=x]"),
    "client": ("clients/{client}", NAMED_QUOTAS, "consumer_byte_rate=fast"),
    "user-client": ("users/{user}/clients/{client}", NAMED_QUOTAS, "request_percentage=lots"),
    "user-default": ("users/<default>", DEFAULT_QUOTAS, "producer_byte_rate=fast"),
    "client-default": ("clients/<default>", DEFAULT_QUOTAS, "no_such_quota=1"),
    "user-client-default": ("users/{user}/clients/<default>", NAMED_QUOTAS, "consumer_byte_rate=fast"),
    "ip": ("ips/{ip}", IP_KEYS, "connection_creation_rate=fast"),
    "ip-default": ("ips/<default>", IP_DEFAULT_KEYS, "consumer_byte_rate=1"),
}
FLAGS = {"topics": "--topic", "brokers": "--broker", "users": "--user", "clients": "--client", "ips": "--ip"}
# Entities other tests of the session use too: read as they are, and put back afterwards.
SHARED = ("broker", "broker-default", "user-default", "client-default", "ip-default")


# -- the steps ---------------------------------------------------------------------------------


@st.composite
def step(draw: st.DrawFn) -> tuple[Any, ...]:
    slot = draw(st.sampled_from(sorted(SLOTS)))
    keys = SLOTS[slot][1]
    kind = draw(st.sampled_from(["set", "set", "set", "delete", "delete", "if-version", "rollback", "bad"]))
    if kind == "bad":
        return ("bad", slot)
    if kind == "rollback":
        return ("rollback", slot, draw(st.integers(min_value=-1, max_value=20)))  # -1: never recorded
    if kind == "delete":
        return ("delete", slot, draw(st.sampled_from(sorted(keys))))
    names = draw(st.lists(st.sampled_from(sorted(keys)), min_size=1, max_size=2, unique=True))
    pairs = tuple((name, draw(st.sampled_from(keys[name]))) for name in names)
    if kind == "if-version":
        return ("if-version", slot, pairs, draw(st.sampled_from([0, 0, -1, 1])))
    return ("set", slot, pairs, draw(st.sampled_from(["", "", "--wait", "--dry-run"])))


# -- the cluster's own answer (kafka-python, not configctl's reads) ------------------------------


def comparable(slot: str, config: dict[str, str]) -> dict[str, Any]:
    """A config as the cluster's answer can say it: quotas as numbers, a SCRAM credential as its
    iteration count (Kafka never hands a password back)."""
    if slot.startswith(("topic", "broker")):
        return dict(config)
    return {
        key: int(value.removeprefix("iterations=")) if key in SCRAM else float(value)
        for key, value in config.items()
    }


@dataclass
class Sandbox:
    """One run's entities on one cluster, what configctl's commands asked of each, and its history."""

    kraft: KRaftFleet
    paths: dict[str, str]
    selectors: dict[str, tuple[str, ...]]
    broker_id: int
    initial: dict[str, dict[str, str]] = field(default_factory=dict)
    config: dict[str, dict[str, str]] = field(default_factory=lambda: {slot: {} for slot in SLOTS})
    version: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SLOTS, -1))
    recorded: dict[str, dict[int, tuple[dict[str, str], str]]] = field(default_factory=dict)
    """Each entity's history records this run wrote: version -> (config, reason)."""
    start_version: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SLOTS, -1))
    start_ms: int = 0
    admin: KafkaAdminClient | None = None
    consumer: KafkaConsumer | None = None
    offset: int = 0
    steps: int = 0
    dirty: bool = False

    # The cluster's answer, every entity of the run at once.

    def reported(self) -> dict[str, dict[str, Any]]:
        assert self.admin is not None
        found: dict[str, dict[str, Any]] = {slot: {} for slot in SLOTS}
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, self.name("topic-a")),
            ConfigResource(ConfigResourceType.TOPIC, self.name("topic-b")),
            ConfigResource(ConfigResourceType.BROKER, str(self.broker_id)),
        ]
        described = self.admin.describe_configs(resources, include_synonyms=True, config_filter="all")
        for slot in ("topic-a", "topic-b"):
            entries = described["topic"][self.name(slot)]
            found[slot] = {
                k: e["value"] for k, e in entries.items() if e["config_source"] == "DYNAMIC_TOPIC_CONFIG"
            }
        for entry in described["broker"][str(self.broker_id)].values():
            for synonym in entry["synonyms"]:
                layer = {"DYNAMIC_BROKER_CONFIG": "broker", "DYNAMIC_DEFAULT_BROKER_CONFIG": "broker-default"}
                if synonym["source"] in layer:
                    found[layer[synonym["source"]]][synonym["name"]] = synonym["value"]
        by_path = {path: slot for slot, path in self.paths.items()}
        for path, values in reported_quotas(self.admin).items():
            if path in by_path:
                found[by_path[path]] = dict(values)
        user = self.name("user")
        answer = self.admin.describe_user_scram_credentials([user])[user]
        for info in answer["credential_infos"]:
            found["user"][info["mechanism"].name.replace("_", "-")] = info["iterations"]
        return found

    def expected(self) -> dict[str, dict[str, Any]]:
        return {slot: comparable(slot, self.config[slot]) for slot in SLOTS}

    def name(self, slot: str) -> str:
        return self.paths[slot].split("/", 1)[1]

    # configctl's history, read raw from its topic.

    def new_records(self) -> list[dict[str, Any]]:
        """The history records written since the last call, oldest first, as stored."""
        assert self.consumer is not None
        partition = TopicPartition(HISTORY_TOPIC, 0)
        if HISTORY_TOPIC not in self.consumer.topics():
            return []
        self.consumer.assign([partition])
        self.consumer.seek(partition, self.offset)
        end = self.consumer.end_offsets([partition])[partition]
        records = []
        deadline = time.monotonic() + 30
        while self.consumer.position(partition) < end:
            assert time.monotonic() < deadline, "history topic not read in 30 s"
            for message in self.consumer.poll(timeout_ms=500).get(partition, ()):
                if message.value is not None:
                    records.append(json.loads(message.value))
        self.offset = end
        return records


def reported_quotas(admin: KafkaAdminClient) -> dict[str, dict[str, float]]:
    """Every quota and IP entity the cluster stores, by configctl's path for it."""
    manager = admin._manager  # kafka-python has no public DescribeClientQuotas
    response = manager.run(manager.send, DescribeClientQuotasRequest(components=[], strict=False))
    assert response.error_code == 0, response.error_message
    found = {}
    for entry in response.entries:
        parts = {p.entity_type: p.entity_name or "<default>" for p in entry.entity}
        if "ip" in parts:
            path = f"ips/{parts['ip']}"
        elif "user" in parts:
            path = f"users/{parts['user']}" + (
                f"/clients/{parts['client-id']}" if "client-id" in parts else ""
            )
        else:
            path = f"clients/{parts['client-id']}"
        found[path] = {v.key: v.value for v in entry.values}
    return found


def cli(at: Sandbox | KRaftFleet, *args: str):
    """``configctl --bootstrap-server <the cluster> ARGS``, as an operator types it."""
    return run_cli("--bootstrap-server", (at.kraft if isinstance(at, Sandbox) else at).bootstrap, *args)


def configctl_reads(sandbox: Sandbox, slots: tuple[str, ...]) -> dict[str, tuple[dict[str, str], int]]:
    """configctl's config and version of entities (the version is configctl's own count on KRaft:
    nothing else can say it; the config is held to the cluster's answer)."""
    with KRaftStore(sandbox.kraft.bootstrap, timeout=30) as store:
        read = store.read_many([Entity.from_path(sandbox.paths[slot]) for slot in slots], strict=False)
    return {slot: (stored.config, stored.version) for slot, stored in zip(slots, read, strict=True)}


# -- one step, and what it must leave ------------------------------------------------------------


def typed(key: str, value: str) -> str:
    """``key=value`` as --add-config takes it (a list value in brackets)."""
    return f"{key}=[{value}]" if "," in value else f"{key}={value}"


@dataclass
class Expected:
    """What a step must end with: its exit status, and the entity's config if it writes one."""

    args: list[str]
    exit: int = 0
    after: dict[str, str] | None = None
    reason: str = ""
    wait: bool = False


def plan(sandbox: Sandbox, action: tuple[Any, ...]) -> Expected:
    """The command a step types and what it must do, from what the run asked so far."""
    kind, slot = action[0], action[1]
    selector = list(sandbox.selectors[slot])
    before, version = sandbox.config[slot], sandbox.version[slot]
    reason = f"property step {sandbox.steps}"
    if kind == "bad":
        return Expected(["alter", *selector, "--add-config", SLOTS[slot][2]], exit=1)
    if kind == "delete":
        key = action[2]
        args = ["alter", *selector, "--delete-config", key, "--reason", reason]
        if key not in before:
            return Expected(args, exit=1)
        return Expected(args, after={k: v for k, v in before.items() if k != key}, reason=reason)
    if kind == "rollback":
        recorded = sorted(sandbox.recorded.get(slot, {}))
        if action[2] < 0 or not recorded:  # a version never recorded: NotFound, nothing written
            return Expected(["rollback", *selector, "--to", str(max(version, 0) + 1000), "--yes"], exit=6)
        to = recorded[action[2] % len(recorded)]
        target, _ = sandbox.recorded[slot][to]
        args = ["rollback", *selector, "--to", str(to), "--yes", "--reason", reason]
        # history keeps a credential masked: one the user holds is left as it is, one gone since
        # cannot be restored (refused, nothing written)
        if any(value == MASK and key not in before for key, value in target.items()):
            return Expected(args, exit=1)
        restored = {key: before[key] if value == MASK else value for key, value in target.items()}
        reason = f"rollback to {to}: {reason}"
        return Expected(args, after=restored if restored != before else None, reason=reason)
    pairs: tuple[tuple[str, str], ...] = action[2]
    typed_pairs, asked = [], {}
    for key, value in pairs:
        if key in SCRAM:
            typed_pairs.append(f"{key}=[iterations={value},password={unique_name('pw')}]")
            asked[key] = f"iterations={value}"
        else:
            typed_pairs.append(typed(key, value))
            asked[key] = value
    args = ["alter", *selector, "--add-config", ",".join(typed_pairs), "--reason", reason]
    after = {**before, **asked}
    changes = after != before or any(key in SCRAM for key in asked)  # a new password is a write
    expected = Expected(args, after=after if changes else None, reason=reason)
    if kind == "if-version":
        args += ["--if-version", str(version + action[3])]
        if action[3] != 0:
            return Expected(args, exit=5)
    elif action[3] == "--wait":
        args += ["--wait", "30"]
        expected.wait = True
    elif action[3] == "--dry-run":  # the brokers judge it (validateOnly); nothing written
        args.append("--dry-run")
        return Expected(args)
    return expected


def run_step(sandbox: Sandbox, action: tuple[Any, ...], done_so_far: list[tuple[Any, ...]]) -> None:
    sandbox.steps += 1
    slot = action[1]
    expected = plan(sandbox, action)
    where = f"step {action} after {done_so_far}"
    done = cli(sandbox, *expected.args, "-o", "json")
    assert done.returncode == expected.exit, f"{where}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    if done.returncode != 0:
        assert len(done.stderr.strip().splitlines()) == 1, f"{where}: {done.stderr}"
    before, version = sandbox.config[slot], sandbox.version[slot]
    if expected.after is not None:
        sandbox.config[slot] = expected.after
        sandbox.version[slot] = version_after(version)
        document = json.loads(done.stdout)
        assert (document["changed"], document["version"]) == (True, sandbox.version[slot]), where
    if "--dry-run" in expected.args:
        document = json.loads(done.stdout)
        assert (document["dry_run"], document["version"]) == (True, None), where
    if expected.wait:  # every broker that takes the entity (a broker's own config: that broker) says applied
        rollout = {b["broker_id"]: b["status"] for b in json.loads(done.stdout)["rollout"]["brokers"]}
        asked = [sandbox.broker_id] if slot == "broker" else sandbox.kraft.broker_ids
        assert rollout == dict.fromkeys(asked, "applied"), where
    agree(sandbox, where)
    records = sandbox.new_records()
    if expected.after is None:
        assert records == [], f"{where}: nothing was written, yet history has {records}"
        return
    assert len(records) == 1, f"{where}: one write, {len(records)} history records: {records}"
    (record,) = records
    assert record["entity_path"] == sandbox.paths[slot], where
    assert record["version"] == sandbox.version[slot], f"{where}: {record}"
    assert record["reason"] == expected.reason and record["identity"], f"{where}: {record}"
    entity = Entity.from_path(sandbox.paths[slot])  # history records a secret masked, as it is shown
    assert record["config"] == masked(entity, expected.after), f"{where}: {record}"
    changed = record["changed"]
    led_from = {k: v for k, v in record["config"].items() if k not in changed}
    led_from.update({k: v for k, v in changed.items() if v is not None})
    assert led_from == masked(entity, before), f"{where}: the record's changed does not lead back: {record}"
    sandbox.recorded.setdefault(slot, {})[record["version"]] = (record["config"], record["reason"])


def agree(sandbox: Sandbox, where: str, timeout: float = 15.0) -> None:
    """The cluster reports every entity as the run asked (brokers replay the metadata log a
    moment after the controller commits, so a broker other than the one asked may lag)."""
    deadline = time.monotonic() + timeout
    while True:
        reported, expected = sandbox.reported(), sandbox.expected()
        if reported == expected or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    wrong = {s: (reported[s], expected[s]) for s in SLOTS if reported[s] != expected[s]}
    assert not wrong, f"{where}: the cluster reports (left) other than asked (right): {wrong}"


def check_history_command(sandbox: Sandbox, slot: str) -> None:
    """``configctl history -o json`` lists this run's records of ``slot`` as written, and no
    write outside configctl since the run began (every write was configctl's)."""
    done = cli(sandbox, "history", *sandbox.selectors[slot], "-o", "json")
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)
    ours = sandbox.recorded.get(slot, {})
    listed = {
        e["version"]: (e["config"], e["reason"])
        for e in entries
        if not e.get("written_outside_configctl") and e["version"] in ours
    }
    assert listed == ours, f"history of {slot}: {entries}"
    start = sandbox.start_version[slot]
    outside = [
        e
        for e in entries
        if e.get("written_outside_configctl")
        and (e["version"] > start or (e["version"] < 0 and (e["not_before_ms"] or 0) >= sandbox.start_ms))
    ]
    assert not outside, f"history of {slot} lists writes outside configctl nobody made: {outside}"


# -- the run's entities on each cluster ----------------------------------------------------------


def start(kraft: KRaftFleet) -> Sandbox:
    """Two new topics, a new user, client and IP, and the shared entities as they are now."""
    a, b, user, client = (unique_name(prefix) for prefix in ("prop-a", "prop-b", "prop-user", "prop-app"))
    ip = ".".join(["10", *(str(random.randint(1, 254)) for _ in range(3))])
    names = {"a": a, "b": b, "broker": kraft.broker_ids[-1], "user": user, "client": client, "ip": ip}
    create_topics(kraft.bootstrap, names["a"], names["b"])
    paths = {slot: path.format(**names) for slot, (path, _, _) in SLOTS.items()}
    selectors = {slot: selector(path) for slot, path in paths.items()}
    sandbox = Sandbox(kraft, paths, selectors, names["broker"])
    sandbox.admin = KafkaAdminClient(bootstrap_servers=kraft.bootstrap.split(","), client_id="property-check")
    sandbox.consumer = KafkaConsumer(bootstrap_servers=kraft.bootstrap.split(","), enable_auto_commit=False)
    resync(sandbox, SHARED)
    sandbox.initial = {slot: dict(sandbox.config[slot]) for slot in SHARED}
    return sandbox


def selector(path: str) -> tuple[str, ...]:
    """configctl's flags for the entity at ``path`` (``users/u/clients/<default>``: ``--user u --client-defaults``)."""
    parts, args = path.split("/"), []
    for kind, name in zip(parts[::2], parts[1::2], strict=True):
        flag = FLAGS[kind]
        args += [f"{flag}-defaults"] if name == "<default>" else [flag, name]
    return tuple(args)


def resync(sandbox: Sandbox, slots: tuple[str, ...] = tuple(SLOTS)) -> None:
    """Take ``slots`` as configctl reads them (at the start, or after a failed example), as the cluster has them."""
    for slot, (config, version) in configctl_reads(sandbox, slots).items():
        sandbox.config[slot], sandbox.version[slot] = config, version
    sandbox.start_version.update({slot: sandbox.version[slot] for slot in slots})
    sandbox.start_ms = int(time.time() * 1000)
    agree(sandbox, "at the start")
    sandbox.new_records()


def restore(sandbox: Sandbox) -> None:
    """Put every shared entity back as the run found it, through configctl."""
    for slot, (now, _) in configctl_reads(sandbox, SHARED).items():
        was = sandbox.initial.get(slot, now)
        extra = sorted(set(now) - set(was))
        changed = [typed(k, v) for k, v in was.items() if now.get(k) != v]
        args = (["--delete-config", ",".join(extra)] if extra else []) + (
            ["--add-config", ",".join(changed)] if changed else []
        )
        if args:
            done = cli(
                sandbox, "alter", *sandbox.selectors[slot], *args, "--reason", "property test: restore"
            )
            assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def sandboxes() -> Iterator[dict[str, Sandbox]]:
    made: dict[str, Sandbox] = {}
    yield made  # pytest runs what follows whether the tests passed or not
    for sandbox in made.values():
        try:
            restore(sandbox)
        finally:
            if sandbox.admin is not None:
                sandbox.admin.close()
            if sandbox.consumer is not None:
                sandbox.consumer.close()


@pytest.fixture
def sandbox(kraft: KRaftFleet, sandboxes: dict[str, Sandbox]) -> Sandbox:
    """This module's entities on the cluster ``kraft`` names, made on first use."""
    if kraft.bootstrap not in sandboxes:
        sandboxes[kraft.bootstrap] = start(kraft)
    return sandboxes[kraft.bootstrap]


def run_sequence(sandbox: Sandbox, actions: list[tuple[Any, ...]]) -> None:
    if sandbox.dirty:  # a failed example (hypothesis shrinks it next) left the account behind
        resync(sandbox)
    sandbox.dirty = True
    for index, action in enumerate(actions):
        run_step(sandbox, action, actions[:index])
    check_history_command(sandbox, actions[-1][1])
    sandbox.dirty = False


AGAINST_A_CLUSTER: dict[str, Any] = {
    "deadline": None,  # each step runs configctl and asks a real cluster
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


@settings(max_examples=2, **AGAINST_A_CLUSTER)
@given(actions=st.lists(step(), min_size=1, max_size=4))
def test_random_commands_leave_the_cluster_and_history_as_asked(sandbox: Sandbox, actions):
    run_sequence(sandbox, actions)


@pytest.mark.slow
@pytest.mark.long
@settings(max_examples=50, **AGAINST_A_CLUSTER)
@given(actions=st.lists(step(), min_size=1, max_size=10))
def test_random_commands_long_run(sandbox: Sandbox, actions):
    run_sequence(sandbox, actions)


# -- what the property found (fixed since, kept as examples) ---------------------------------------


def user_with_credential(kraft: KRaftFleet, user: str, *configs: str) -> None:
    """``alter --user USER --add-config C`` for each of ``configs``, the first with a SCRAM credential."""
    credential = f"SCRAM-SHA-256=[iterations=8192,password={unique_name('pw')}]"
    for config in (f"{credential},{configs[0]}", *configs[1:]):
        done = cli(kraft, "alter", "--user", user, "--add-config", config)
        assert done.returncode == 0, done.stderr


def reported_user_quotas(kraft: KRaftFleet, user: str) -> dict[str, float] | None:
    admin = KafkaAdminClient(bootstrap_servers=kraft.bootstrap.split(","))
    try:
        return reported_quotas(admin).get(f"users/{user}")
    finally:
        admin.close()


def test_rollback_of_a_user_leaves_its_credential_and_restores_the_rest(kraft_combined, unique):
    """Was a half-write (20bf0f4): the quota written, then the masked credential refused, exit 1."""
    user = unique("scram-rollback")
    user_with_credential(kraft_combined, user, "consumer_byte_rate=1024", "consumer_byte_rate=2048")
    done = cli(kraft_combined, "rollback", "--user", user, "--to", "0", "--yes")
    assert done.returncode == 0, done.stderr
    assert reported_user_quotas(kraft_combined, user) == {"consumer_byte_rate": 1024.0}
    history = json.loads(cli(kraft_combined, "history", "--user", user, "-o", "json").stdout)
    assert (history[0]["version"], history[0]["reason"]) == (2, "rollback to 0")
    assert not any(e.get("written_outside_configctl") for e in history)


def test_rollback_to_a_credential_deleted_since_is_refused_and_writes_nothing(kraft_combined, unique):
    """Was refused as input nobody typed (20bf0f4); now says why, in one line, nothing written."""
    user = unique("scram-gone")
    user_with_credential(kraft_combined, user, "consumer_byte_rate=1024")
    for args in (["--delete-config", "SCRAM-SHA-256"], ["--add-config", "consumer_byte_rate=2048"]):
        assert cli(kraft_combined, "alter", "--user", user, *args).returncode == 0
    done = cli(kraft_combined, "rollback", "--user", user, "--to", "0", "--yes")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot be restored" in done.stderr and "nothing was written" in done.stderr
    assert reported_user_quotas(kraft_combined, user) == {"consumer_byte_rate": 2048.0}


@pytest.mark.slow
def test_history_survives_a_cluster_that_compresses_with_lz4(tmp_path, unique):
    """A cluster of its own: a history topic with a record in lz4 stays so."""
    with KRaftCluster(KAFKA4_HOME, tmp_path / "kraft-lz4", combined=True) as cluster:
        topic = unique("lz4")
        create_topics(cluster.bootstrap, topic)
        kraft = KRaftFleet(cluster, tmp_path / "unused.properties")
        assert cli(kraft, "alter", "--topic", topic, "--add-config", "retention.ms=1000").returncode == 0
        lz4 = [
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-default",
            "--add-config",
            "compression.type=lz4",
        ]
        assert cluster.config_command(*lz4).returncode == 0
        written = cli(kraft, "alter", "--topic", topic, "--add-config", "retention.ms=2000")
        history = cli(kraft, "history", "--topic", topic, "-o", "json")
    assert written.returncode == 0, written.stderr
    assert history.returncode == 0, history.stderr
    assert [e["version"] for e in json.loads(history.stdout)] == [1, 0]
