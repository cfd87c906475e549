"""Shell completion: entity types, config keys of the type at hand, profiles (no ZooKeeper here;
entity names from a real ZooKeeper are in tests/integration/test_connection_cli.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
import pytest
from click.shell_completion import BashComplete
from helpers import run_cli

from configctl import catalogue
from configctl.cli import completion
from configctl.cli.alter import alter
from configctl.cli.main import cli
from configctl.entities import EntityType

pytestmark = pytest.mark.unit


def _values(items: list[Any]) -> list[str]:
    return [item.value for item in items]


def _ctx(**params: Any) -> click.Context:
    ctx = click.Context(alter)
    ctx.params.update(params)
    return ctx


def _param(name: str) -> click.Parameter:
    return next(p for p in alter.params if p.name == name)


def test_entity_types() -> None:
    complete = completion.complete_entity_type
    assert _values(complete(_ctx(), _param("entity_types"), "")) == [
        "topics",
        "clients",
        "users",
        "brokers",
        "ips",
        "groups",
        "client-metrics",
    ]
    assert _values(complete(_ctx(), _param("entity_types"), "b")) == ["brokers"]


@pytest.mark.parametrize(
    ("params", "etype"),
    [
        ({"entity_types": ("topics",)}, EntityType.TOPICS),
        ({"entity_types": ("broker",)}, EntityType.BROKERS),  # singular spellings too
        ({"entity_types": ("users", "clients")}, EntityType.CLIENTS),  # user+client: quota keys
        ({"topic": "orders"}, EntityType.TOPICS),
        ({"broker_defaults": True}, EntityType.BROKERS),
        ({"user": "alice"}, EntityType.USERS),
        ({"user": "alice", "client": "app"}, EntityType.CLIENTS),
        ({"ip": "10.0.0.1"}, EntityType.IPS),
        ({}, None),
        ({"entity_types": ("nonsense",)}, None),
    ],
)
def test_the_entity_type_named_so_far(params: dict[str, Any], etype: EntityType | None) -> None:
    assert completion.entity_type_of(params) is etype


def test_add_config_offers_the_keys_of_the_type_with_their_equals_sign() -> None:
    got = _values(completion.complete_add_config(_ctx(topic="t"), _param("add_config"), "retention."))
    assert got == ["retention.bytes=", "retention.ms="]
    assert all(k in catalogue.known_names(EntityType.TOPICS) for k in (g[:-1] for g in got))
    # after a comma, the keys before it stay; inside a [list] or a value, nothing is offered
    got = _values(
        completion.complete_add_config(_ctx(topic="t"), _param("add_config"), "retention.ms=1,cleanup")
    )
    assert got == ["retention.ms=1,cleanup.policy="]
    assert (
        completion.complete_add_config(_ctx(topic="t"), _param("add_config"), "cleanup.policy=[compact,d")
        == []
    )
    assert completion.complete_add_config(_ctx(topic="t"), _param("add_config"), "retention.ms=8") == []
    got = _values(
        completion.complete_add_config(
            _ctx(topic="t"), _param("add_config"), "cleanup.policy=[compact,delete],min"
        )
    )
    assert got == [
        "cleanup.policy=[compact,delete],min.cleanable.dirty.ratio=",
        "cleanup.policy=[compact,delete],min.compaction.lag.ms=",
        "cleanup.policy=[compact,delete],min.insync.replicas=",
    ]


def test_delete_config_offers_the_keys_of_the_type() -> None:
    got = _values(completion.complete_delete_config(_ctx(user="alice"), _param("delete_config"), "SCRAM"))
    assert got == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    got = _values(completion.complete_delete_config(_ctx(ip="1.2.3.4"), _param("delete_config"), ""))
    assert got == sorted(catalogue.known_names(EntityType.IPS))


def test_without_a_type_every_key_is_offered() -> None:
    got = _values(completion.complete_delete_config(_ctx(), _param("delete_config"), "consumer_byte"))
    assert got == ["consumer_byte_rate"]


def test_entity_names_give_nothing_quickly_when_zookeeper_does_not_answer() -> None:
    ctx = _ctx()
    ctx.meta["configctl.flags"] = {"zookeeper": "127.0.0.1:1"}
    began = time.monotonic()
    assert completion.complete_entity_name(ctx, _param("topic"), "") == []
    assert time.monotonic() - began < completion.NAME_TIMEOUT + 1.5


def test_entity_names_give_nothing_for_bad_settings() -> None:
    ctx = _ctx()
    ctx.meta["configctl.flags"] = {"zookeeper": "nonsense:xx"}
    assert completion.complete_entity_name(ctx, _param("topic"), "") == []


def test_through_clicks_resolution() -> None:
    complete = BashComplete(cli, {}, "configctl", "_CONFIGCTL_COMPLETE")
    got = _values(complete.get_completions(["alter", "--broker", "1", "--add-config"], "log.retention.h"))
    assert got == ["log.retention.hours="]
    got = _values(complete.get_completions(["describe", "--entity-type"], "to"))
    assert got == ["topics"]


def test_profiles_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[profiles.prod]\n[profiles.staging]\n[profiles.dev]\n")
    monkeypatch.setenv("CONFIGCTL_CONFIG", str(config))
    complete = BashComplete(cli, {}, "configctl", "_CONFIGCTL_COMPLETE")
    assert _values(complete.get_completions(["--profile"], "")) == ["dev", "prod", "staging"]
    assert _values(complete.get_completions(["describe", "--profile"], "st")) == ["staging"]


def test_through_the_completion_variable_in_a_subprocess() -> None:
    words = "configctl alter --topic orders --delete-config retention."
    code, out, err = run_cli(
        env={"_CONFIGCTL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": "5"}
    )
    assert code == 0, err
    assert out.splitlines() == ["plain,retention.bytes", "plain,retention.ms"]
    assert err == ""


def test_the_shell_scripts_are_produced() -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, err = run_cli(env={"_CONFIGCTL_COMPLETE": f"{shell}_source"})
        assert code == 0, err
        assert "_CONFIGCTL_COMPLETE" in out
