"""Entities: the 13 entity paths, Kafka's name rules and Kafka's URL-encoding sanitizer."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from configctl.entities import (
    DEFAULT,
    Entity,
    EntityType,
    desanitize,
    entities_of,
    parse_entity_type,
    sanitize,
    validate_name,
)
from configctl.errors import InvalidInput

pytestmark = pytest.mark.unit


def java_sanitize(name: str) -> str:
    """An independent model of ``Sanitizer.sanitize``: URLEncoder.encode, then ``*``/``+`` rewritten.

    URLEncoder keeps ``[A-Za-z0-9.*_-]``, turns a space into ``+`` and percent-encodes every other
    UTF-8 byte with upper-case hex; Kafka then rewrites ``*`` -> ``%2A`` and ``+`` -> ``%20``.
    """
    out = []
    for char in name:
        if char.isascii() and (char.isalnum() or char in ".*_-"):
            out.append(char)
        elif char == " ":
            out.append("+")
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out).replace("*", "%2A").replace("+", "%20")


# --------------------------------------------------------------------------------------------
# Sanitizer
# --------------------------------------------------------------------------------------------

SANITIZE_VECTORS = [
    ("CN=Alice Smith,O=Example Corp", "CN%3DAlice%20Smith%2CO%3DExample%20Corp"),
    ("user@EXAMPLE.COM", "user%40EXAMPLE.COM"),
    ("client*1", "client%2A1"),
    ("+", "%2B"),
    ("~", "%7E"),
    ("<default>", "%3Cdefault%3E"),
    ("User:alice", "User%3Aalice"),
    (" ", "%20"),
    ("a/b", "a%2Fb"),
    ("%", "%25"),
    ("é", "%C3%A9"),
    ("日本", "%E6%97%A5%E6%9C%AC"),
    ("😀", "%F0%9F%98%80"),
    ("keep.these_-chars09AZaz", "keep.these_-chars09AZaz"),
]


@pytest.mark.parametrize(("plain", "stored"), SANITIZE_VECTORS)
def test_sanitize_vectors(plain: str, stored: str) -> None:
    assert sanitize(plain) == stored
    assert java_sanitize(plain) == stored
    assert desanitize(stored) == plain


def test_desanitize_follows_url_decoder() -> None:
    assert desanitize("a+b") == "a b"  # URLDecoder turns + into a space
    assert desanitize("%c3%a9") == "é"  # lower-case hex decodes too
    for bad in ("%", "%2", "%ZZ", "a%G1"):
        with pytest.raises(ValueError):
            desanitize(bad)
    with pytest.raises(ValueError):
        desanitize("%C3")  # a truncated UTF-8 sequence


@given(st.text())
def test_sanitize_matches_kafka_model_and_round_trips(name: str) -> None:
    stored = sanitize(name)
    assert stored == java_sanitize(name)
    assert desanitize(stored) == name
    assert all(c.isascii() and (c.isalnum() or c in "._-%") for c in stored)


# --------------------------------------------------------------------------------------------
# The 13 entity paths
# --------------------------------------------------------------------------------------------

ALL_PATHS = [
    # (type, name, client) -> stored path
    (("topics", "t", None), "topics/t"),
    (("clients", "c", None), "clients/c"),
    (("clients", DEFAULT, None), "clients/<default>"),
    (("users", "u", None), "users/u"),
    (("users", DEFAULT, None), "users/<default>"),
    (("users", "u", "c"), "users/u/clients/c"),
    (("users", "u", DEFAULT), "users/u/clients/<default>"),
    (("users", DEFAULT, "c"), "users/<default>/clients/c"),
    (("users", DEFAULT, DEFAULT), "users/<default>/clients/<default>"),
    (("brokers", "1", None), "brokers/1"),
    (("brokers", DEFAULT, None), "brokers/<default>"),
    (("ips", "1.2.3.4", None), "ips/1.2.3.4"),
    (("ips", DEFAULT, None), "ips/<default>"),
]


@pytest.mark.parametrize(("args", "path"), ALL_PATHS, ids=[p for _, p in ALL_PATHS])
def test_every_entity_path(args: tuple[str, str, str | None], path: str) -> None:
    entity = Entity.of(*args)
    assert entity.path == path
    assert entity.znode == f"/config/{path}"
    assert str(entity) == path
    assert Entity.from_path(path) == entity
    assert Entity.from_path(f"/config/{path}") == entity
    assert Entity.from_path(f"/{path}/") == entity
    assert entity.is_default == (path.endswith(DEFAULT))


def test_paths_are_distinct() -> None:
    assert len({Entity.of(*args) for args, _ in ALL_PATHS}) == 13


def test_sanitized_names_in_paths() -> None:
    entity = Entity.of("users", "CN=Alice Smith,O=Example Corp", "client*1")
    assert entity.path == "users/CN%3DAlice%20Smith%2CO%3DExample%20Corp/clients/client%2A1"
    assert Entity.from_path(entity.path) == entity
    assert Entity.of("clients", "user@EXAMPLE.COM").path == "clients/user%40EXAMPLE.COM"
    # Topics, broker ids and IPs are never sanitized.
    assert Entity.of("topics", "a.b-c_d").path == "topics/a.b-c_d"
    assert Entity.of("ips", "::1").path == "ips/::1"


def test_real_user_named_default_is_not_the_default_entity() -> None:
    assert sanitize("<default>") == "%3Cdefault%3E"
    assert Entity.of("users", DEFAULT).path == "users/<default>"
    # Kafka 3.9 ConfigCommand sanitizes a user or client named "<default>" (only "" means the default):
    # a distinct entity, stored %3Cdefault%3E, never aliased to the default one.
    literal = Entity.from_path("users/%3Cdefault%3E")
    assert literal.literal and not literal.is_default and literal.path == "users/%3Cdefault%3E"
    assert literal != Entity.of("users", DEFAULT)
    assert Entity.named("users", "<default>") == literal
    assert Entity.named("users", "") == Entity.of("users", DEFAULT)
    assert (
        Entity.named("brokers", "") == Entity.named("brokers", "<default>") == Entity.of("brokers", DEFAULT)
    )
    client = Entity.from_path("users/u/clients/%3Cdefault%3E")
    assert client.client_literal and not client.is_default and client.label == "users/u/clients/%3Cdefault%3E"
    assert Entity.named("users", "u", "<default>") == client


def test_display_labels() -> None:
    assert Entity.of("users", "User:alice", "app1").display == "user 'User:alice', client 'app1'"
    assert Entity.of("users", DEFAULT, DEFAULT).display == "default user, default client"
    assert Entity.of("brokers", DEFAULT).display == "default broker"
    assert Entity.of("topics", "orders").display == "topic 'orders'"


def test_entities_sort_with_and_without_clients() -> None:
    entities = [
        Entity.of("users", "a", "c"),
        Entity.of("users", "a"),
        Entity.of("topics", "t"),
        Entity.of("users", "a", DEFAULT),
        Entity.of("brokers", "1"),
    ]
    ordered = sorted(entities)
    assert [e.path for e in ordered] == [  # entities.TYPE_ORDER: topics, clients, users, brokers, ips
        "topics/t",
        "users/a",
        "users/a/clients/<default>",
        "users/a/clients/c",
        "brokers/1",
    ]


# --------------------------------------------------------------------------------------------
# Entity types and names
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("topics", EntityType.TOPICS),
        ("topic", EntityType.TOPICS),
        (" Brokers ", EntityType.BROKERS),
        ("user", EntityType.USERS),
        ("clients", EntityType.CLIENTS),
        ("ip", EntityType.IPS),
    ],
)
def test_parse_entity_type(text: str, expected: EntityType) -> None:
    assert parse_entity_type(text) is expected


@pytest.mark.parametrize("text", ["", "topicz", "config", "s"])
def test_parse_entity_type_refuses(text: str) -> None:
    with pytest.raises(InvalidInput, match="unknown entity type"):
        parse_entity_type(text)


@pytest.mark.parametrize(
    "name", ["a", "orders", "a.b", "A-b_9", "x" * 249, "...", ".a", "__consumer_offsets"]
)
def test_valid_topic_names(name: str) -> None:
    validate_name(EntityType.TOPICS, name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        (".", "not allowed"),
        ("..", "not allowed"),
        ("x" * 250, "limit is 249"),
        ("a b", "only ASCII"),
        ("a/b", "only ASCII"),
        ("orders\n", "only ASCII"),
        ("ordérs", "only ASCII"),
        (DEFAULT, "no <default>"),
    ],
)
def test_invalid_topic_names(name: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        validate_name(EntityType.TOPICS, name)


@pytest.mark.parametrize("name", ["0", "1", "42", str(2**31 - 1), DEFAULT])
def test_valid_broker_names(name: str) -> None:
    validate_name(EntityType.BROKERS, name)


@pytest.mark.parametrize("name", ["", "-1", "01", "1.0", " 1", "1\n", "one", str(2**31), "9999999999"])
def test_invalid_broker_names(name: str) -> None:
    with pytest.raises(InvalidInput, match="broker name"):
        validate_name(EntityType.BROKERS, name)


@pytest.mark.parametrize(
    "name",
    ["1.2.3.4", "0.0.0.0", "255.255.255.255", "::1", "2001:db8::1", "::ffff:1.2.3.4", "host.example.com"],
)
def test_valid_ips(name: str) -> None:
    validate_name(EntityType.IPS, name)


@pytest.mark.parametrize(
    "name", ["", "1.2.3", "256.1.1.1", "1.2.3.4.5", "host_1.example.com", "2001:db8::g", " 1.2.3.4"]
)
def test_invalid_ips(name: str) -> None:
    with pytest.raises(InvalidInput, match="not a valid IPv4 or IPv6"):
        validate_name(EntityType.IPS, name)


@pytest.mark.parametrize("etype", [EntityType.USERS, EntityType.CLIENTS])
def test_user_and_client_names(etype: EntityType) -> None:
    validate_name(etype, "User:alice")
    validate_name(etype, " spaces and * stars ")
    with pytest.raises(InvalidInput, match="must not be empty"):
        validate_name(etype, "")
    with pytest.raises(InvalidInput, match="not valid Unicode"):
        validate_name(etype, "bad\ud800")


def test_only_users_nest_clients() -> None:
    with pytest.raises(InvalidInput, match="only users nest clients"):
        Entity.of("clients", "c", "x")
    with pytest.raises(InvalidInput, match="must not be empty"):
        Entity.of("users", "u", "")


@pytest.mark.parametrize(
    "path",
    [
        "",
        "topics",
        "topics/a/b",
        "users/u/clientz/c",
        "clients/c/clients/d",
        "widgets/x",
        "brokers/x",
        "topics/<default>",
        "users/%ZZ",
        "users/%C3",
    ],
)
def test_from_path_refuses(path: str) -> None:
    with pytest.raises(InvalidInput):
        Entity.from_path(path)


# --------------------------------------------------------------------------------------------
# Round trips (hypothesis)
# --------------------------------------------------------------------------------------------

# Any text a principal or client id can hold, except the two names ZooKeeper refuses as nodes.
principal = st.text(min_size=1).filter(lambda s: s not in (DEFAULT, ".", ".."))
topic_name = st.from_regex(r"[a-zA-Z0-9._-]{1,249}", fullmatch=True).filter(lambda s: s not in (".", ".."))


@given(principal, st.one_of(st.none(), st.just(DEFAULT), principal))
def test_user_round_trip(user: str, client: str | None) -> None:
    entity = Entity.of("users", user, client)
    assert Entity.from_path(entity.path) == entity
    assert Entity.from_path(entity.znode) == entity


@given(principal)
def test_client_round_trip(client: str) -> None:
    entity = Entity.of("clients", client)
    assert entity.path == f"clients/{java_sanitize(client)}"
    assert Entity.from_path(entity.path) == entity


@given(topic_name)
def test_topic_round_trip(name: str) -> None:
    entity = Entity.of("topics", name)
    assert entity.path == f"topics/{name}"
    assert Entity.from_path(entity.path) == entity


@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_broker_round_trip(broker_id: int) -> None:
    entity = Entity.of("brokers", str(broker_id))
    assert Entity.from_path(entity.path) == entity


@given(st.ip_addresses())
def test_ip_round_trip(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    entity = Entity.of("ips", str(address))
    assert Entity.from_path(entity.path) == entity


@pytest.mark.parametrize("name", [".", ".."])
@pytest.mark.parametrize("etype", ["users", "clients"])
def test_dot_names_are_refused_everywhere_a_name_enters(etype: str, name: str) -> None:
    """Sanitizing keeps dots, so '.'/'..' would be a relative ZooKeeper path: refused, in one line."""
    with pytest.raises(InvalidInput, match="ZooKeeper refuses"):
        Entity.of(etype, name)
    with pytest.raises(InvalidInput, match="ZooKeeper refuses"):
        Entity.named(etype, name)
    with pytest.raises(InvalidInput):
        Entity.from_path(f"{etype}/{name}")


@pytest.mark.parametrize(
    "path",
    [
        "users/%2E%2E",
        "clients/%2E",
        "users/..",
        "users/../clients/x",
        "users/<default>/clients/.",
        "clients/%2e%2E",
    ],
)
def test_non_canonical_or_relative_stored_paths_are_not_entities(path: str) -> None:
    """A notification naming a path Kafka would never store is refused (never a relative ZooKeeper path)."""
    with pytest.raises(InvalidInput):
        Entity.from_path(path)


# a whole listing checked at once says what Entity.of says name by name

_NAME_PARTS = st.sampled_from(["a", "Z", "0", ".", "..", "_", "-", "/", " ", "é", "<default>", "x" * 249, ""])


def _one_by_one(etype: EntityType, names: list[str]) -> list[Entity] | None:
    try:
        return [Entity.of(etype, name) for name in names]
    except InvalidInput:
        return None


@settings(max_examples=500)
@given(st.lists(st.lists(_NAME_PARTS, max_size=3).map("".join), max_size=6))
@example(["a/b"])
@example(["a", ".", "b"])
@example(["x" * 249 + "y"])
def test_a_listing_of_topic_names_is_valid_exactly_when_each_name_is(names: list[str]) -> None:
    assert entities_of(EntityType.TOPICS, names) == _one_by_one(EntityType.TOPICS, names)


def test_types_without_a_listing_check_are_built_one_by_one() -> None:
    assert entities_of(EntityType.USERS, ["alice"]) is None
    assert entities_of(EntityType.TOPICS, []) == []
    assert entities_of(EntityType.TOPICS, ["x" * 250]) is None
