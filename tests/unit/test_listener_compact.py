"""Compact storage of the configs a listener keeps, and the fast decode of canonical config nodes."""

from __future__ import annotations

import json
import pickle
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl import znodes
from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.listener.compact import COMPACT_MAX_KEYS, CompactConfig, compact
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead
from configctl.znodes import decode_entity_config, encode_entity_config

pytestmark = pytest.mark.unit


def test_a_compact_config_is_a_read_only_mapping_equal_to_its_dict():
    plain = {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    config = CompactConfig.of(plain)
    assert len(config) == 2 and list(config) == ["retention.ms", "cleanup.policy"]
    assert config["retention.ms"] == "1000" and config.get("nope") is None and config.get("nope", "x") == "x"
    assert "cleanup.policy" in config and "1000" not in config  # values are not keys
    with pytest.raises(KeyError):
        config["1000"]
    assert dict(config) == plain and config == plain and plain == config
    assert config == CompactConfig.of(dict(reversed(plain.items())))  # order does not matter
    assert config != {"retention.ms": "1000"} and config != {**plain, "x": "y"} and config != "text"
    assert set(config.keys() | {"z"}) == {"retention.ms", "cleanup.policy", "z"}
    assert dict(config.items()) == plain and sorted(config.values()) == sorted(plain.values())
    assert pickle.loads(pickle.dumps(config)) == config
    assert hash(config) == hash(CompactConfig.of(plain))
    assert sys.getsizeof(config) < sys.getsizeof(plain) / 2


def test_only_small_configs_are_compacted_and_keys_are_shared():
    big = {f"k{i}": str(i) for i in range(COMPACT_MAX_KEYS + 1)}
    assert compact(big) is big
    first = compact({"retention" + ".ms": "604800000"})
    second = compact({"".join(["retention", ".ms"]): "".join(["6048", "00000"])})
    assert isinstance(first, CompactConfig)
    assert next(iter(first)) is next(iter(second))  # one copy of the name
    assert first["retention.ms"] is second["retention.ms"]  # and of a repeated short value


def test_the_manager_keeps_topics_compact_and_answers_with_plain_dicts():
    manager = DynamicConfigManager(1, {"broker.id": "1"})
    reads = [
        EntityRead(Entity.from_path(f"topics/t{i}"), encode_entity_config({"retention.ms": str(1000 + i)}))
        for i in range(50)
    ]
    reads.append(
        EntityRead(Entity.from_path("brokers/1"), encode_entity_config({"log.cleaner.threads": "2"}))
    )
    manager.reconcile(reads, 7, initial=True)
    stored = manager._configs
    assert all(isinstance(stored[f"topics/t{i}"], CompactConfig) for i in range(50))
    assert isinstance(stored["brokers/1"], dict)
    configs = manager.configs()
    assert configs["topics/t3"] == {"retention.ms": "1003"} and type(configs["topics/t3"]) is dict
    assert manager.topic_config("t3")["retention.ms"].value == "1003"
    # a change compares equal when nothing moved, and applies when something did
    again = manager.apply([EntityRead(Entity.from_path("topics/t3"), reads[3].data, 8)], 8)
    assert not again.changed
    moved = manager.apply(
        [EntityRead(Entity.from_path("topics/t3"), encode_entity_config({"retention.ms": "5"}), 9)], 9
    )
    assert moved.changed and manager.topic_config("t3")["retention.ms"].value == "5"
    rows = [json.loads(line) for line in manager.snapshot_lines(0)]
    assert {"entity_path": "topics/t3", "value": "5"}.items() <= next(
        r for r in rows if r["entity_path"] == "topics/t3"
    ).items()
    assert sum(1 for r in rows if r["entity_path"].startswith("topics/")) == 50


# ----------------------------------------------------------------------------------------------
# decoding: the fast path says exactly what the strict parser says
# ----------------------------------------------------------------------------------------------


def strict(data: bytes) -> dict[str, str] | str:
    original = znodes._fast_config
    znodes._fast_config = lambda data: None
    try:
        return decode_entity_config(data)
    except InvalidInput as exc:
        return f"error: {exc}"
    finally:
        znodes._fast_config = original


def fast(data: bytes) -> dict[str, str] | str:
    try:
        return decode_entity_config(data)
    except InvalidInput as exc:
        return f"error: {exc}"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=5))
def test_every_written_config_reads_back_alike(config):
    data = encode_entity_config(config)
    assert fast(data) == strict(data) == config


_FRAGMENTS = [
    b'{"version":1,"config":{',
    b'"a":"1"',
    b'"a":"2"',
    b'"b":"x y"',
    b",",
    b"}}",
    b"}",
    b'"c":1',
    b'"\\u0041":"\\n"',
    b" ",
    b'"\x01":"x"',
    b'"\xff":"x"',
    b'{"config":{},"version":1}',
    b'"version":2',
    b'"q":"\xe2\x80\xa8"',
    b'"version":1',
    b'"version":1e0',
    b'"version":true',
    b'"config":{}',
    b'"x":"1"',
    b'"a" : "3"',
    b"{",
    b'"\xed\xa0\x80":"x"',
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=8))
def test_any_node_reads_alike_on_both_paths(parts):
    data = b"".join(parts)
    assert fast(data) == strict(data)


def test_duplicates_and_non_strings_still_fail_with_the_strict_reason():
    assert "duplicate JSON key 'a'" in fast(b'{"version":1,"config":{"a":"1","a":"2"}}')
    # the typed decoder keeps the last of duplicate names, at either level and however spaced
    assert "duplicate JSON key 'a'" in fast(b'{"version":1,"config":{"a":"1", "a" : "2"}}')
    assert "duplicate JSON key 'version'" in fast(b'{"version":1,"version":1,"config":{}}')
    assert "duplicate JSON key 'config'" in fast(b'{"version":1,"config":{"a":"1"},"config":{}}')
    assert "Kafka stores every value as a string" in fast(b'{"version":1,"config":{"a":1}}')
