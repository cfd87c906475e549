"""The metadata log folded into configctl's terms: which entity each committed write changed, from what to what.

The metadata log (:mod:`configctl.kraft.metadatalog`) holds one record per key set or removed;
configctl's history speaks of writes to entities. This fold (pure: it is fed the entries) turns
the first into the second:

- **one write is one batch's records for one entity.** The controller commits the records of
  one request in one batch, so the records of a batch that name the same entity are one write,
  numbered by the offset of the first of them: on KRaft, that offset is the write's *change
  number*, as a notification's sequence number is on ZooKeeper;
- **before and after.** The fold keeps every entity's config as the log leaves it, so each
  write carries each key it moved with its value before and after. A write that moved nothing
  (a key set to the value it had) is no change, as on ZooKeeper a notification's config that
  equals the last one is no change;
- **configctl's names.** A topic, broker (``""``: the default), group or client-metrics config
  is the entity of that family and name; a quota is the user, client, user+client or IP entity
  its parts name (a null name is that part's default); a SCRAM credential is a key of its user,
  named by its mechanism. A quota is written as configctl shows it (``quota_text``);
- **secrets stay digests** (the decoder never hands over a clear one), and are listed, so a
  reader that shows configs as configctl does masks them;
- **a deleted topic** takes its config with it: Kafka writes no record per key, only the
  topic's removal by id, so the fold keeps the ids the log named;
- **a snapshot** replaces the whole state (:meth:`MetadataState.load`); the entities whose
  config it changed are what a gap in the log hid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from configctl.adminapi.client import quota_entity
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.kraft.metadatalog import MetadataEntry
from configctl.kraft.metadatarecords import (
    PRE_MIGRATION,
    ClientQuotaRecord,
    ConfigRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)
from configctl.reported import quota_text


@dataclass(frozen=True)
class MetadataChange:
    """One committed write to one entity: its change number (the metadata offset of its first
    record), the leader's append time, and each key it moved as ``(before, after)`` (None: not
    set). ``secrets``: the keys whose values are digests."""

    offset: int
    time_ms: int
    entity_path: str
    changed: Mapping[str, tuple[str | None, str | None]]
    secrets: frozenset[str] = frozenset()
    copied: bool = False
    """Written by a ZooKeeper-to-KRaft migration copying ZooKeeper's metadata into the log (the
    records before its ``ZkMigrationStateRecord`` leaves pre-migration): what ZooKeeper held,
    not a write anyone made then."""


@dataclass
class MetadataState:
    """Every entity's config as the metadata log leaves it (secrets as digests), and the topic
    ids the log named."""

    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    secrets: dict[str, set[str]] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)
    migration_state: int | None = None
    """The last ``ZkMigrationStateRecord``'s state (None: the log has none, a cluster born KRaft)."""

    def apply_batch(self, entries: Iterable[MetadataEntry]) -> list[MetadataChange]:
        """Fold one batch's entries in, and the writes they make, in offset order."""
        firsts: dict[str, tuple[int, int]] = {}
        before: dict[str, dict[str, str]] = {}
        copied = False
        for entry in entries:
            copied = copied or self.migration_state == PRE_MIGRATION
            for path, key, value, secret in self._edits(entry):
                if path not in firsts:
                    firsts[path] = (entry.offset, entry.append_time_ms)
                    before[path] = dict(self.configs.get(path, {}))
                self._set(path, key, value, secret)
        changes = []
        for path, (offset, time_ms) in sorted(firsts.items(), key=lambda item: item[1]):
            old, new = before[path], self.configs.get(path, {})
            moved = {
                k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)
            }
            if moved:
                hidden = frozenset(k for k in moved if k in self.secrets.get(path, ()))
                changes.append(MetadataChange(offset, time_ms, path, moved, hidden, copied))
        return changes

    def load(self, entries: Iterable[MetadataEntry]) -> list[str]:
        """Replace the state with a snapshot's; the entity paths whose config it changed."""
        previous = self.configs
        self.configs, self.secrets, self.topics, self.migration_state = {}, {}, {}, None
        for entry in entries:
            for path, key, value, secret in self._edits(entry):
                self._set(path, key, value, secret)
        return sorted(
            path
            for path in set(previous) | set(self.configs)
            if previous.get(path, {}) != self.configs.get(path, {})
        )

    def config(self, entity_path: str) -> dict[str, str]:
        return dict(self.configs.get(entity_path, {}))

    def _set(self, path: str, key: str, value: str | None, secret: bool) -> None:
        config = self.configs.setdefault(path, {})
        hidden = self.secrets.setdefault(path, set())
        if value is None:
            config.pop(key, None)
            hidden.discard(key)
        else:
            config[key] = value
            if secret:
                hidden.add(key)
            else:
                hidden.discard(key)
        if not config:
            self.configs.pop(path, None)
            self.secrets.pop(path, None)

    def _edits(self, entry: MetadataEntry) -> list[tuple[str, str, str | None, bool]]:
        """``(entity path, key, value or None, secret)`` for each key ``entry`` sets or removes."""
        record = entry.record
        if isinstance(record, ZkMigrationStateRecord):
            self.migration_state = record.state
            return []
        if isinstance(record, TopicRecord):
            self.topics[record.topic_id] = record.name
            return []
        if isinstance(record, RemoveTopicRecord):
            name = self.topics.pop(record.topic_id, None)
            if name is None:
                return []
            path = _path(EntityType.TOPICS, name)
            if path is None:
                return []
            return [(path, key, None, False) for key in sorted(self.configs.get(path, {}))]
        if isinstance(record, ConfigRecord):
            family = record.family
            path = _path(family, record.resource_name) if family is not None else None
            return [] if path is None else [(path, record.name, record.value, record.secret)]
        if isinstance(record, ClientQuotaRecord):
            entity = _quota_path(record.entity)
            if entity is None:
                return []
            return [(entity, record.key, None if record.remove else quota_text(record.value), False)]
        if isinstance(record, UserScramCredentialRecord):
            path = _path(EntityType.USERS, record.name)
            return [] if path is None else [(path, record.mechanism, record.credential_digest, True)]
        if isinstance(record, RemoveUserScramCredentialRecord):
            path = _path(EntityType.USERS, record.name)
            return [] if path is None else [(path, record.mechanism, None, True)]
        return []


def _path(family: EntityType, name: str) -> str | None:
    """The entity path of a family's resource (None: a name no configctl entity can have)."""
    try:
        return Entity.named(family, name).path
    except InvalidInput:
        return None


def _quota_path(parts: tuple[tuple[str, str | None], ...]) -> str | None:
    try:
        entity = quota_entity(dict(parts))
    except InvalidInput:
        return None
    return entity.path if entity is not None else None


def batches(entries: Iterable[MetadataEntry]) -> Iterable[list[MetadataEntry]]:
    """Consecutive entries grouped by their batch (the unit of one commit)."""
    group: list[MetadataEntry] = []
    for entry in entries:
        if group and entry.batch != group[0].batch:
            yield group
            group = []
        group.append(entry)
    if group:
        yield group


__all__ = ["MetadataChange", "MetadataState", "batches"]
