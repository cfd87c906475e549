"""The full load's faster paths keep their contracts: a value is quoted only when a message needs
it (same message), an Entity and an EntityRead built from their own ``__init__`` still act as frozen
dataclasses, and compact() still compacts any small mapping that is not already compact."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections import UserDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configctl import values
from configctl.entities import Entity, EntityType
from configctl.errors import shown
from configctl.listener.compact import CompactConfig, compact
from configctl.listener.records import EntityRead

pytestmark = pytest.mark.unit

KAFKA_TYPES = ["int", "short", "long", "double", "boolean", "list", "string", "password", "class"]


@given(st.sampled_from(KAFKA_TYPES), st.text(max_size=40))
def test_a_value_parsed_without_shown_reads_as_if_quoted_by_the_caller(kafka_type: str, raw: str) -> None:
    assert values.parse(kafka_type, raw) == values.parse(kafka_type, raw, shown=shown(raw))


@pytest.mark.parametrize(
    ("kafka_type", "raw"),
    [
        ("int", "x"),
        ("long", "9" * 40),
        ("short", "40000"),
        ("boolean", "yes"),
        ("double", "NaN"),
        ("double", "1,5"),
    ],
)
def test_a_refused_value_is_quoted_in_its_reason(kafka_type: str, raw: str) -> None:
    value, reason = values.parse(kafka_type, raw)
    assert value is None and reason is not None and reason.startswith(shown(raw))
    assert values.parse(kafka_type, raw, shown="the value")[1].startswith("the value ")  # sensitive


def test_an_entity_is_still_a_frozen_dataclass() -> None:
    entity = Entity(EntityType.USERS, "alice", "app 1")
    assert entity == Entity.of(EntityType.USERS, "alice", "app 1") and hash(entity) == hash(
        Entity.of("users", "alice", "app 1")
    )
    assert entity.path == "users/alice/clients/app%201"  # cached: equality, hashing and repr ignore it
    assert entity == Entity(EntityType.USERS, "alice", "app 1") and "_path" not in repr(entity)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entity.name = "bob"  # type: ignore[misc]
    assert dataclasses.replace(entity, client=None) == Entity(EntityType.USERS, "alice")
    assert [f.name for f in dataclasses.fields(entity)] == [
        "type",
        "name",
        "client",
        "literal",
        "client_literal",
    ]
    assert pickle.loads(pickle.dumps(entity)) == entity and copy.deepcopy(entity) == entity
    assert Entity(type=EntityType.TOPICS, name="t", literal=False).client is None


def test_an_entity_read_is_still_a_frozen_dataclass() -> None:
    entity = Entity(EntityType.TOPICS, "t")
    read = EntityRead(entity, b"{}")
    assert (read.change_number, read.error) == (None, None)
    assert read == EntityRead(entity, b"{}", None, None) and read != EntityRead(entity, None, error="denied")
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.data = None  # type: ignore[misc]


def test_compact_compacts_any_small_mapping_and_keeps_a_compact_one() -> None:
    compacted = compact(UserDict({"retention.ms": "1"}))
    assert type(compacted) is CompactConfig and compacted == {"retention.ms": "1"}
    assert compact(compacted) is compacted
