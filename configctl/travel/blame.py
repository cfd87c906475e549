"""``configctl blame --broker ID <entity> --key K [--at T]``: the writes that produced a value.

A write is in the chain when it moved the key's effective value or source on that broker: the
key itself, a synonym set at another layer, a ``<default>`` a per-broker override stops hiding.
A write a higher layer hid produced nothing and is left out. Each recorded write of every entity
the answer depends on is replayed before and after, through the same precedence code as
``describe --effective``
(:class:`configctl.travel.at.Moment`). Each link says when the broker applied it, from its
applied log where one is readable.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configctl import applied
from configctl.catalogue import is_sensitive
from configctl.effective import dependencies, target_entity, view_from
from configctl.entities import DEFAULT, Entity
from configctl.errors import BeyondHorizon, InvalidInput
from configctl.handlers import handler_for
from configctl.precedence import EffectiveValue
from configctl.secrets import MASK
from configctl.sources import DEFAULT_CONFIG, STATIC_BROKER_CONFIG
from configctl.store import ABSENT, ConfigStore, Stored
from configctl.timeref import TimeRef
from configctl.travel.at import Moment, moment
from configctl.travel.outside import OutsideWrite
from configctl.znodes import HistoryRecord


@dataclass
class Blame:
    """The value of one key on one broker, its source and layer, and the writes behind it."""

    entity_path: str
    key: str
    value: str | None
    source: str
    layer: str
    at_ms: int
    chain: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "entity_path": self.entity_path,
            "key": self.key,
            "value": self.value,
            "source": self.source,
            "layer": self.layer,
            "at_ms": self.at_ms,
            "chain": self.chain,
        }


def layer_of(entity_path: str) -> str:
    """A written entity as a precedence layer: ``per-broker``, ``<default>``, or the entity path."""
    if entity_path == f"brokers/{DEFAULT}":
        return DEFAULT
    if entity_path.startswith("brokers/"):
        return "per-broker"
    return entity_path


def source_layer(value: EffectiveValue, entity: Entity, broker_id: int) -> str:
    """Where the value in force comes from, as a layer (``static``, ``Kafka default``, a written one)."""
    if value.source == STATIC_BROKER_CONFIG:
        return "static"
    if value.source == DEFAULT_CONFIG:
        return "Kafka default"
    if value.source == "DYNAMIC_TOPIC_CONFIG":
        return entity.path
    if value.source == "DYNAMIC_DEFAULT_BROKER_CONFIG":
        return DEFAULT
    if value.source == "DYNAMIC_BROKER_CONFIG":
        return "per-broker"
    return value.source  # a quota's or an IP's source is the entity path that set it


def blame(
    store: ConfigStore,
    broker_id: int,
    target: Entity | None,
    key: str,
    ref: TimeRef | None = None,
    applied_dirs: Sequence[str | Path] = (),
) -> Blame:
    entity = target_entity(broker_id, target)
    ref = ref or TimeRef("now", at_ms=int(time.time() * 1000))
    at = moment(store, broker_id, ref, applied_dirs)
    values = at.effective(entity)
    if key not in values:
        raise InvalidInput(f"{entity.path} has no config {key!r} on broker {broker_id}")
    value = values[key]
    result = Blame(
        entity.path,
        key,
        _shown(value),
        value.source,
        source_layer(value, entity, broker_id),
        at.at_ms,
    )
    deps = list(dependencies(broker_id, entity, at.history.entities_of).values())
    events: list[tuple[HistoryRecord, HistoryRecord | None, bool]] = []
    for dep in deps:
        records = [r for r in at.history.records(dep) if r.time_ms <= at.at_ms]
        for index, record in enumerate(records):
            older = records[index + 1] if index + 1 < len(records) else None
            known = older is not None or record.version <= 0
            events.append((record, older, known))
    events.sort(key=lambda e: e[0].time_ms, reverse=True)
    for record, older, known in events:
        outside = at.history.outside_of(record)
        if outside is not None and at.history.is_unknown(record) and outside.time_ms is not None:
            continue  # a gap's dated record speaks for it
        if older is not None and at.history.is_unknown(older):
            known = False  # just before it lies a gap nobody can replay
        after = _value_at(at, deps, entity, key, record.time_ms, None)
        before = (
            _value_at(at, deps, entity, key, record.time_ms, (record.entity_path, older)) if known else None
        )
        if before is None or after is None:  # history cannot replay it: a write of the key itself counts
            if not _moves(record, outside, key):
                continue
        elif (before.value, before.source) == (after.value, after.source):
            continue  # hidden by a higher layer, or set to what it already was: it produced nothing
        result.chain.append(_link(at, record, after, outside, key))
    return result


def _moves(record: HistoryRecord, outside: OutsideWrite | None, key: str) -> bool:
    """Whether a write that cannot be replayed moved ``key``: its own delta says so; for a write
    outside configctl, its derived delta or applied log, or nothing says what it changed."""
    if outside is None:
        return key in record.changed
    return key in outside.moved_keys() or (outside.changed is None and not outside.applied)


def _value_at(
    at: Moment,
    deps: list[Entity],
    entity: Entity,
    key: str,
    at_ms: int,
    replace: tuple[str, HistoryRecord | None] | None,
) -> EffectiveValue | None:
    """The key's value at ``at_ms`` (with one entity's config replaced by its previous record's,
    for "just before this write"); None when history cannot say."""
    try:
        stored = at.history.stored_at(deps, at_ms)
    except BeyondHorizon:
        return None
    if replace is not None:
        path, older = replace
        config = dict(older.config or {}) if older is not None and older.version >= 0 else {}
        stored = [
            Stored(s.entity, config, older.version if older else ABSENT) if s.entity.path == path else s
            for s in stored
        ]
    view = view_from(at.broker_id, at.static, stored)
    return handler_for(entity).effective(entity, view).get(key)


def _link(
    at: Moment, record: HistoryRecord, after: EffectiveValue | None, outside: OutsideWrite | None, key: str
) -> dict[str, Any]:
    number = at.history.change_number_of(record)
    applied_at = None
    for found in at.records or ():
        if (
            found.kind == applied.APPLIED
            and found.entity_path == record.entity_path
            and found.applied_at_ms >= record.time_ms
            and (number is None or found.change_number == number)
        ):
            number = found.change_number if number is None else number
            applied_at = found.applied_at_ms
            break
    if applied_at is None and number is not None:  # applied within a full load (a restart)
        for found in at.records or ():
            if found.kind == applied.LOAD and (found.change_number or -1) >= number:
                applied_at = found.applied_at_ms
                break
    link: dict[str, Any] = {
        "change_number": number,
        "version": record.version,
        "time_ms": record.time_ms,
        "identity": record.identity,
        "reason": record.reason,
        "layer": layer_of(record.entity_path),
        "entity_path": record.entity_path,
        "value": _shown(after) if after is not None else None,
        "applied_at_ms": applied_at,
    }
    if outside is not None:  # configctl's own links keep their fields as they were
        value = link["value"]
        if after is None and outside.config is not None and key in outside.config:
            value = (
                MASK
                if is_sensitive(Entity.from_path(record.entity_path).schema_type, key)
                else outside.config[key]
            )
        link.update(
            written_outside_configctl=True,
            version=outside.version,
            time_ms=outside.time_ms,
            identity=None,
            reason=outside.summary(),
            value=value,
            writes=outside.writes,
            not_before_ms=outside.not_before_ms,
            not_after_ms=outside.not_after_ms,
        )
    return link


def _shown(value: EffectiveValue) -> str | None:
    """A secret is shown masked (history holds it encrypted; the log as a digest)."""
    return MASK if value.sensitive and value.value is not None else value.value
