"""``configctl migration carry``: what configctl keeps in ZooKeeper, taken across to the KRaft cluster.

ZooKeeper goes at the end of a migration, and with it everything configctl kept there. Two things
are worth keeping: every history record (who changed what, when and why), and every rollout's
record (``rollout list``, ``rollout show``: what each canary or wave did). The KRaft cluster keeps
both in topics of its own (the history topic, the rollout topic), and carrying them there is what
lets ``history``, ``blame``, ``--at`` and ``rollout show`` answer across the migration.

A rollout still open (preparing, running, stopped or aborting) is not carried: its undo holds the
exact bytes of ZooKeeper nodes, which mean nothing to the KRaft side, and its process writes
through ZooKeeper. Nor is one whose record cannot be read (it counts as open, as on ZooKeeper).
Either refuses the whole carry in one line, before anything is sent: finish or abort it first.
The listeners' applied logs need no carrying: they are files in each listener's state directory,
not in ZooKeeper, and ``--applied-log`` reads them on either side of the migration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from configctl.errors import InvalidInput, one_line
from configctl.rollout.record import Listed, Loaded
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


__all__ = ["finished_rollouts", "in_time_order"]
