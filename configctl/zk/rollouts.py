"""Rollout records in ZooKeeper: created with their claims, loaded back, and moved on one multi at a time.

:class:`ZooKeeperRollouts` is ZooKeeper's :class:`configctl.store.Rollouts` (``store.rollouts``):
this module is its face, and each idea lives in a module of its own:

* :mod:`configctl.zk.rolloutrecords`: a record read back whole (plan, undo chunks, owner), the
  listing, the finished ones trimmed;
* :mod:`configctl.zk.rolloutsalvage`: what can be read of a damaged one (``rollout abort --force``);
* :mod:`configctl.zk.rolloutclaims`: which rollout claims an entity, and the refusal naming it;
* :mod:`configctl.zk.rolloutcreate`: a new rollout recorded (record, plan, claims, owner) before
  anything is written;
* :mod:`configctl.zk.activerollout`: a rollout this process moves on, every multi version-checked
  on its record (the guarantees docs/rollout.md promises are stated there);
* :mod:`configctl.rollout.restore`: what to write in which multi, and how an undo goes back,
  decided without I/O.

Every multi goes through the store's own commit (``extra`` nodes beside the entity writes), so
whatever plays the store's writes (ZooKeeper's multi, or the Admin API's for running brokers)
writes a rollout's entities too; the rollout's own nodes are read through the ZooKeeper session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from configctl.rollout import record as rec
from configctl.rollout.record import Listed, Loaded, Planned, Record
from configctl.store import ConfigStore
from configctl.zk import rolloutrecords
from configctl.zk.activerollout import ZooKeeperActiveRollout
from configctl.zk.rolloutcreate import open_rollout
from configctl.zk.rolloutsalvage import salvage
from configctl.zk.session import ZkSession
from configctl.znodes import RolloutZNode


class ZooKeeperRollouts:
    """The rollout records beside one ZooKeeper store (its :attr:`~configctl.store.ConfigStore.rollouts`).

    ``store`` is the store the rollouts' multis go through; ``session`` is the ZooKeeper session
    their records, claims and owners are read through.
    """

    def __init__(self, store: ConfigStore, session: ZkSession) -> None:
        self.store = store
        self.session = session

    def record(self, rollout_id: str) -> tuple[Record, int] | None:
        return rolloutrecords.read_record(self.session, rollout_id)

    def load(self, rollout_id: str) -> Loaded:
        return rolloutrecords.load(self.session, rollout_id)

    def salvage(self, rollout_id: str) -> Loaded:
        return salvage(self.session, rollout_id)

    def listing(self) -> list[Listed]:
        return rolloutrecords.listing(self.session)

    def after_abort(self, rollout_id: str, current: Record | None, timeout: float = 15.0) -> Record | None:
        return rolloutrecords.after_abort(self.session, rollout_id, current, timeout)

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
    ) -> ZooKeeperActiveRollout:
        return open_rollout(
            self.store,
            self.session,
            planned,
            kind=kind,
            reason=reason,
            options=options,
            waves=waves,
            step=step,
            summary=summary,
            entities=entities,
            canary=canary,
        )

    def resume(self, loaded: Loaded) -> ZooKeeperActiveRollout:
        return ZooKeeperActiveRollout(self.store, self.session, loaded)

    def watch(self, rollout_id: str, on_version: Callable[[int | None], bool]) -> None:
        """Call ``on_version`` with the record's version (None: removed) now and at every change,
        until it returns False (a ZooKeeper data watch the caller does not wait for)."""

        def on_data(data: bytes | None, stat: Any, event: Any = None) -> bool:
            return on_version(None if stat is None else stat.version)

        self.session.watch_data(RolloutZNode.path(rollout_id), on_data)
