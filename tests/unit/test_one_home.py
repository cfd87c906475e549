"""One home per Kafka rule: the write side, the listener and describe --effective cannot disagree.

Two properties, over generated values and configs:

* whatever validation accepts for a typed key, the listener applies with the same value and the
  dynamic source; whatever it refuses, the write side refuses before anything is written;
* for every entity family, ``describe --effective`` (the pure part: configs as read, admitted and
  resolved by the handlers) answers exactly what the listener's manager answers.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from configctl import catalogue, placement, writer
from configctl.effective import view_from
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.handlers import handler_for
from configctl.handlers.clientmetrics import DYNAMIC_CLIENT_METRICS_CONFIG
from configctl.handlers.group import DYNAMIC_GROUP_CONFIG
from configctl.handlers.validate import validate_config
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.sources import DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG
from configctl.values import kafka_text
from configctl.zk.configstore import Stored
from configctl.znodes import encode_entity_config

pytestmark = pytest.mark.unit

BROKER_ID = 1


def _typed_keys() -> list[tuple[EntityType, str, str]]:
    keys = []
    for etype in EntityType:
        for key in catalogue.keys(etype).values():
            if key.sensitive or key.kafka_type in ("password", "scram_credential"):
                continue  # secrets are stored in another form (encrypted, salted): tested in test_secrets
            keys.append((etype, key.name, key.kafka_type))
    return keys


TYPED = _typed_keys()

_numbers = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "0.5d",
            "0x1p-1",
            "1e3",
            "1.5f",
            " 7 ",
            "+3",
            "-0",
            "NaN",
            "Infinity",
            "-Infinity",
            "1_000",
            "0.25",
            "1.",
        ]
    ),
)
_values = st.one_of(
    _numbers,
    st.sampled_from(
        ["true", "false", "TRUE", "yes", "", "delete", "compact,delete", "compact, delete", "x-test"]
    ),
    st.text(max_size=12),
)


def _entity_for(etype: EntityType, name: str) -> Entity:
    if etype is EntityType.TOPICS:
        return Entity.of(etype, "orders")
    if etype is EntityType.BROKERS:
        at_default = placement.problem(name, at_default=True) is None
        return Entity.of(etype, DEFAULT if at_default else str(BROKER_ID))
    if etype is EntityType.IPS:
        return Entity.of(etype, "10.0.0.1")
    return Entity.of(etype, "alice")


def _expected_source(entity: Entity) -> str:
    if entity.type is EntityType.TOPICS:
        return DYNAMIC_TOPIC_CONFIG
    if entity.type is EntityType.BROKERS:
        return DYNAMIC_DEFAULT_BROKER_CONFIG if entity.is_default else DYNAMIC_BROKER_CONFIG
    if entity.type is EntityType.GROUPS:
        return DYNAMIC_GROUP_CONFIG
    if entity.type is EntityType.CLIENT_METRICS:
        return DYNAMIC_CLIENT_METRICS_CONFIG
    return entity.path


def _value_for(etype: EntityType, name: str, kafka_type: str) -> st.SearchStrategy[str]:
    """Values shaped for the key's type (many valid, many just outside), plus anything at all."""
    prop = catalogue.schema(etype)["properties"][name]
    choices = prop.get("enum") or prop.get("items", {}).get("enum") or []
    low, high = prop.get("minimum"), prop.get("maximum")
    shaped: list[st.SearchStrategy[str]] = [_values]
    if kafka_type in ("int", "long", "short"):
        lo = int(low) - 2 if isinstance(low, (int, float)) else -(2**63)
        hi = int(high) + 2 if isinstance(high, (int, float)) else 2**63
        shaped.append(st.integers(min_value=lo, max_value=hi).map(str))
    elif kafka_type == "double":
        shaped.append(st.floats(min_value=(low or 0) - 1, max_value=(high or 1e6) + 1).map(lambda f: f"{f}d"))
        shaped.append(st.floats(min_value=(low or 0) - 1, max_value=(high or 1e6) + 1).map(float.hex))
    elif kafka_type == "boolean":
        shaped.append(st.sampled_from(["true", "false", "True", "FALSE", " true "]))
    if choices:
        shaped.append(st.sampled_from([str(c) for c in choices]))
        if kafka_type == "list":
            shaped.append(st.lists(st.sampled_from([str(c) for c in choices]), max_size=3).map(",".join))
    return st.one_of(*shaped)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_what_validation_accepts_the_listener_applies_with_the_same_value_and_source(data):
    typed = data.draw(st.sampled_from(TYPED))
    etype, name, kafka_type = typed
    value = data.draw(_value_for(etype, name, kafka_type))
    entity = _entity_for(etype, name)
    accepted = not validate_config(entity, {name: value})
    if not accepted:
        # the write side refuses before a connection is even opened: nothing can be written
        with pytest.raises(InvalidInput):
            writer.prepare_change(entity, {name: value})
        return
    manager = DynamicConfigManager(BROKER_ID, {})
    manager.apply([EntityRead(entity, encode_entity_config({name: value}), 1)], 1)
    assert manager.problems() == [], manager.problems()
    effective = manager.effective(entity)[name]
    # Topic, broker, group and client-metrics values are reported as Kafka writes the parsed value
    # back (" 7 " -> "7"); quotas and IPs as stored.
    parsed_back = (EntityType.TOPICS, EntityType.BROKERS, EntityType.GROUPS, EntityType.CLIENT_METRICS)
    shown = kafka_text(kafka_type, value) if etype in parsed_back else value
    assert (effective.value, effective.source) == (shown, _expected_source(entity))


