"""What follows each batch the listener applies, beside the manager: its side tasks.

The applied log records the batch (:mod:`configctl.listener.appliedlog`), the observer is asked
whether the real broker agrees (:mod:`configctl.listener.observed`), and the batch is published:
the snapshot first, then the state node, with the fleet record riding in the state node's write
when it is due (:mod:`configctl.listener.state`). None of them may stall the listener: once it
runs, a failure is logged once per reason, counted, and retried after the next step.

:class:`SideTasks` is the one interface the change handler
(:class:`~configctl.listener.changehandler.ConfigChangeHandler`) is given for all of them. Its
methods run on the listener's worker thread, except :meth:`SideTasks.observer_changed` (the
observer's thread); the two publish one at a time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from configctl.entities import Entity
from configctl.errors import ConfigctlError, one_line, printable
from configctl.listener.appliedlog import AppliedLog
from configctl.listener.manager import DynamicConfigManager
from configctl.listener.metrics import ListenerMetrics
from configctl.listener.observed import Observer
from configctl.listener.records import BatchResult, RawNotification
from configctl.listener.state import FleetRecorder, SnapshotWriter, StatePublisher
from configctl.precedence import EffectiveValue
from configctl.sources import DYNAMIC_BROKER_SOURCES

log = logging.getLogger("configctl.listener")

OLD_VALUES_LIMIT = 1_000
"""A batch of at most this many entities logs each changed key's old effective value too (resolved
before the batch applies); a bigger one (a bulk apply) logs the new values only."""


class SideTasks:
    """The side tasks of one broker's listener; see the module docstring.

    ``state`` builds the state node's document; ``published`` is notified after every
    publication (whoever waits for a change waits on it); ``on_state_published`` is told the
    change each state node written says.
    """

    def __init__(
        self,
        manager: DynamicConfigManager,
        *,
        publisher: StatePublisher,
        fleet_record: FleetRecorder,
        snapshot: SnapshotWriter | None,
        applied_log: AppliedLog | None,
        observer: Observer | None,
        metrics: ListenerMetrics,
        state: Callable[[], dict[str, Any]],
        published: threading.Condition,
        on_state_published: Callable[[int], None],
    ) -> None:
        self.manager = manager
        self.publisher = publisher
        self.fleet_record = fleet_record
        self.snapshot = snapshot
        self.applied_log = applied_log
        self.observer = observer
        self.metrics = metrics
        self._state = state
        self._published = published
        self._on_state_published = on_state_published
        self.started = False
        """The initial load is done: a publish failure is no longer fatal, and the fleet record
        rides in the state node's writes."""
        self.error_counts: dict[str, int] = {}
        """Failures per side task (``snapshot``, ``state node``, ``fleet record``, ``applied log``)."""
        self._errors: dict[str, str] = {}  # what failed last per side task
        self._publish_lock = threading.Lock()  # the worker and the observer both publish
        self._publish_pending = False  # the last state node write failed
        self._unpublished = False  # applied batches not yet in the snapshot and the state node

    # ------------------------------------------------------------------------------ each batch

    def old_values(self, entities: Sequence[Entity]) -> dict[str, dict[str, EffectiveValue]]:
        """The effective config of each entity a batch is about to change (its applied log's old
        values); nothing for a batch too big to resolve twice, or without an applied log."""
        if self.applied_log is None or len(entities) > OLD_VALUES_LIMIT:
            return {}
        before: dict[str, dict[str, EffectiveValue]] = {}
        for entity in entities:
            try:
                before[entity.path] = self.manager.effective(entity)
            except ConfigctlError:
                continue
        return before

    def append_to_applied_log(
        self,
        result: BatchResult,
        old_values: Mapping[str, Mapping[str, EffectiveValue]],
        *,
        full_load: bool = False,
    ) -> None:
        """Append the batch to the applied log; a full disk is a side error, never a stall."""
        if self.applied_log is None:
            return
        up_to = None
        loaded = None
        if full_load:
            up_to = self.manager.last_applied_change
            loaded = {
                name: value
                for name, value in self.manager.broker_config().items()
                if value.source in DYNAMIC_BROKER_SOURCES
            }
        try:
            self.applied_log.batch(result, old_values, full_load=full_load, up_to=up_to, loaded=loaded)
            self.task_succeeded("applied log")
        except OSError as exc:
            self.task_failed("applied log", exc, f"cannot append to {self.applied_log.path}")

    def hand_to_observer(self, result: BatchResult) -> None:
        """Hand what was just applied, and the change the model is now at, to the observer (beside
        a real broker) before the state is published, so no state node says "observed" for a
        change the broker was not asked about yet; never waits."""
        if self.observer is not None:
            self.observer.observe(
                [(a.entity_path, a.change_number, [k.name for k in a.keys]) for a in result.applied],
                self.manager.last_applied_change,
            )

    def record_applied(self, notifications: Sequence[RawNotification]) -> None:
        """A batch of notifications is applied (in memory): its latency is measured now; the
        snapshot and the state node follow in :meth:`publish_applied`, once per run of batches."""
        self.metrics.observe([n.ctime_ms for n in notifications])
        self._unpublished = True

    # ------------------------------------------------------------------------------ publishing

    def publish_applied(self) -> None:
        """Snapshot first, then the state node: the node never claims more than the snapshot holds.

        Neither may stall the listener: once it runs, a failure is logged once and retried after
        the next step. During the initial load a state node it may not write fails the start.
        The fleet record, when due, rides in the state node's write (:class:`StatePublisher`).
        """
        self._unpublished = False
        if self.snapshot is not None:
            try:
                self.snapshot.write(self.manager.snapshot_lines())
                self.task_succeeded("snapshot")
            except OSError as exc:
                self.task_failed("snapshot", exc, f"cannot write snapshot {self.snapshot.path}")
        self._publish(raise_errors=not self.started, with_record=self.started)
        with self._published:
            self._published.notify_all()

    def retry_state_node(self) -> None:
        """Every step ends here: a state node that could not be written is tried again."""
        if self._publish_pending and not self._unpublished:
            self._publish(raise_errors=False)

    def observer_changed(self) -> None:
        """The observer's verdict moved: log what the broker reported, then publish."""
        if self.applied_log is not None and self.observer is not None:
            try:
                self.applied_log.observed(self.observer.problems())
                self.task_succeeded("applied log")
            except OSError as exc:
                self.task_failed("applied log", exc, f"cannot append to {self.applied_log.path}")
        self._publish(raise_errors=False)

    def republish(self) -> None:
        """Something the state node shows besides the applied changes moved (Kafka's registration):
        the state node, and the fleet record (which keeps the listener's kind), now."""
        self._publish(raise_errors=False)
        self.fleet_record.update(force=True)

    def _publish(self, *, raise_errors: bool, with_record: bool = False) -> None:
        """Write the state node; with ``with_record``, the fleet record too when it is due (in the
        same transaction), else it is left to the record's own throttle."""
        record = self.fleet_record.due() if with_record else None
        change = self.manager.last_applied_change
        together = False
        try:
            with self._publish_lock:
                together = self.publisher.publish(
                    self._state(), also=(self.fleet_record.path, record[1]) if record is not None else None
                )
        except ConfigctlError as exc:
            self._publish_pending = True
            if raise_errors:
                raise
            self.task_failed("state node", exc, f"cannot publish {self.publisher.path}")
        else:
            self._publish_pending = False
            self.task_succeeded("state node")
            self._on_state_published(change)
        if record is not None and together:
            self.fleet_record.wrote(record[0])
            self.task_succeeded("fleet record")
        elif record is not None:  # due, and the transaction could not carry it: alone
            self.fleet_record.update()
        elif with_record:
            self.fleet_record.later()

    # ------------------------------------------------------------------------------ failures

    def task_failed(self, task: str, exc: BaseException, what: str | None = None) -> None:
        """A side task (snapshot, state node, fleet record, applied log) failed: logged once per
        reason, counted."""
        reason = one_line(exc)
        self.error_counts[task] = self.error_counts.get(task, 0) + 1
        if self._errors.get(task) != reason:
            log.warning("%s (will retry): %s", printable(what or f"{task} failed"), printable(reason))
        self._errors[task] = reason

    def task_succeeded(self, task: str) -> None:
        """A side task worked: if it had failed, say it is written again."""
        if self._errors.pop(task, None) is not None:
            log.info("%s written again", task)
