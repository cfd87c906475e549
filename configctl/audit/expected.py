"""The values the fleet is expected to run (what ZooKeeper says), as the audit's optional second input.

The audit never needs ZooKeeper: snapshots alone give stale brokers, divergence, overrides and
static skew. When the desired state is known (read from the store by the CLI,
:func:`expected_from_store`, or from a JSON file on a cluster where the Spark driver cannot reach
ZooKeeper) the audit also reports ``missed_changes``. This module is plain data plus pure
functions; it does not import kazoo or configctl's ZooKeeper code, so the Spark job can ship
without them.

(Not to be confused with :mod:`configctl.desired`, the desired-state *files* of ``plan`` and
``apply``: this is the audit's flattened view of one moment of ``/config``, key by key. The
user-facing names, ``--desired-state`` and ``audit desired-state``, keep the operators' word.)

Rules the audit applies to an :class:`ExpectedValue`:

* ``broker_id=None`` applies to every broker; an expectation with a ``broker_id`` wins over
  one without for that broker and key (that is how ``brokers/<id>`` beats ``brokers/<default>``).
* Broker keys (any ``entity_path`` under ``brokers/``) are matched by key name against the
  broker's own ``brokers/<id>`` lines; ``brokers/<id>`` as a path implies ``broker_id=<id>``.
* ``value=None`` means "must not be set" (no line for an entity key, no dynamic source for a
  broker key).
* Values are in snapshot form: sensitive ones as ``sha256:<hex>`` (plain values of sensitive
  keys are digested by the audit before comparing, so either form works).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from configctl.audit.schema import BROKER_DEFAULT_PATH, is_sensitive
from configctl.digests import comparable, digest, is_digest
from configctl.errors import InvalidInput
from configctl.files import read_json
from configctl.znodes import is_json_int

if TYPE_CHECKING:
    from configctl.store import ConfigStore

_BROKER_PATH = re.compile(r"^brokers/([0-9]+)$")


@dataclass(frozen=True, order=True)
class ExpectedValue:
    """One key's value as ZooKeeper says the broker(s) should have it."""

    broker_id: int | None
    entity_path: str
    name: str
    value: str | None