# ----------------------------------------------------------------------------------------------
# describe --effective == the listener, for every entity family
# ----------------------------------------------------------------------------------------------

_quota_values = st.integers(min_value=1, max_value=10**9).map(str)
_principals = st.sampled_from(["alice", "bob", "User:carol", "<default>"])
_clients = st.sampled_from(["app1", "app 2", "<default>"])
_ips = st.sampled_from(
    ["10.0.0.1", "::1", "0:0:0:0:0:0:0:1", "0000:0000:0000:0000:0000:0000:0000:0001", "<default>"]
)


def _user(name: str, client: str | None = None) -> Entity:
    return Entity.of(EntityType.USERS, name, client)


@st.composite
def _fleet(draw):
    """A random /config tree (stored paths -> configs) and a broker's server.properties."""
    configs: dict[Entity, dict[str, str]] = {}
    for _ in range(draw(st.integers(0, 6))):
        user = draw(_principals)
        client = draw(st.one_of(st.none(), _clients))
        key = draw(st.sampled_from(["producer_byte_rate", "consumer_byte_rate", "request_percentage"]))
        configs.setdefault(_user(user, client), {})[key] = draw(_quota_values)
    for _ in range(draw(st.integers(0, 3))):
        configs.setdefault(Entity.of(EntityType.CLIENTS, draw(_clients)), {})["producer_byte_rate"] = draw(
            _quota_values
        )
    for _ in range(draw(st.integers(0, 3))):
        configs.setdefault(Entity.of(EntityType.IPS, draw(_ips)), {})["connection_creation_rate"] = draw(
            _quota_values
        )
    for _ in range(draw(st.integers(0, 3))):
        topic = draw(st.sampled_from(["orders", "audit", "t"]))
        key = draw(
            st.sampled_from(["retention.ms", "cleanup.policy", "segment.bytes", "min.insync.replicas"])
        )
        value = {"cleanup.policy": draw(st.sampled_from(["compact", "delete", "compact,delete"]))}.get(
            key, str(draw(st.integers(1, 10**8)))
        )
        configs.setdefault(Entity.of(EntityType.TOPICS, topic), {})[key] = value
    broker_keys = [
        "log.retention.ms",
        "log.retention.hours",
        "num.io.threads",
        "log.cleaner.threads",
        "log.dirs",
    ]
    for layer in (str(BROKER_ID), DEFAULT, "2"):
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from(broker_keys))
            configs.setdefault(Entity.of(EntityType.BROKERS, layer), {})[key] = str(
                draw(st.integers(1, 10**6))
            )
    static = draw(
        st.dictionaries(
            st.sampled_from(["log.retention.hours", "num.io.threads", "log.cleanup.policy"]),
            st.sampled_from(["24", "8", "delete"]),
            max_size=3,
        )
    )
    return configs, static


_targets = st.one_of(
    st.just(Entity.of(EntityType.BROKERS, str(BROKER_ID))),
    st.builds(lambda t: Entity.of(EntityType.TOPICS, t), st.sampled_from(["orders", "audit", "absent"])),
    st.builds(_user, _principals),
    st.builds(_user, _principals, _clients),
    st.builds(lambda c: Entity.of(EntityType.CLIENTS, c), _clients),
    st.builds(lambda ip: Entity.of(EntityType.IPS, ip), _ips),
)


def _masked(values) -> str:
    return json.dumps({n: v.to_json(mask=True) for n, v in sorted(values.items())}, sort_keys=True)


@settings(max_examples=400, deadline=None)
@given(_fleet(), _targets)
def test_describe_effective_answers_what_the_listener_answers(fleet, target):
    configs, static = fleet
    manager = DynamicConfigManager(BROKER_ID, static)
    reads = [EntityRead(entity, encode_entity_config(config)) for entity, config in configs.items()]
    manager.reconcile(reads, 1)
    listener_says = manager.effective(target)
    stored = [Stored(entity, dict(config), 0) for entity, config in configs.items()]
    described = handler_for(target).effective(target, view_from(BROKER_ID, static, stored))
    assert _masked(described) == _masked(listener_says)


def test_an_address_stored_in_java_form_governs_its_compressed_spelling():
    """Kafka stores what it was given (``ips/0:0:0:0:0:0:0:1``); a connection from ``::1`` is the same address."""
    configs = {Entity.of(EntityType.IPS, "0:0:0:0:0:0:0:1"): {"connection_creation_rate": "7"}}
    manager = DynamicConfigManager(BROKER_ID, {})
    manager.reconcile([EntityRead(e, encode_entity_config(c)) for e, c in configs.items()], 1)
    stored = [Stored(e, dict(c), 0) for e, c in configs.items()]
    for spelling in ("::1", "0000:0000:0000:0000:0000:0000:0000:0001", "0:0:0:0:0:0:0:1"):
        target = Entity.of(EntityType.IPS, spelling)
        listener = manager.effective(target)["connection_creation_rate"]
        described = handler_for(target).effective(target, view_from(BROKER_ID, {}, stored))
        assert (listener.value, listener.source) == ("7", "ips/0:0:0:0:0:0:0:1")
        assert (
            described["connection_creation_rate"].value,
            described["connection_creation_rate"].source,
        ) == (
            "7",
            "ips/0:0:0:0:0:0:0:1",
        )
