"""The problem book: what one broker could not apply, each problem kept until its cause clears.

Nothing stalls the manager's loop: a change it cannot apply is a problem here, and the next
change applies. A problem is kept one per kind, entity (or notification node) and key, so the
book is bounded by what exists. It is recorded at once (queries and the next state node see it),
logged once (one line, escaped) and counted once; it clears when its entity next applies cleanly
or is gone from ZooKeeper, or when its notification node is purged. The state node publishes the
newest :data:`MAX_REPORTED` of them, and beside them the config the broker kept for the newest
:data:`IN_FORCE_LIMIT` of their entities (docs/reference/state-and-fleet-nodes.md).

The book shares the manager's lock, so a query sees the problems and the configs in force of
one moment. Like the manager's, its mutating methods are called from one thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from configctl import catalogue
from configctl.entities import Entity
from configctl.errors import ConfigctlError, one_line, printable
from configctl.handlers import BrokerView, FamilyHandler
from configctl.handlers.base import Problem
from configctl.listener.records import BatchResult
from configctl.secrets import mask_config

log = logging.getLogger("configctl.listener")

MAX_REPORTED = 1000
"""At most this many problems are published (the newest), with ``problems_omitted`` saying how many
more there are. Every problem is kept until its cause clears (one per entity, key and kind, so
they are bounded by what exists), so an older one is published again as newer ones clear."""

IN_FORCE_LIMIT = 200
"""At most this many entities' configs in force are published beside their problems."""

LOGGED_LIMIT = 100_000
"""The memory of problems already logged is forgotten at this size (they are logged again)."""

ProblemKey = tuple[str, str | None, str | None]
"""A problem's place in the book: its kind, its entity path (or notification node) and its key."""


class ProblemBook:
    """The problems one broker holds, oldest first; see the module docstring.

    ``lock`` is the manager's (queries read the book with the configs in force); ``counters``
    the manager's published counters, where a problem first logged counts toward
    ``<kind>_problems``; ``now_ms`` stamps each problem with when it was recorded.
    """

    def __init__(self, lock: threading.RLock, counters: dict[str, int], now_ms: Callable[[], int]) -> None:
        self._lock = lock
        self._counters = counters
        self._now_ms = now_ms
        self.entries: dict[ProblemKey, Problem] = {}
        """Every problem held, oldest first (one recorded again moves to the end)."""
        self._paths: frozenset[str | None] | None = None  # the entity paths of entries; None: stale
        self._logged: set[tuple[str, str | None, str | None, str]] = set()
        self._layer_changes: dict[str, int | None] = {}  # layer path -> change that last wrote it

    # ------------------------------------------------------------------------------ recording

    def report(self, problem: Problem, result: BatchResult | None = None) -> None:
        """Record a problem: published at once, logged (one line, escaped) and counted once."""
        stamped = Problem(
            problem.kind,
            problem.entity_path,
            problem.change_number,
            problem.reason,
            problem.name,
            problem.plugin,
            problem.notification,
            self._now_ms(),
        )
        seen = (problem.kind, problem.entity_path or problem.notification, problem.name, problem.reason)
        if seen not in self._logged:
            if len(self._logged) >= LOGGED_LIMIT:  # bound the memory of "already logged"
                self._logged.clear()
            self._logged.add(seen)
            self._counters[f"{problem.kind}_problems"] += 1
            where = problem.entity_path or problem.notification or "?"
            if problem.name:
                where += f" {problem.name}"
            by = f" (plugin {problem.plugin})" if problem.plugin else ""
            log.warning(
                "%s",
                printable(
                    f"{problem.kind}: {where} (change {problem.change_number}){by}: {one_line(problem.reason)}; "
                    "the previous config stays in force"
                ),
            )
        with self._lock:
            key = (problem.kind, problem.entity_path or problem.notification, problem.name)
            self.entries.pop(key, None)
            self.entries[key] = stamped
            self._paths = None
        if result is not None:
            result.problems.append(stamped)

    def settle(
        self,
        handler: FamilyHandler,
        entity: Entity,
        number: int | None,
        admitted: Sequence[Problem],
        view: BrokerView,
        result: BatchResult,
    ) -> None:
        """The entity applied: drop its old problems, keep what still does not take effect
        (``admitted``: what its handler screened out; for a broker layer, the keys ``view``
        ignores, stamped with the change that last wrote each layer)."""
        path = entity.path
        with self._lock:
            if path in self._entity_paths():
                for key in [k for k in self.entries if k[1] == path]:
                    del self.entries[key]
                self._paths = None
            if handler.layered:
                self._layer_changes[path] = number
        for problem in admitted:
            self.report(problem, result)
        if handler.layered:
            for problem in handler.ignored(view, self._layer_changes):
                if problem.entity_path == path:
                    self.report(problem, result)

    def _entity_paths(self) -> frozenset[str | None]:
        """The entity paths that have problems (under the lock): applying 100,000 entities asks
        this for each, and must not scan up to 1,000 problems every time."""
        if self._paths is None:
            self._paths = frozenset(k[1] for k in self.entries)
        return self._paths

    # ------------------------------------------------------------------------------ clearing

    def forget_notifications_except(self, present: set[str]) -> None:
        """Forget problems of notification nodes not in ``present`` (purged): they can never apply."""
        with self._lock:
            for key in [
                k for k, p in self.entries.items() if p.notification and p.notification not in present
            ]:
                del self.entries[key]
                self._paths = None

    def forget_entities_except(self, keep: set[str]) -> None:
        """Forget problems of entities not in ``keep``: their node is gone from ZooKeeper."""
        with self._lock:
            for key in [k for k, p in self.entries.items() if p.entity_path and p.entity_path not in keep]:
                del self.entries[key]
                self._paths = None

    # ------------------------------------------------------------------------------ queries

    def problems(self) -> list[Problem]:
        """What this broker could not apply, oldest first."""
        with self._lock:
            return list(self.entries.values())

    def paths_below(self, prefix: str | tuple[str, ...]) -> set[str]:
        """The entity paths with a problem below ``prefix`` (one, or any of several); asked by the
        manager under its lock, or from the one thread that changes the book."""
        return {
            p.entity_path for p in self.entries.values() if p.entity_path and p.entity_path.startswith(prefix)
        }

    def published(self, configs: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        """The state node's ``problems``, ``problems_omitted`` and ``in_force``, from ``configs``
        (the configs in force, read under the lock)."""
        with self._lock:
            return {
                "problems": [p.to_json() for p in list(self.entries.values())[-MAX_REPORTED:]],
                "problems_omitted": max(0, len(self.entries) - MAX_REPORTED),
                "in_force": self._in_force(configs),
            }

    def _in_force(self, configs: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
        """What this broker runs for each entity it has a problem with (the config it kept when it
        refused a change; {} when it holds none), secrets masked: ``describe --effective`` shows
        it in place of the stored config, which the broker does not run. The newest
        :data:`IN_FORCE_LIMIT` entities, so the state node stays bounded."""
        paths = list(dict.fromkeys(p.entity_path for p in self.entries.values() if p.entity_path))
        found = {}
        for path in paths[-IN_FORCE_LIMIT:]:
            try:
                entity_type = Entity.from_path(path).type
            except ConfigctlError:
                continue
            config = configs.get(path, {})
            found[path] = mask_config(
                dict(config), lambda name, t=entity_type: catalogue.is_sensitive(t, name)
            )
        return found