@dataclass(frozen=True)
class ExpectedState:
    """The newest change number and every expected value.

    ``complete`` says ``expected`` lists every dynamic override there is: then a snapshot line
    for an entity key (or a broker key with a dynamic source) that no expectation covers is a
    missed deletion. Set it to False for a partial list (only the listed keys are checked).
    """

    latest_change_number: int | None
    expected: tuple[ExpectedValue, ...] = field(default_factory=tuple)
    complete: bool = True
    source: str = "zookeeper"
    """Where it was read from, as the report labels it: ``zookeeper``, or the desired-state file's
    name (not part of the file's JSON)."""

    def to_text(self) -> str:
        """The JSON text ``audit desired-state`` writes (for ``audit --desired-state``), no final newline."""
        return json.dumps(self.to_json(), indent=1, ensure_ascii=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "latest_change_number": self.latest_change_number,
            "complete": self.complete,
            "expected": [
                {"broker_id": e.broker_id, "entity_path": e.entity_path, "name": e.name, "value": e.value}
                for e in sorted(self.expected, key=_sort_key)
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> ExpectedState:
        """Parse the JSON form; raises ValueError with a one-line reason when it is malformed."""
        if not isinstance(data, dict):
            raise ValueError("a desired state is a JSON object")
        latest = data.get("latest_change_number")
        if latest is not None and not is_json_int(latest):
            raise ValueError("latest_change_number must be an integer or null")
        rows = data.get("expected", [])
        if not isinstance(rows, list):
            raise ValueError("expected must be a list")
        expected = []
        for index, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ValueError(f"expected[{index}] is not an object")
            broker_id, path, name, value = (row.get(k) for k in ("broker_id", "entity_path", "name", "value"))
            if broker_id is not None and not is_json_int(broker_id):
                raise ValueError(f"expected[{index}].broker_id must be an integer or null")
            if not isinstance(path, str) or not path or not isinstance(name, str) or not name:
                raise ValueError(f"expected[{index}] needs a non-empty entity_path and name")
            if value is not None and not isinstance(value, str):
                raise ValueError(f"expected[{index}].value must be a string or null")
            expected.append(ExpectedValue(broker_id, path, name, value))
        return cls(latest, tuple(expected), bool(data.get("complete", True)))


def _sort_key(e: ExpectedValue) -> tuple[Any, ...]:
    return (e.broker_id is not None, e.broker_id or 0, e.entity_path, e.name)


def read_expected_state(path: str | Path) -> ExpectedState:
    """Load a desired-state file written by :meth:`ExpectedState.to_json` (ValueError on bad content)."""
    try:
        data = read_json(path, "desired state")
    except InvalidInput as exc:  # missing, a named pipe, not JSON, nested too deep: the one line
        raise ValueError(str(exc)) from None
    return dataclasses.replace(ExpectedState.from_json(data), source=Path(path).name)


def snapshot_form(name: str, value: str | None, digest_key: bytes | None = None) -> str | None:
    """A value as a snapshot line would hold it: secrets as their digest, the rest unchanged.

    The digest is :func:`configctl.digests.digest`, the listener's, under the fleet's digest key
    when there is one (a listener with the key writes HMAC digests; without it, plain SHA-256).
    A value that already is a digest is kept: an exported desired state holds digests, in either
    form (a keyed ``hmac-sha256:<hex>`` copied from a state node is read in snapshot form).
    """
    if value is None or not is_sensitive(name):
        return value
    if is_digest(value):
        return comparable(value)
    return digest(value, digest_key)


def expected_from_configs(
    latest_change_number: int | None,
    configs: Mapping[str, Mapping[str, str]],
    *,
    decode_password: Callable[[str], str] | None = None,
    digest_key: bytes | None = None,
) -> ExpectedState:
    """Turn the ``/config`` tree into expectations (secrets digested under ``digest_key``, if any).

    ``brokers/<default>`` applies to every broker and ``brokers/<id>`` to one; every other
    entity's keys apply to every broker as they are. Broker password configs are stored
    encrypted (Kafka's password encoder, random salt), so their digest says nothing about the
    plain value the broker runs with: they are compared only when ``decode_password`` is given
    and left out otherwise (the audit never reports a missed deletion of a sensitive broker
    key, for exactly this reason).
    """
    expected: list[ExpectedValue] = []
    broker_configs: dict[str, dict[str, str]] = {}
    for path, config in configs.items():
        if path.startswith("brokers/"):
            broker_configs[path] = _decoded(config, decode_password)
            continue
        expected.extend(
            ExpectedValue(None, path, name, snapshot_form(name, value, digest_key))
            for name, value in config.items()
        )
    expected.extend(_broker_expectations(broker_configs, digest_key))
    return ExpectedState(latest_change_number, tuple(sorted(expected, key=_sort_key)), complete=True)


def _decoded(config: Mapping[str, str], decode_password: Callable[[str], str] | None) -> dict[str, str]:
    """Broker passwords in plain form, or left out when they cannot be decoded here."""
    result = {}
    for name, value in config.items():
        if is_sensitive(name):
            if decode_password is None:
                continue
            value = decode_password(value)
        result[name] = value
    return result


def _broker_expectations(
    broker_configs: Mapping[str, Mapping[str, str]], digest_key: bytes | None = None
) -> list[ExpectedValue]:
    """What each broker should show with a dynamic source, resolved as the listener resolves it.

    Going through the same precedence code matters: a dynamic ``log.retention.ms`` also decides
    ``log.retention.hours`` (synonyms), and read-only or misplaced keys Kafka ignores are not
    expected at all. Imported lazily: only the driver, with configctl installed, gets here.
    """
    from configctl.precedence import resolve_broker
    from configctl.sources import DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG

    default_path = BROKER_DEFAULT_PATH
    cluster_default = broker_configs.get(default_path, {})
    result = []
    shared = resolve_broker("-1", {}, cluster_default, {}).values
    for name, value in shared.items():
        if value.source == DYNAMIC_DEFAULT_BROKER_CONFIG:
            result.append(
                ExpectedValue(None, default_path, name, snapshot_form(name, value.value, digest_key))
            )
    for path, config in broker_configs.items():
        match = _BROKER_PATH.match(path)
        if match is None:
            continue
        own = resolve_broker(match.group(1), config, cluster_default, {}).values
        for name, value in own.items():
            if value.source == DYNAMIC_BROKER_CONFIG:
                result.append(
                    ExpectedValue(
                        int(match.group(1)), path, name, snapshot_form(name, value.value, digest_key)
                    )
                )
    return result


def expected_from_store(store: ConfigStore, *, digest_key: bytes | None = None) -> ExpectedState:
    """The expected state a store holds now: every entity's config, and the newest change number.

    Secrets are digested under the fleet's digest key, if any, as keyed listeners write them.
    """
    configs = {stored.entity.path: dict(stored.config) for stored in store.read_all() if stored.config}
    return expected_from_configs(store.latest_change_number(), configs, digest_key=digest_key)
