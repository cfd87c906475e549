"""The documents the console serves: each the document the CLI prints with ``-o json``.

One home per document (:mod:`configctl.documents`, beneath both front ends): ``/api/status`` is
``configctl status -o json`` because both are the same
:class:`~configctl.documents.status.StatusDocument`; ``/api/rollouts`` is ``configctl rollout
list -o json`` and a rollout's detail ``rollout show ID -o json`` in the same way; the entity
document is assembled from ``describe -o json``, ``describe --effective -o json`` and
``history -o json`` elements, with the ``--wait`` verdict per broker: from what its listener
published (:func:`configctl.fleet.outcome`), or where no listener publishes anything (KRaft) from
what the broker answers when asked itself (:func:`configctl.rollout.brokerwait.ask`, the KRaft
``--wait``'s own question). Secrets are masked where those documents mask them.

On KRaft there are no change notifications: the newest changes are the newest writes of the
fleet's history (:func:`newest_writes`, ``history --since``'s feed: configctl's records and the
writes outside configctl), and nothing is numbered.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl import fleet
from configctl.documents.describe import DescribeDocument
from configctl.documents.history import Entry, FeedDocument, entity_history
from configctl.documents.rollouts import RolloutListDocument, RolloutShowDocument
from configctl.documents.status import status_of
from configctl.effective import EffectiveReport, effective_config
from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError, InvalidInput, KafkaUnavailable, NotFound, one_line
from configctl.files import read_json
from configctl.handlers import handler_for
from configctl.rollout.brokerwait import Expected, ask
from configctl.store import ConfigStore, Notification
from configctl.store.roles import broker_reports
from configctl.travel.feed import feed
from configctl.travel.writers import writers

MAX_EFFECTIVE_BROKERS = 50
"""Brokers whose effective values the entity document computes (each costs a few reads); the
others are counted in ``effective_omitted`` and reachable one at a time with ``?broker=ID``."""

MAX_ASKED = MAX_EFFECTIVE_BROKERS
"""Where each broker is asked itself (KRaft), the brokers asked for their verdict on one entity
(one request each); the others are counted in ``applied_omitted``."""

CHANGE_SCAN = 200
"""How many of the newest notifications are searched for an entity's latest change."""


LISTENERS, BROKERS = "listeners", "brokers"
"""Where an entity document's verdicts come from (``verdicts_from``): what each broker's listener
published (ZooKeeper), or each broker asked itself through the Admin API (KRaft)."""


def status_document(store: ConfigStore) -> dict[str, Any]:
    """``configctl status -o json`` (on KRaft its ``"mode": "kraft"`` document)."""
    return status_of(store).to_json()


