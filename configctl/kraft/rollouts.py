"""Rollout records in a KRaft cluster: opened, loaded back, listed and followed from the rollout topic.

:class:`KRaftRollouts` is a KRaft cluster's :class:`configctl.store.Rollouts` (``store.rollouts``),
so canaries and waves run there as on ZooKeeper. The record's versions and who wins a race are
:mod:`configctl.kraft.rolloutlog`'s; moving one on is :mod:`configctl.kraft.activerollout`'s.

**Claims.** ZooKeeper creates a claim node per entity in the multi that creates the record, so of
two racing rollouts exactly one gets them. Here the log decides instead: a rollout is refused
when an open one already holds one of its entities, and of two that open at the same moment
holding the same entity, the one whose first version is earlier in the log keeps it; the other
closes itself (aborted, nothing written) and is refused (:class:`Conflict`).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from configctl.errors import Conflict, InvalidInput, NotFound
from configctl.kraft import rolloutlog
from configctl.kraft.activerollout import KRaftActiveRollout, owner_alive, owner_document
from configctl.kraft.rolloutlog import Chain
from configctl.kraft.rollouttopic import RolloutTopic
from configctl.rollout import record as rec
from configctl.rollout.opening import (
    busy_message,
    holder_text,
    new_record,
    unreadable,
    unreadable_holder_text,
)
from configctl.rollout.record import Listed, Loaded, Planned, Record
from configctl.store import ActiveRollout, ConfigStore

SETTLE_PAUSE = 0.25
"""Between two reads of a record while another process finishes an abort."""
WATCH_EVERY = 1.0
"""How often :meth:`KRaftRollouts.watch` reads the log (Kafka calls nobody back)."""


class KRaftRollouts:
    """The rollout records of one KRaft cluster; ``store`` is what their entity writes go through."""

    def __init__(self, store: ConfigStore, topic: RolloutTopic) -> None:
        self.store = store
        self.topic = topic

    def record(self, rollout_id: str) -> tuple[Record, int] | None:
        chain = self.topic.chain(rollout_id)
        if chain is None or chain.current is None:
            if chain is not None and chain.problem:
                raise InvalidInput(chain.problem)
            return None
        return chain.current.record, chain.current.version

    def load(self, rollout_id: str) -> Loaded:
        chain = self._chain(rollout_id)
        if chain.problem or chain.current is None:
            raise unreadable(rollout_id, chain.problem or "no readable version")
        return _live_owner(chain.current.loaded())

    def salvage(self, rollout_id: str) -> Loaded:
        """The newest readable version, with why a newer one could not be read (``rollout abort --force``)."""
        chain = self._chain(rollout_id)
        if chain.current is None:
            raise unreadable(rollout_id, chain.problem or "no readable version")
        loaded = _live_owner(chain.current.loaded())
        if chain.problem:
            loaded.problems.append(f"a newer version than {chain.current.version}: {chain.problem}")
        return loaded

    def listing(self) -> list[Listed]:
        """Every rollout with a record, newest first."""
        found = []
        for rollout_id, chain in sorted(self.topic.chains().items(), reverse=True):
            current = chain.current
            if chain.problem and current is None:
                found.append(Listed(rollout_id, None, None, chain.problem))
            elif current is not None:
                found.append(current.listed())
        return found

    def to_carry(self, loaded: Sequence[Loaded]) -> list[rolloutlog.Document]:
        """The documents that carry ``loaded`` (finished rollouts kept elsewhere) into the rollout
        topic, each encoded once to check its size: one already here with the same record is
        carried already and left out; one here with another record is refused in one line,
        before anything is sent."""
        found = self.topic.chains()
        documents = []
        for item in loaded:
            rollout_id = item.record.id
            chain = found.get(rollout_id)
            if chain is not None:
                current = chain.current
                if current is not None and current.record.to_json() == item.record.to_json():
                    continue
                raise Conflict(
                    f"rollout {rollout_id} is in the cluster's rollout topic already with another record: "
                    "nothing was carried"
                )
            document = rolloutlog.carried(item)
            document.encode()  # too large for a record: refused here, before anything is sent
            documents.append(document)
        return documents

    def carry(self, documents: list[rolloutlog.Document]) -> int:
        """Append what :meth:`to_carry` gave; how many were sent."""
        self.topic.append_all(documents)
        return len(documents)

    def after_abort(self, rollout_id: str, current: Record | None, timeout: float = 15.0) -> Record | None:
        deadline = time.monotonic() + timeout
        while current is not None and current.state == rec.ABORTING and time.monotonic() < deadline:
            time.sleep(SETTLE_PAUSE)
            found = self.record(rollout_id)
            current = found[0] if found else None
        return current

    def open(
        self,
        planned: Sequence[Planned],
        *,
        kind: str,
        reason: str,
        options: rec.Options,
        waves: int,
        step: dict[str, Any],
        summary: str,
        entities: tuple[str, ...] = (),
        canary: rec.CanaryPlan | None = None,
    ) -> ActiveRollout:
        """A new rollout recorded before anything is written; refused (nothing written) while an
        open rollout holds one of its entities."""
        record = new_record(
            planned,
            identity=self.store.identity,
            kind=kind,
            reason=reason,
            options=options,
            waves=waves,
            step=step,
            summary=summary,
            entities=entities,
            canary=canary,
        )
        paths = list(dict.fromkeys([*entities, *(p.entity.path for p in planned)]))
        busy = self._busy(self.topic.chains(), paths, None)
        if busy:
            raise Conflict(busy_message(busy))
        document = rolloutlog.first(record, planned, owner_document(self.store.identity))
        found = self.topic.append(document)  # a document too large is refused before it is sent
        active = KRaftActiveRollout(self.store, self.topic, document)
        ours = found.get(record.id)
        rivals = {
            path: holder
            for path, holder in rolloutlog.holders(found, paths, but=record.id).items()
            if ours is None or found[holder].first_offset < ours.first_offset
        }
        if rivals:
            message = busy_message({p: holder_text(found[h].current.record) for p, h in rivals.items()})  # type: ignore[union-attr]
            active.finish(f"aborted: {message}", {"state": rec.ABORTED, "failure": message})
            raise Conflict(f"another rollout claimed its entities at the same moment: {message}")
        return active

    def resume(self, loaded: Loaded) -> ActiveRollout:
        """Move on the rollout as ``loaded`` read it: if it moved since, the first append loses."""
        chain = self._chain(loaded.record.id)
        base = next((d for _, d in chain.accepted if d.version == loaded.version), chain.current)
        if base is None:
            raise unreadable(loaded.record.id, chain.problem or "no readable version")
        if loaded.problems:  # salvaged: what could be read of it, made from the newest readable version
            base = rolloutlog.Document(
                base.id, base.version, base.token, base.base, loaded.record, tuple(loaded.planned),
                tuple(loaded.undo), base.owner,
            )  # fmt: skip
        return KRaftActiveRollout(self.store, self.topic, base)

    def watch(self, rollout_id: str, on_version: Callable[[int | None], bool]) -> None:
        """Call ``on_version`` with the record's version (None: gone) now and whenever it changes,
        until it returns False: the log read every :data:`WATCH_EVERY` seconds by a thread of its
        own (with a reader of its own: the caller's is not shared across threads)."""
        topic = RolloutTopic(
            self.topic.bootstrap, self.topic.command_config, self.topic.timeout, self.topic.brokers
        )

        def follow() -> None:
            seen: int | None = -2
            try:
                while True:
                    chain = topic.chain(rollout_id)
                    version = chain.current.version if chain is not None and chain.current else None
                    if version != seen:
                        seen = version
                        if not on_version(version):
                            return
                    time.sleep(WATCH_EVERY)
            except Exception:  # the watcher gives up quietly, as a ZooKeeper watch does with its session
                return
            finally:
                topic.close()

        threading.Thread(target=follow, name=f"rollout-watch-{rollout_id}", daemon=True).start()

    # -- helpers ------------------------------------------------------------------------------------

    def _chain(self, rollout_id: str) -> Chain:
        chain = self.topic.chain(rollout_id)
        if chain is None:
            raise NotFound(f"no rollout {rollout_id} (configctl rollout list shows the known ones)")
        return chain

    @staticmethod
    def _busy(found: dict[str, Chain], paths: Sequence[str], but: str | None) -> dict[str, str]:
        busy = {}
        for path, holder in rolloutlog.holders(found, paths, but=but).items():
            chain = found[holder]
            current = chain.current
            busy[path] = (
                holder_text(current.record)
                if current is not None and not chain.problem
                else unreadable_holder_text(holder, chain.problem or "no readable version")
            )
        return busy


def _live_owner(loaded: Loaded) -> Loaded:
    """``loaded`` without its owner when that is a process of this host that is gone: KRaft has no
    ephemeral node to vanish with it (a process on another host cannot be checked from here)."""
    owner = loaded.owner
    if owner and owner.get("host") == socket.gethostname() and not owner_alive(owner):
        loaded.owner = None
    return loaded


class RolloutsOnKRaft:
    """Builds a cluster's :class:`KRaftRollouts` once per command (its topic's clients kept until
    :meth:`close`): what :class:`configctl.store.composed.Store` is given as ``rollouts``."""

    def __init__(
        self, bootstrap: str, command_config: Any, timeout: float, brokers: Callable[[], int]
    ) -> None:
        self.bootstrap = bootstrap
        self.command_config = command_config
        self.timeout = timeout
        self.brokers = brokers
        self._built: KRaftRollouts | None = None

    @classmethod
    def of(cls, kraft: Any) -> RolloutsOnKRaft:
        """The rollouts of the cluster ``kraft`` (a :class:`~configctl.kraft.store.KRaftStore`) stands for."""
        return cls(
            kraft.bootstrap, kraft.command_config, kraft.timeout, lambda: len(kraft.running_brokers() or ())
        )

    def __call__(self, store: ConfigStore) -> KRaftRollouts:
        if self._built is None or self._built.store is not store:
            topic = RolloutTopic(self.bootstrap, self.command_config, self.timeout, self.brokers())
            self._built = KRaftRollouts(store, topic)
        return self._built

    def close(self) -> None:
        if self._built is not None:
            self._built.topic.close()
            self._built = None


__all__ = ["KRaftRollouts", "RolloutsOnKRaft"]
