"""describe --effective: which entity the options name (the ZooKeeper part is an integration test)."""

from __future__ import annotations

import pytest

from configctl.cli.effective import effective_target
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"broker": "1"}, (1, None)),
        ({"broker": "2", "topic": "orders"}, (2, Entity.of(EntityType.TOPICS, "orders"))),
        ({"broker": "1", "user": "User:alice"}, (1, Entity.of(EntityType.USERS, "User:alice"))),
        (
            {"broker": "1", "user": "User:alice", "client": "app1"},
            (1, Entity.of(EntityType.USERS, "User:alice", "app1")),
        ),
        (
            {"broker": "1", "user_defaults": True, "client_defaults": True},
            (1, Entity.of(EntityType.USERS, DEFAULT, DEFAULT)),
        ),
        ({"broker": "1", "client": "app1"}, (1, Entity.of(EntityType.CLIENTS, "app1"))),
        ({"broker": "1", "ip": "10.0.0.1"}, (1, Entity.of(EntityType.IPS, "10.0.0.1"))),
        ({"broker": "1", "ip_defaults": True}, (1, Entity.of(EntityType.IPS, DEFAULT))),
    ],
)
def test_selection(params, expected):
    assert effective_target(params) == expected


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "needs --broker ID"),
        ({"broker_defaults": True}, "not --broker-defaults"),
        ({"broker": "x"}, "must be a broker id"),
        ({"broker": "1", "topic": "a", "ip": "10.0.0.1"}, "name one entity"),
        ({"broker": "1", "entity_types": ("topics",), "entity_names": ("a",)}, "not --entity-type"),
        ({"broker": "1", "topic": "bad name"}, "topic name"),
        ({"broker": "1", "ip": "300.1.1.1"}, "not a valid IPv4 or IPv6"),
    ],
)
def test_bad_selections_are_one_line_errors(params, message):
    with pytest.raises(InvalidInput, match=message):
        effective_target(params)
