"""``configctl migration carry``: what configctl keeps in ZooKeeper, taken across to the KRaft cluster.

ZooKeeper goes at the end of a migration, and with it everything configctl kept there. Two things
are worth keeping: every history record (who changed what, when and why), and every rollout's
record (``rollout list``, ``rollout show``: what each canary or wave did). The KRaft cluster keeps
both in topics of its own (the history topic, the rollout topic), and carrying them there is what
lets ``history``, ``blame``, ``--at`` and ``rollout show`` answer across the migration.

The listeners' applied logs (what each broker ran, as its listener logged it) are files in each
listener's state directory, not in ZooKeeper: they outlive it where they are, and
``--applied-log`` reads them on either side of the migration. Given to ``carry --applied-log``,
they are carried into the cluster too, so ``--at``, ``blame`` and ``diff`` read them from the
cluster alone, with no state directory at hand.

A rollout still open (preparing, running, stopped or aborting) is not carried: its undo holds the
exact bytes of ZooKeeper nodes, which mean nothing to the KRaft side, and its process writes
through ZooKeeper. Nor is one whose record cannot be read (it counts as open, as on ZooKeeper).
Either refuses the whole carry in one line, before anything is sent: finish or abort it first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from configctl import applied
from configctl.errors import InvalidInput, one_line
from configctl.rollout.record import Listed, Loaded
from configctl.travel.past import applied_records
from configctl.znodes import HistoryRecord


def in_time_order(grouped: Iterable[Sequence[HistoryRecord]]) -> list[HistoryRecord]:
    """Every entity's history records as one list, oldest first (as they are appended)."""
    return sorted((r for records in grouped for r in records), key=lambda r: (r.time_ms, r.entity_path))


def finished_rollouts(listed: Sequence[Listed], load: Callable[[str], Loaded]) -> list[Loaded]:
    """Every rollout ``listed``, loaded, oldest first; :class:`InvalidInput` (nothing carried) when
    one is still open or cannot be read."""
    for item in listed:
        if item.record is None:
            raise InvalidInput(
                f"rollout {item.id}'s record cannot be read ({one_line(item.problem or 'no record', 120)}): end "
                f"it with `configctl rollout abort --force {item.id}` before carrying; nothing was carried"
            )
        if item.record.open:
            raise InvalidInput(
                f"rollout {item.id} is {item.record.state}: finish it (`configctl rollout resume {item.id}`) or "
                f"end it (`configctl rollout abort {item.id}`) before carrying; nothing was carried"
            )
    return [
        load(item.id) for item in sorted(listed, key=lambda i: (i.record.created_ms if i.record else 0, i.id))
    ]


@dataclass(frozen=True)
class AppliedLogs:
    """The applied logs in some state directories: each broker's record count, every copy checked."""

    state_dirs: tuple[str | Path, ...] = ()
    records: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.records.values())

    def each(self) -> Iterator[list[applied.Record]]:
        """Each broker's log, read again, one broker at a time (a fleet's logs need not fit in memory)."""
        for broker in sorted(self.records):
            yield applied_records(broker, self.state_dirs) or []


def applied_logs(state_dirs: Sequence[str | Path]) -> AppliedLogs:
    """Every broker's applied log in ``state_dirs`` (``--applied-log``: state directories or their
    ``applied/``), each read once now as ``--at`` reads it (a copy given twice read once, two
    copies that disagree refused), so a carry refuses before it sends anything; a directory
    that is not there or holds no applied log is one line."""
    brokers: set[int] = set()
    for place in state_dirs:
        try:
            found = applied.segments(place) if Path(place).is_dir() else {}
        except OSError as exc:
            raise InvalidInput(f"--applied-log {place}: cannot read it ({exc.strerror or exc})") from None
        if not found:
            raise InvalidInput(
                f"--applied-log {place}: no applied log there (a listener's --state-dir holds one)"
            )
        brokers |= set(found)
    given = tuple(state_dirs)
    return AppliedLogs(
        given, {broker: len(applied_records(broker, given) or ()) for broker in sorted(brokers)}
    )


__all__ = ["AppliedLogs", "applied_logs", "finished_rollouts", "in_time_order"]
