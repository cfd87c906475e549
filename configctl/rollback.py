"""Rollback: an entity's config restored as recorded at version N, through the normal write path.

Every write configctl makes is recorded with the config it left (the store's history,
:meth:`configctl.store.ConfigStore.history`). :func:`prepare` finds the record of version N and
diffs it against what the entity holds now; :func:`restore` writes that diff through the
validated, version-checked write path (:func:`configctl.writer.alter`), checked against the
version the diff was made from, so the undo is itself recorded and can be undone. Asking the
operator, showing the diff and following the brokers are the front end's (``configctl rollback``).
"""

from __future__ import annotations

from dataclasses import dataclass

from configctl import secrets, writer
from configctl.changes import ConfigChange, KeyDiff, diff
from configctl.entities import Entity
from configctl.errors import Conflict, InvalidInput, NotFound
from configctl.store import ConfigStore, Stored


@dataclass(frozen=True)
class Rollback:
    """A rollback ready to write: the entity as read, the config of version ``to_version``, and the diff."""

    entity: Entity
    to_version: int
    current: Stored
    target: dict[str, str]
    changes: list[KeyDiff]

    @property
    def change(self) -> ConfigChange:
        """The diff as a change the write path applies (keys set to version N's values, keys N lacked deleted)."""
        return ConfigChange(
            add={c.name: c.new for c in self.changes if c.new is not None},
            delete=tuple(c.name for c in self.changes if c.new is None),
        )


def recorded_reason(to_version: int, reason: str = "") -> str:
    """What the history of the restored entity says about the write."""
    return f"rollback to {to_version}" + (f": {reason}" if reason else "")


def prepare(store: ConfigStore, entity: Entity, to_version: int, *, label: str | None = None) -> Rollback:
    """Version ``to_version``'s config of ``entity`` and the diff from what it holds now.

    :class:`NotFound` when no record of that version exists, or when it was too large to record
    in full; ``label`` names the entity in those messages (``entity.label`` by default).
    """
    label = label if label is not None else entity.label
    store.capabilities.require("history", "versioned_writes", what="rollback")
    entries = store.history(entity)
    entry = next((e for e in entries if e.version == to_version), None)
    if entry is None:
        known = ", ".join(str(e.version) for e in entries[:20]) or "none"
        raise NotFound(f"no history record of version {to_version} for {label} (recorded versions: {known})")
    if entry.config is None:
        raise NotFound(
            f"version {to_version} of {label} was too large to record in full; it cannot be restored"
        )
    current = store.read(entity)
    target = _unmasked(dict(entry.config), current.config, label, to_version)
    return Rollback(entity, to_version, current, target, diff(current.config, target))


def _unmasked(target: dict[str, str], now: dict[str, str], label: str, to_version: int) -> dict[str, str]:
    """``target`` with each secret its record holds masked (KRaft takes secrets in clear, so its
    history keeps them as ``******``) left as the entity holds it now: the secret itself cannot be
    restored. A masked secret the entity no longer holds is refused in one line, nothing written:
    only a new one, typed again, can bring it back."""
    masked = [k for k, v in target.items() if v == secrets.MASK]
    gone = [k for k in masked if k not in now]
    if gone:
        raise InvalidInput(
            f"version {to_version} of {label} holds {', '.join(sorted(gone))}, which its history keeps "
            "masked (the cluster takes secrets in clear and configctl never records them): it cannot be "
            "restored; set it again with its password (configctl alter ... --add-config), then roll back "
            "the rest; nothing was written"
        )
    return {k: (now[k] if v == secrets.MASK else v) for k, v in target.items()}


def restore(
    store: ConfigStore,
    rollback: Rollback,
    *,
    reason: str = "",
    allow_custom: bool = False,
    allow_running_brokers: bool = False,
    label: str | None = None,
) -> writer.AlterResult:
    """Write the rollback, checked against the version it was prepared from (:class:`Conflict` when
    the entity moved since: nothing written)."""
    label = label if label is not None else rollback.entity.label
    current = rollback.current
    try:
        return writer.alter(
            store,
            rollback.entity,
            rollback.change,
            if_version=current.version,
            allow_custom=allow_custom,
            reason=recorded_reason(rollback.to_version, reason),
            allow_running_brokers=allow_running_brokers,
        )
    except Conflict:
        raise Conflict(
            f"{label} changed while rolling back (it was at version {current.version} when the diff "
            "was shown); nothing written; run rollback again"
        ) from None
