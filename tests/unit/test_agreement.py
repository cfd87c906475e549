"""configctl's computation against the broker's report: the comparison rules of each family."""

from __future__ import annotations

import pytest

from configctl import agreement, secrets
from configctl.precedence import EffectiveValue
from configctl.reported import ReportedConfig

pytestmark = pytest.mark.unit


def ours(name: str, value: str | None, sensitive: bool = False) -> EffectiveValue:
    return EffectiveValue(name, value, "DEFAULT_CONFIG", (), sensitive)


def theirs(name: str, value: str | None, sensitive: bool = False) -> ReportedConfig:
    return ReportedConfig(name, value, "DEFAULT_CONFIG", sensitive)


def test_equal_configs_agree_and_each_difference_is_named():
    computed = {"a": ours("a", "1"), "b": ours("b", "2"), "only.ours": ours("only.ours", "x")}
    reported = {"a": theirs("a", "1"), "b": theirs("b", "3"), "only.theirs": theirs("only.theirs", None)}
    found = agreement.configs("brokers/1", computed, reported)
    assert [(m.key, m.expected, m.reported) for m in found] == [
        ("b", "2", "3"),
        ("only.ours", "x", None),
        ("only.theirs", None, None),
    ]
    assert found[0].reason == "b: configctl computes '2', the broker reports '3'"
    assert found[0].to_json()["entity_path"] == "brokers/1"
    assert agreement.configs("brokers/1", {"a": ours("a", "1")}, {"a": theirs("a", "1")}) == []


def test_secrets_are_never_compared():
    computed = {"ssl.keystore.password": ours("ssl.keystore.password", "******", sensitive=True)}
    reported = {"ssl.keystore.password": theirs("ssl.keystore.password", None, sensitive=True)}
    assert agreement.configs("brokers/1", computed, reported) == []


@pytest.mark.parametrize(
    ("stored", "reported", "agree"),
    [
        ({"producer_byte_rate": "1000"}, {"producer_byte_rate": "1000"}, True),
        ({"producer_byte_rate": "1e3"}, {"producer_byte_rate": "1000"}, True),
        ({"request_percentage": "12.5"}, {"request_percentage": "12.5"}, True),
        ({"producer_byte_rate": "1000"}, {"producer_byte_rate": "2000"}, False),
        ({"producer_byte_rate": "1000"}, {}, False),
        ({}, {"consumer_byte_rate": "1"}, False),
    ],
)
def test_quotas_compare_as_numbers(stored, reported, agree):
    assert (agreement.quotas("users/alice", stored, reported) == []) is agree


def test_scram_compares_mechanisms_and_iterations():
    stored = {"SCRAM-SHA-256": secrets.scram_config_value("SCRAM-SHA-256", "iterations=8192,password=p")}
    assert agreement.scram("users/alice", stored, {"SCRAM-SHA-256": 8192}) == []
    (wrong,) = agreement.scram("users/alice", stored, {"SCRAM-SHA-256": 4096})
    assert (wrong.expected, wrong.reported) == ("iterations=8192", "iterations=4096")
    (missing,) = agreement.scram("users/alice", stored, {})
    assert (missing.key, missing.reported) == ("SCRAM-SHA-256", None)
    assert agreement.quotas("users/alice", stored, {}) == []  # credentials are not quotas
