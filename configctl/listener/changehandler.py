"""How one broker's listener follows ``/config``: the :class:`ChangeHandler` the notification
listener drives (:mod:`configctl.listener.notification_listener`).

It reads the config nodes a full load or a batch of notifications calls for, through
:class:`configctl.zk.configtree.ConfigTree`, has the manager apply them
(:class:`~configctl.listener.manager.DynamicConfigManager`), and hands what was applied to the
listener's side tasks (:class:`~configctl.listener.sidetasks.SideTasks`: the applied log, the
observer, the snapshot, the state node and the fleet record).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from configctl.entities import CONFIG_ROOT, DEFAULT, DOT_NAMES, Entity, EntityType, entities_of
from configctl.errors import InvalidInput, one_line
from configctl.gcpause import collector_paused
from configctl.handlers import handler_for
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.records import EntityRead, RawNotification
from configctl.listener.sidetasks import SideTasks
from configctl.zk.configtree import ConfigTree, Data
from configctl.zk.session import ZkSession

log = logging.getLogger("configctl.listener")

LOAD_CHUNK = 5_000
"""A full load reads (and applies) this many entity nodes at a time."""
RECHECK_LIMIT = 100_000
"""Entities the periodic re-check compares at most (those changed since the last one; past it,
the longest unchanged are left out)."""


class ConfigChangeHandler:
    """Connects the notification listener to the manager and the side tasks; reads ``/config``
    through :class:`configctl.zk.configtree.ConfigTree`.

    Reads never fail as a whole for one bad node: a node the listener may not read comes back as
    that entity's ``unreadable`` problem, and everything else is applied. A directory it may not
    list is unreadable too; what it knows below it (configs in force, entities with a problem)
    is then read one by one, so those entities are still retried on every full load.

    What each notification applied is remembered until the next periodic re-check, which
    compares it with what ZooKeeper holds (:meth:`verify`).
    """

    def __init__(self, session: ZkSession, manager: DynamicConfigManager, side_tasks: SideTasks) -> None:
        self.tree = ConfigTree(session)
        self.manager = manager
        self.side_tasks = side_tasks
        self._initial = True
        # entity -> (the change credited, the hash of the bytes applied: None when absent), for the
        # next re-check (a hash, not the bytes: a bulk change must not hold every node twice)
        self._applied: dict[Entity, tuple[int | None, int | None]] = {}

    def load_all(self, up_to: int | None) -> None:
        started = time.perf_counter()
        self._applied.clear()  # everything is read below, after the listing
        with collector_paused():  # everything built here stays alive: collections find nothing
            entities, invalid, unreadable = self._list_entities()
            listed = time.perf_counter()
            result = self.manager.reconcile(
                self._read_all(entities), up_to, initial=self._initial, invalid=invalid, unreadable=unreadable
            )
        applied = time.perf_counter()
        self.side_tasks.append_to_applied_log(result, {}, full_load=True)
        if not self._initial:  # the initial load's broker layers are observed once started
            self.side_tasks.hand_to_observer(result)
        self.side_tasks.publish_applied()
        log.info(
            "full load of %d entities took %.0f ms (listing %.0f ms, reading and applying %.0f ms, "
            "snapshot and state %.0f ms)",
            len(entities),
            (time.perf_counter() - started) * 1000,
            (listed - started) * 1000,
            (applied - listed) * 1000,
            (time.perf_counter() - applied) * 1000,
        )
        self._initial = False

    def process(self, notifications: Sequence[RawNotification], changed: Mapping[str, Any]) -> None:
        """Apply a batch; it is published by :meth:`flush`, which the notification listener calls
        once the notifications at hand are applied (or a short bound has passed). Entities whose
        node is in ``changed`` (read after these notifications were made) are not read again."""
        plan = self.manager.plan(notifications)
        entities = [entity for entity, _ in plan]
        reads = list(self._reads(entities, [n for _, n in plan], self.tree.read(entities, known=changed)))
        old_values = self.side_tasks.old_values(entities)
        result = self.manager.apply(reads, notifications[-1].number)
        self._remember(reads)
        self.side_tasks.append_to_applied_log(result, old_values)
        self.side_tasks.hand_to_observer(result)
        self.side_tasks.record_applied(notifications)

    def flush(self) -> None:
        self.side_tasks.publish_applied()

    def verify(self, applied_zxid: int | None) -> None:
        """The periodic re-check: each entity a notification applied since the last one is read
        again (one round trip), and where ZooKeeper holds other bytes than were applied, and its
        last write is no newer than the newest notification applied (``applied_zxid``: every
        change it may reflect is applied, so it must be in force as it is), it is applied again,
        credited to the entity's change. A node written since is left for its own notification
        (and compared at the next re-check)."""
        applied = self._applied
        if not applied or applied_zxid is None:
            return
        entities = list(applied)
        repairs: list[EntityRead] = []
        for entity, (data, zxid) in zip(entities, self.tree.stamped(entities), strict=True):
            number, was = applied[entity]
            if isinstance(data, Exception) or zxid is None or _digest(data) == was:
                del applied[entity]  # as applied, or nothing to tell it by
            elif zxid <= applied_zxid:
                del applied[entity]
                repairs.append(EntityRead(entity, data, number))
            # else: written since the newest notification applied: its own brings it (compared next time)
        if not repairs:
            return
        for read in repairs:
            log.warning(
                "re-check: %s differed from what ZooKeeper holds for change %s; applying ZooKeeper's",
                read.entity.path,
                read.change_number,
            )
        old_values = self.side_tasks.old_values([read.entity for read in repairs])
        result = self.manager.apply(repairs, None)
        self.side_tasks.append_to_applied_log(result, old_values)
        self.side_tasks.hand_to_observer(result)
        self.side_tasks.publish_applied()

    def _remember(self, reads: Sequence[EntityRead]) -> None:
        """What each read applied, for the next re-check (the newest :data:`RECHECK_LIMIT`)."""
        applied = self._applied
        for read in reads:
            if read.error is None:
                applied.pop(read.entity, None)
                applied[read.entity] = (read.change_number, _digest(read.data))
        for entity in list(itertools.islice(applied, max(0, len(applied) - RECHECK_LIMIT))):
            del applied[entity]

    def present(self, names: set[str]) -> None:
        self.manager.notifications_present(names)
        self.side_tasks.retry_state_node()

    def bad_notification_name(self, name: str) -> None:
        self.manager.bad_notification_name(name)

    @staticmethod
    def _reads(
        entities: Sequence[Entity], numbers: Sequence[int | None], found: Sequence[Data]
    ) -> Iterator[EntityRead]:
        for entity, number, data in zip(entities, numbers, found, strict=True):
            if isinstance(data, Exception):
                yield EntityRead(entity, None, number, error=one_line(data))
            else:
                yield EntityRead(entity, data, number)

    def _read_all(self, entities: list[Entity]) -> Iterator[EntityRead]:
        """Read in chunks applied as they arrive: 100,000 raw nodes are never held at once. The
        next chunk is asked for once this one is applied (:meth:`ZkSession.iter_many` says why;
        asking earlier measured within 2% again)."""
        done = 0
        for found in self.tree.read_chunks(entities, LOAD_CHUNK):
            part = entities[done : done + len(found)]
            done += len(found)
            yield from self._reads(part, [None] * len(part), found)

    def _list_entities(self) -> tuple[list[Entity], dict[str, str], dict[str, str]]:
        """Every entity node a broker follows (users nest clients), the nodes that name no entity,
        and the directories that could not be listed.

        A type directory the listener may not list (``/config/users`` under Kafka's ACLs without
        the right credentials) is reported as unreadable; the other types still load.
        """
        types = list(EntityType)
        roots = self.tree.list_types(types)
        entities: list[Entity] = []
        invalid: dict[str, str] = {}
        unreadable: dict[str, str] = {}
        users: list[str] = []
        for etype, names in zip(types, roots, strict=True):
            if isinstance(names, Exception):
                unreadable[etype.value] = f"cannot list {CONFIG_ROOT}/{etype.value}: {one_line(names)}"
                self._known(f"{etype.value}/", entities, invalid)
                continue
            handler = handler_for(etype)
            if handler.known_by_node:  # stored by their plain names (topics): checked, not parsed
                self._plain(etype, names or (), entities, invalid)
                continue
            broker_id = self.manager.broker_id
            for name in names or ():
                if etype.nests_clients:
                    users.append(name)
                # asked on the name alone: another broker's node is skipped before it is parsed
                if not handler.follows(Entity(etype, name), broker_id):
                    continue
                self._entity(f"{etype.value}/{name}", entities, invalid)
        if users:
            nested = self.tree.list_clients(users)
            for user, clients in zip(users, nested, strict=True):
                if isinstance(clients, Exception):
                    where = f"users/{user}/clients"
                    unreadable[where] = f"cannot list {CONFIG_ROOT}/{where}: {one_line(clients)}"
                    self._known(f"{where}/", entities, invalid)
                    continue
                for client in clients or ():
                    self._entity(f"users/{user}/clients/{client}", entities, invalid)
        return entities, invalid, unreadable

    def _known(self, prefix: str, entities: list[Entity], invalid: dict[str, str]) -> None:
        present = {e.path for e in entities}
        for path in self.manager.known_paths(prefix):
            if path not in present:
                self._entity(path, entities, invalid)

    @classmethod
    def _plain(
        cls, etype: EntityType, names: Iterable[str], entities: list[Entity], invalid: dict[str, str]
    ) -> None:
        """Node names stored as they are (topics) as entities: checking the name is all the parsing
        there is (100,000 of them at 2 µs each instead of 7), and a listing of valid topic names
        is checked at once (:func:`~configctl.entities.entities_of`)."""
        listed = names if isinstance(names, list) else list(names)
        valid = entities_of(etype, listed)
        if valid is not None:
            entities.extend(valid)
            return
        append = entities.append
        for name in listed:
            if name in ("", *DOT_NAMES, DEFAULT):
                cls._entity(f"{etype.value}/{name}", entities, invalid)  # refused, with from_path's reason
                continue
            try:
                append(Entity.of(etype, name))
            except InvalidInput as exc:
                invalid[f"{etype.value}/{name}"] = str(exc)

    @staticmethod
    def _entity(path: str, entities: list[Entity], invalid: dict[str, str]) -> None:
        try:
            entities.append(Entity.from_path(path))
        except InvalidInput as exc:
            invalid[path] = str(exc)


def _digest(data: Data) -> int | None:
    """What the re-check compares a node's bytes by (None: absent)."""
    return None if data is None else hash(data)
