"""The validation shortcut a listener's full load relies on says exactly what jsonschema says."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl import validation
from configctl.entities import Entity, EntityType
from configctl.handlers import validate

pytestmark = pytest.mark.unit

_ENTITIES = {
    EntityType.TOPICS: Entity.of(EntityType.TOPICS, "orders"),
    EntityType.CLIENTS: Entity.of(EntityType.CLIENTS, "app"),
    EntityType.USERS: Entity.of(EntityType.USERS, "alice"),
    EntityType.IPS: Entity.of(EntityType.IPS, "10.0.0.1"),
    EntityType.BROKERS: Entity.of(EntityType.BROKERS, "1"),
}
SIMPLE = [(etype, name) for etype in _ENTITIES for name in validation._simple_schemas(etype)]


def problems(etype: EntityType, name: str, raw: str, *, shortcut: bool) -> list[str]:
    saved = validation._passes
    if not shortcut:
        validation._passes = lambda simple, value: False
    try:
        return validate.validate_config(_ENTITIES[etype], {name: raw})
    finally:
        validation._passes = saved


def test_most_keys_take_the_shortcut():
    assert len(SIMPLE) > 300
    assert (EntityType.TOPICS, "retention.ms") in SIMPLE


_raw = st.one_of(
    st.integers(min_value=-(2**65), max_value=2**65).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        ["true", "false", "", "-1", "0", "9223372036854775807", "9223372036854775808", "1.5", "NaN"]
    ),
    st.text(max_size=6),
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SIMPLE), _raw)
def test_the_shortcut_never_changes_the_verdict(key, raw):
    etype, name = key
    assert problems(etype, name, raw, shortcut=True) == problems(etype, name, raw, shortcut=False)


def test_bounds_and_types_are_exact():
    passes = validation._passes
    assert passes(((int,), -1, 10), -1) and passes(((int,), -1, 10), 10)
    assert not passes(((int,), -1, 10), 11) and not passes(((int,), -1, 10), -2)
    assert not passes(((int,), None, None), True)  # a bool is no integer
    assert not passes(((int, float), 0, None), math.nan)
    assert passes(((int, float), 0, 1), 0.5) and passes(((str,), None, None), "x")


# ----------------------------------------------------------------------------------------------
# notifications: the canonical fast path says what the strict parser says
# ----------------------------------------------------------------------------------------------


def _notification(data: bytes, *, shortcut: bool) -> str:
    from configctl import znodes
    from configctl.errors import InvalidInput

    saved = znodes._CANONICAL_NOTIFICATION_RE
    if not shortcut:
        znodes._CANONICAL_NOTIFICATION_RE = __import__("re").compile(rb"(?!)")  # never matches
    try:
        return znodes.decode_notification(data).path
    except InvalidInput as exc:
        return f"error: {exc}"
    finally:
        znodes._CANONICAL_NOTIFICATION_RE = saved


_paths = st.one_of(
    st.sampled_from(
        [
            "topics/orders",
            "topics/.",
            "topics/..",
            "clients/%2E",
            "users/<default>/clients/app",
            "ips/::1",
            "brokers/<default>",
            "brokers/x",
            "widgets/w",
            "topics",
            "users/a/clients",
            "topics/a b",
        ]
    ),
    st.builds(
        lambda t, n: f"{t}/{n}",
        st.sampled_from(["topics", "users", "clients", "ips", "brokers"]),
        st.text(max_size=8),
    ),
)


@settings(max_examples=400, deadline=None)
@given(_paths)
def test_notifications_read_alike_on_both_paths(path):
    data = ('{"version":2,"entity_path":"' + path + '"}').encode("utf-8", "surrogatepass")
    assert _notification(data, shortcut=True) == _notification(data, shortcut=False)