def newest_writes(store: ConfigStore, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` writes across the fleet, newest first, as ``history --since`` lists
    them (``configctl history --since 0 -o json``'s first elements): where the store has no
    change notifications (KRaft), the newest changes the console shows."""
    return FeedDocument(feed(store, 0)[:limit]).to_json()


def rollouts_document(store: ConfigStore) -> list[dict[str, Any]]:
    """``configctl rollout list -o json``."""
    return RolloutListDocument(store.rollouts.listing()).to_json()


def rollout_detail(store: ConfigStore, rollout_id: str) -> dict[str, Any]:
    """``configctl rollout show ID -o json`` (plan, step, what it would undo, events)."""
    return RolloutShowDocument(store.rollouts.load(rollout_id)).to_json()


def rollout_brokers(
    store: ConfigStore, detail: Mapping[str, Any], changes: ChangePaths
) -> list[dict[str, Any]]:
    """Where each known broker stands with what an open rollout has written so far: the ``--wait``
    verdict (:func:`configctl.fleet.outcome`) on the newest change of each entity it wrote; where
    no listener publishes anything (KRaft), each broker that takes one of them asked itself
    (:func:`asked_verdicts`) whether it reports what the cluster holds now."""
    if not store.capabilities.fleet_state:
        paths = [i.get("entity_path") for i in detail.get("planned") or [] if i.get("written")]
        entities = list(dict.fromkeys(Entity.from_path(p) for p in paths if isinstance(p, str)))
        return [o.to_json() for o in asked_verdicts(store, entities)[0]]
    written = []
    for item in detail.get("planned") or []:
        if not item.get("written"):
            continue
        path = item.get("entity_path")
        number = changes.latest_for(store, path) if isinstance(path, str) else None
        if number is not None:
            written.append(fleet.Written(Entity.from_path(path), number))
    if not written:
        return []
    states = store.broker_states()
    kafka = store.running_brokers()
    return [fleet.outcome(b, states.get(b), written, kafka).to_json() for b in fleet.known_brokers(store)]


def asked_verdicts(
    store: ConfigStore, entities: Sequence[Entity], held: Mapping[Entity, Mapping[str, str]] | None = None
) -> tuple[list[fleet.BrokerOutcome], int]:
    """Each registered broker that takes one of ``entities`` asked itself whether it reports what
    the cluster holds for them (``held``, else read now): the KRaft ``--wait``'s own question
    (:func:`configctl.rollout.brokerwait.ask`), so ``applied`` only from the broker's own answer.
    At most :data:`MAX_ASKED` brokers are asked; the second value counts the others."""
    if not entities:
        return [], 0
    if held is None:
        held = {s.entity: s.config for s in store.read_many(entities, strict=False)}
    reports = broker_reports(store, what="the console's verdicts")
    takes = {
        b: [Expected(e, dict(held.get(e, {}))) for e in entities if handler_for(e).follows(e, b)]
        for b in sorted(store.running_brokers() or ())
    }
    asked = [b for b, expected in takes.items() if expected]
    return [ask(reports, b, takes[b]) for b in asked[:MAX_ASKED]], max(0, len(asked) - MAX_ASKED)


class ChangePaths:
    """The entity path of each change notification, read once and remembered (a notification
    never changes; a purged one is forgotten)."""

    def __init__(self) -> None:
        self._paths: dict[int, str | None] = {}

    def newest(self, store: ConfigStore, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` changes still in ZooKeeper, newest first: ``{"change_number","entity_path"}``."""
        notes = store.notifications()
        present = {n.number for n in notes}
        for number in [n for n in self._paths if n not in present]:
            del self._paths[number]
        newest = notes[-limit:]
        self._read(store, [n for n in newest if n.number not in self._paths])
        shown = list(reversed(newest))
        found = writers(store, {p for n in shown if (p := self._paths.get(n.number)) is not None})
        return [
            {
                "change_number": n.number,
                "entity_path": self._paths.get(n.number),
                "written_outside_configctl": found.of(n.number),
            }
            for n in shown
        ]

    def latest_for(self, store: ConfigStore, path: str, scan: int = CHANGE_SCAN) -> int | None:
        """The newest change notification still in ZooKeeper naming ``path`` (None: none among the newest ``scan``)."""
        notes = store.notifications()[-scan:]
        self._read(store, [n for n in notes if n.number not in self._paths])
        found = [n.number for n in notes if self._paths.get(n.number) == path]
        return max(found) if found else None

    def _read(self, store: ConfigStore, notes: Sequence[Notification]) -> None:
        # One notification at a time: the store's batch read leaves gone ones out, unaligned.
        for note in notes:
            paths = store.notified_paths([note])
            self._paths[note.number] = paths[0] if paths else None


@dataclass
class EntityDocument:
    """``/api/entity/<path>``: the stored config, its effective value per broker, the verdict per
    broker on its latest change, and its history."""

    entity: Entity
    stored: dict[str, Any]
    history: list[dict[str, Any]]
    records: list[Entry]
    latest_change: int | None
    applied: list[fleet.BrokerOutcome]
    effective: list[EffectiveReport]
    effective_omitted: int = 0
    effective_problems: dict[int, str] = field(default_factory=dict)
    verdicts_from: str = LISTENERS
    applied_omitted: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "entity_path": self.entity.path,
            "entity_label": self.entity.label,
            "stored": self.stored,
            "latest_change_number": self.latest_change,
            "verdicts_from": self.verdicts_from,
            "applied": [o.to_json() for o in self.applied],
            "applied_omitted": self.applied_omitted,
            "effective": [r.to_json() for r in self.effective],
            "effective_omitted": self.effective_omitted,
            "effective_unavailable": [
                {"broker_id": b, "reason": reason} for b, reason in sorted(self.effective_problems.items())
            ],
            "history": self.history,
        }


def parse_entity(path: str) -> Entity:
    """The entity a URL names by its stored path (``topics/orders``, ``users/User%3Aalice``)."""
    try:
        return Entity.from_path(path)
    except InvalidInput as exc:
        raise NotFound(f"{one_line(exc.message, 200)}") from None


def entity_document(
    store: ConfigStore, entity: Entity, changes: ChangePaths, *, only_broker: int | None = None
) -> EntityDocument:
    """Everything the console shows about one entity (reads the store; the caller caches)."""
    stored = store.read(entity, strict=False)
    described = DescribeDocument(entity.type, [stored]).to_json()[0]
    found = entity_history(store, entity)  # configctl's records and the writes outside it
    records = list(found.entries)
    history = found.to_json()
    if store.capabilities.fleet_state:
        latest = changes.latest_for(store, entity.path)
        states = store.broker_states()
        applied = []
        if latest is not None:
            written = [fleet.Written(entity, latest)]
            kafka = store.running_brokers()
            applied = [fleet.outcome(b, states.get(b), written, kafka) for b in fleet.known_brokers(store)]
        brokers, verdicts, omitted = sorted(states), LISTENERS, 0
    else:  # no listener publishes anything (KRaft): each registered broker is asked itself
        latest = None
        brokers = sorted(store.running_brokers() or ())
        applied, omitted = [], 0
        if stored.config or records:  # an entity never written has nothing to be applied
            applied, omitted = asked_verdicts(store, [entity], {entity: stored.config})
        verdicts = BROKERS
    live = brokers if only_broker is None else [b for b in brokers if b == only_broker]
    wanted = [b for b in live if _follows(entity, b)]
    effective: list[EffectiveReport] = []
    problems: dict[int, str] = {}
    for broker_id in wanted[:MAX_EFFECTIVE_BROKERS]:
        try:
            effective.append(effective_config(store, broker_id, _target(entity)))
        except KafkaUnavailable as exc:  # asked itself (KRaft), the broker did not answer
            problems[broker_id] = f"did not answer: {one_line(exc.message, 300)}"
        except ConfigctlError as exc:  # about this broker only: said in its place
            problems[broker_id] = one_line(exc.message, 300)
    return EntityDocument(
        entity,
        described,
        history,
        records,
        latest,
        applied,
        effective,
        max(0, len(wanted) - MAX_EFFECTIVE_BROKERS),
        problems,
        verdicts,
        omitted,
    )


def _follows(entity: Entity, broker_id: int) -> bool:
    """Whether broker ``broker_id`` has an effective view of ``entity`` (another broker's own config: no)."""
    if entity.type is EntityType.BROKERS and not entity.is_default:
        return entity.name == str(broker_id)
    return True


def _target(entity: Entity) -> Entity | None:
    """``describe --effective``'s target: a broker layer is the broker itself."""
    return None if entity.type is EntityType.BROKERS else entity


class AuditFile:
    """The audit's JSON document given with ``--audit-json``, read again when the file changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None
        self._document: Any = None

    def document(self) -> Any:
        """The newest document in the file (a file replaced by the next audit run is re-read)."""
        try:
            info = os.stat(self.path)
        except OSError as exc:
            raise NotFound(f"the audit JSON {self.path} cannot be read: {one_line(exc.strerror)}") from None
        key = (info.st_mtime_ns, info.st_size)
        if key != self._seen:
            document = read_json(self.path, "the audit JSON")
            if not isinstance(document, Mapping):
                raise InvalidInput(f"{self.path} is not an audit JSON document (not a JSON object)")
            self._document, self._seen = document, key
        return self._document


__all__ = [
    "AuditFile",
    "ChangePaths",
    "EntityDocument",
    "entity_document",
    "newest_writes",
    "parse_entity",
    "rollout_brokers",
    "rollout_detail",
    "rollouts_document",
    "status_document",
]
