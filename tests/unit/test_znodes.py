"""Znode byte formats (see docs/reference/zookeeper-nodes.md): what Kafka writes and reads in /config."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.znodes import (
    CHANGES_PATH,
    NOTIFICATION_PATH_PREFIX,
    NOTIFICATION_PREFIX,
    change_number,
    decode_entity_config,
    decode_notification,
    encode_entity_config,
    encode_notification,
    notification_name,
)

pytestmark = pytest.mark.unit


# -- entity config: encoding ----------------------------------------------------------------------


def test_constants():
    assert CHANGES_PATH == "/config/changes"
    assert NOTIFICATION_PREFIX == "config_change_"
    assert NOTIFICATION_PATH_PREFIX == "/config/changes/config_change_"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, b'{"version":1,"config":{}}'),
        ({"retention.ms": "86400000"}, b'{"version":1,"config":{"retention.ms":"86400000"}}'),
        # keys sorted whatever the insertion order, no spaces anywhere
        (
            {"segment.ms": "1", "cleanup.policy": "compact,delete", "a": ""},
            b'{"version":1,"config":{"a":"","cleanup.policy":"compact,delete","segment.ms":"1"}}',
        ),
        # non-ASCII is written as UTF-8, not \u-escaped (Jackson's default)
        ({"k": "caf\u00e9 \U0001f511"}, '{"version":1,"config":{"k":"caf\u00e9 \U0001f511"}}'.encode()),
        # quote and backslash escaped; control characters as Jackson writes them (upper-case hex)
        ({"k": 'a"b\\c'}, b'{"version":1,"config":{"k":"a\\"b\\\\c"}}'),
        ({"k": "a\nb\tc\x1fd\x00"}, b'{"version":1,"config":{"k":"a\\nb\\tc\\u001Fd\\u0000"}}'),
        # '/' is not escaped by Jackson
        ({"k": "a/b"}, b'{"version":1,"config":{"k":"a/b"}}'),
    ],
)
def test_encode_entity_config_exact_bytes(config, expected):
    assert encode_entity_config(config) == expected


@pytest.mark.parametrize("bad", [{"k": 1}, {"k": None}, {"k": True}, {1: "v"}])
def test_encode_entity_config_rejects_non_strings(bad):
    with pytest.raises(InvalidInput, match="string"):
        encode_entity_config(bad)


def test_encode_entity_config_rejects_unencodable_text():
    with pytest.raises(InvalidInput, match="UTF-8"):
        encode_entity_config({"k": "\udcff"})


# -- entity config: decoding ----------------------------------------------------------------------


@pytest.mark.parametrize("data", [None, b""])
def test_decode_entity_config_no_data_means_no_overrides(data):
    assert decode_entity_config(data) == {}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"version":1,"config":{}}', {}),
        (b'{"version":1,"config":{"retention.ms":"86400000"}}', {"retention.ms": "86400000"}),
        # written by another tool with spaces and a different key order: still Kafka's format
        (b'{ "config" : { "a" : "1" , "b" : "" } , "version" : 1 }\n', {"a": "1", "b": ""}),
        ('{"version":1,"config":{"k":"caf\u00e9"}}'.encode(), {"k": "caf\u00e9"}),
        (b'{"version":1,"config":{"k":"caf\\u00e9\\u001F"}}', {"k": "caf\u00e9\x1f"}),
        (bytearray(b'{"version":1,"config":{"x":"y"}}'), {"x": "y"}),
    ],
)
def test_decode_entity_config(data, expected):
    assert decode_entity_config(data) == expected


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "not valid JSON"),
        (b"   ", "not valid JSON"),
        (b'{"version":1,"config":{}', "not valid JSON"),
        (b"[]", "must be a JSON object, not an array"),
        (b'"text"', "must be a JSON object, not a string"),
        (b"null", "must be a JSON object, not null"),
        (b'{"config":{}}', "version missing"),
        (b'{"version":2,"config":{}}', "version 2; expected 1"),
        (b'{"version":"1","config":{}}', 'version "1"'),
        (b'{"version":true,"config":{}}', "version true"),
        (b'{"version":1.0,"config":{}}', "version 1.0"),
        (b'{"version":1}', 'no "config"'),
        (b'{"version":1,"config":["a"]}', '"config" must be an object, not an array'),
        (b'{"version":1,"config":null}', '"config" must be an object, not null'),
        (b'{"version":1,"config":{"retention.ms":86400000}}', 'is a number.*write it as "86400000"'),
        (b'{"version":1,"config":{"flag":true}}', "is a boolean"),
        (b'{"version":1,"config":{"k":null}}', "is null"),
        (b'{"version":1,"config":{"k":{"x":"y"}}}', "is an object"),
        (b'{"version":1,"config":{"k":"1","k":"2"}}', "duplicate JSON key 'k'"),
        (b'{"version":1,"version":1,"config":{}}', "duplicate JSON key 'version'"),
        (b'{"version":1,"config":{"k":NaN}}', "NaN"),
        (b'{"version":1,"config":{"k":"\xff"}}', "not UTF-8"),
        (b"[" * 100000 + b"]" * 100000, "not valid JSON"),
    ],
)
def test_decode_entity_config_is_strict(data, reason):
    with pytest.raises(InvalidInput, match=reason) as info:
        decode_entity_config(data)
    assert "\n" not in str(info.value)


# -- notifications --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entity", "expected"),
    [
        (Entity.of("topics", "orders"), b'{"version":2,"entity_path":"topics/orders"}'),
        (Entity.of("brokers", DEFAULT), b'{"version":2,"entity_path":"brokers/<default>"}'),
        (Entity.of("brokers", "1"), b'{"version":2,"entity_path":"brokers/1"}'),
        (Entity.of("ips", "::1"), b'{"version":2,"entity_path":"ips/::1"}'),
        (
            Entity.of("users", "User:alice", "app1"),
            b'{"version":2,"entity_path":"users/User%3Aalice/clients/app1"}',
        ),
        (
            Entity.of("users", DEFAULT, "my client"),
            b'{"version":2,"entity_path":"users/<default>/clients/my%20client"}',
        ),
        (Entity.of("clients", "a*b"), b'{"version":2,"entity_path":"clients/a%2Ab"}'),
    ],
)
def test_encode_notification_exact_bytes(entity, expected):
    assert encode_notification(entity) == expected
    assert decode_notification(expected) == entity


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"version":1,"entity_type":"topics","entity_name":"orders"}', Entity.of("topics", "orders")),
        # v1 names are stored (sanitized) names
        (b'{"version":1,"entity_type":"clients","entity_name":"my%20app"}', Entity.of("clients", "my app")),
        (b'{"version":1,"entity_type":"clients","entity_name":"<default>"}', Entity.of("clients", DEFAULT)),
        (b'{"entity_path":"users/User%3Aalice","version":2}', Entity.of("users", "User:alice")),
        (
            b'{"version":2,"entity_path":"users/<default>/clients/<default>"}',
            Entity.of("users", DEFAULT, DEFAULT),
        ),
    ],
)
def test_decode_notification(data, expected):
    assert decode_notification(data) == expected


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"garbage", "not valid JSON"),
        (b"[1]", "JSON object"),
        (b'{"entity_path":"topics/a"}', "version missing"),
        (b'{"version":3,"entity_path":"topics/a"}', "version 3; expected 1 or 2"),
        (b'{"version":2}', '"entity_path"'),
        (b'{"version":2,"entity_path":7}', '"entity_path"'),
        (b'{"version":2,"entity_path":""}', '"entity_path"'),
        (b'{"version":2,"entity_path":"topics"}', "no entity name"),
        (b'{"version":2,"entity_path":"topics/bad name"}', "invalid entity"),
        (b'{"version":2,"entity_path":"topics/<default>"}', "invalid entity"),
        (b'{"version":2,"entity_path":"widgets/x"}', "invalid entity"),
        (b'{"version":2,"entity_path":"brokers/x"}', "invalid entity"),
        (b'{"version":2,"entity_path":"users/a/clients"}', "invalid entity"),
        (
            b'{"version":1,"entity_type":"users","entity_name":"a"}',
            "entity_type must be one of topics, clients",
        ),
        (b'{"version":1,"entity_name":"a"}', "entity_type must be"),
        (b'{"version":1,"entity_type":"topics"}', '"entity_name"'),
        (b'{"version":1,"entity_type":"topics","entity_name":""}', '"entity_name"'),
        (b'{"version":1,"entity_type":"clients","entity_name":"a/clients/b"}', "must not contain '/'"),
        (b'{"version":2,"entity_path":"clients/%FF"}', "invalid entity"),
    ],
)
def test_decode_notification_rejects_malformed(data, reason):
    with pytest.raises(InvalidInput, match=reason):
        decode_notification(data)


# -- change numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("config_change_0000000000", 0),
        ("config_change_0000000042", 42),
        ("config_change_2147483647", 2147483647),
        ("config_change_7", 7),  # Kafka parses whatever digits follow the prefix
    ],
)
def test_change_number(name, number):
    assert change_number(name) == number


@pytest.mark.parametrize(
    "name",
    [
        "config_change_",
        "config_change_-1",
        "config_change_+1",
        "config_change_12a",
        "config_change_\u0661\u0662",  # Arabic-Indic digits are not ZooKeeper's
        "config_change_0000000001\n",
        "other_0000000001",
        "/config/changes/config_change_0000000001",
        "",
    ],
)
def test_change_number_rejects(name):
    with pytest.raises(InvalidInput, match="not a config change notification"):
        change_number(name)


def test_notification_name():
    assert notification_name(42) == "config_change_0000000042"
    assert notification_name(0) == "config_change_0000000000"
    assert notification_name(2**31 - 1) == "config_change_2147483647"


@pytest.mark.parametrize("bad", [-1, 2**31, True, 1.0, "1"])
def test_notification_name_rejects(bad):
    with pytest.raises(InvalidInput):
        notification_name(bad)


@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_change_number_inverts_notification_name(number):
    name = notification_name(number)
    assert len(name) == len(NOTIFICATION_PREFIX) + 10
    assert change_number(name) == number


# -- properties -----------------------------------------------------------------------------------

_text = st.text(max_size=30)
_configs = st.dictionaries(_text, _text, max_size=8)


@given(_configs)
def test_entity_config_round_trip(config):
    data = encode_entity_config(config)
    assert decode_entity_config(data) == config
    assert json.loads(data) == {"version": 1, "config": config}


@given(_configs)
def test_entity_config_bytes_do_not_depend_on_insertion_order(config):
    reordered = dict(reversed(list(config.items())))
    assert encode_entity_config(reordered) == encode_entity_config(config)


_printable = st.text(st.characters(min_codepoint=0x20, exclude_categories=("Cs",)), max_size=30)


@given(st.dictionaries(_printable, _printable, max_size=8))
def test_entity_config_is_compact_json(config):
    # Without control characters our bytes are exactly Python's compact, unescaped, sorted JSON.
    expected = json.dumps(
        {"version": 1, "config": dict(sorted(config.items()))}, separators=(",", ":"), ensure_ascii=False
    )
    assert encode_entity_config(config) == expected.encode()


_topic_names = st.from_regex(r"\A[a-zA-Z0-9._-]{1,249}\Z").filter(lambda n: n not in (".", ".."))
# Names a principal or client id can have ('.' and '..' cannot be ZooKeeper nodes: refused up front).
_principals = st.text(min_size=1, max_size=40).filter(lambda n: n not in (".", ".."))
_entities = st.one_of(
    st.builds(lambda n: Entity.of(EntityType.TOPICS, n), _topic_names),
    st.builds(lambda n: Entity.of(EntityType.CLIENTS, n), _principals | st.just(DEFAULT)),
    st.builds(lambda n: Entity.of(EntityType.USERS, n), _principals | st.just(DEFAULT)),
    st.builds(
        lambda u, c: Entity.of(EntityType.USERS, u, c),
        _principals | st.just(DEFAULT),
        _principals | st.just(DEFAULT),
    ),
    st.builds(lambda n: Entity.of(EntityType.BROKERS, str(n)), st.integers(min_value=0, max_value=2**31 - 1)),
    st.just(Entity.of(EntityType.BROKERS, DEFAULT)),
    st.builds(lambda ip: Entity.of(EntityType.IPS, str(ip)), st.ip_addresses()),
    st.just(Entity.of(EntityType.IPS, DEFAULT)),
)


@settings(max_examples=300)
@given(_entities)
def test_notification_round_trip(entity):
    data = encode_notification(entity)
    assert decode_notification(data) == entity
    # the stored path is sanitized: one segment per name, nothing a ZooKeeper path would split on
    parsed = json.loads(data)
    assert list(parsed) == ["version", "entity_path"]
    assert parsed["entity_path"].count("/") == (3 if entity.client is not None else 1)


@given(_principals)
def test_v1_client_notification_uses_the_stored_name(name):
    stored = Entity.of(EntityType.CLIENTS, name).path.split("/", 1)[1]
    data = json.dumps({"version": 1, "entity_type": "clients", "entity_name": stored}).encode()
    assert decode_notification(data) == Entity.of(EntityType.CLIENTS, name)


@given(st.binary(max_size=200))
def test_decoders_never_raise_anything_but_invalid_input(data):
    for decode in (decode_entity_config, decode_notification):
        with contextlib.suppress(InvalidInput):
            decode(data)


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _jackson_string(text: str) -> str:
    """How Jackson's default writer quotes a string, character by character (the reference)."""
    out = []
    for char in text:
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


@settings(max_examples=500)
@given(st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=4))
def test_encode_entity_config_writes_strings_as_jackson_does(config):
    """Whatever the text (the encoder skips json.dumps for text with nothing to escape), the bytes
    are the reference rendering, and read back to the config."""
    try:
        data = encode_entity_config(config)
    except InvalidInput:
        assert any("\ud800" <= c <= "\udfff" for text in [*config, *config.values()] for c in text)
        return
    body = ",".join(f"{_jackson_string(k)}:{_jackson_string(config[k])}" for k in sorted(config))
    assert data == ('{"version":1,"config":{' + body + "}}").encode()
    assert json.loads(data) == {"version": 1, "config": config}
