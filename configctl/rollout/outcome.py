"""How a rollout ends, as an exit status: the rules every front end (the CLI, a web console) shares.

A rollout's :class:`~configctl.rollout.steps.Report` says what happened; :func:`raise_for_rollout` turns it
into the error the operator gets (none for a promotion or completion whose fleet applied it),
:func:`raise_for_abort` does the same for ``rollout abort``, and :func:`guarded` says what a
failure that is not the rollout's own verdict means once its record may exist (left open).

Exit statuses (docs/rollout.md): 0 promoted or completed (and, after a promotion,
every live broker applied it; 9 or 10 otherwise, as ``--wait``), 11 aborted with every entity
restored, 12 stopped with the rollout left open (its record says what is left to do).
"""

from __future__ import annotations

from collections.abc import Callable

from configctl import fleet
from configctl.desired.plan import listed
from configctl.errors import ConfigctlError, PartiallyWritten, RolloutAborted, RolloutStuck, one_line
from configctl.rollout import steps
from configctl.rollout.steps import Report

LEFT_OPEN = (3, 4, 8)
"""Exit codes of failures that may leave a recorded rollout open: ZooKeeper lost, refused, or a write cut off."""


def guarded(run: Callable[[], Report]) -> Report:
    """A failure that is not the rollout's own verdict (ZooKeeper lost, Ctrl-C while writing) after the
    record exists: say the rollout is left open, with what to do (exit 12)."""
    try:
        return run()
    except (RolloutAborted, RolloutStuck):
        raise
    except ConfigctlError as exc:
        if exc.exit_code not in LEFT_OPEN:
            raise
        raise RolloutStuck(
            f"{one_line(exc.message)}; if the rollout was recorded it is left open: configctl rollout list "
            "shows it, and abort or resume finishes it"
        ) from None
    except KeyboardInterrupt:
        raise RolloutStuck(
            "interrupted; the rollout is left open: configctl rollout list shows it, and abort or resume "
            "finishes it"
        ) from None


def raise_for_rollout(report: Report) -> None:
    """Raise the error the rollout's outcome earns (nothing when it went out and the fleet applied it)."""
    name = f"rollout {report.id}"
    if report.outcome == steps.ABORTED:
        restored = listed(report.restored) if report.restored else "nothing had been written"
        raise RolloutAborted(
            f"{name} aborted: {report.failure}; every entity it wrote has its previous bytes again ({restored})"
        )
    if report.outcome == steps.STOPPED:
        went = listed(report.went_out) if report.went_out else "nothing"
        not_out = f"; not out: {listed(report.not_out)}" if report.not_out else ""
        raise RolloutStuck(
            f"{name} stopped: {report.failure}; went out: {went}{not_out}; it is left open: "
            f"configctl rollout abort {report.id} restores what went out, resume {report.id} goes on"
        )
    result = report.fleet
    if report.outcome == steps.PROMOTED and result is not None:
        fleet.raise_for_wait(result, None, done=f"{name} promoted the change to brokers/<default>")


def raise_for_abort(report: Report, rollout_id: str) -> None:
    """``rollout abort``'s outcome: nothing to say when it restored everything; exit 12 when it stopped;
    exit 8 when ``--force`` ended a rollout part of whose undo could not be read (named)."""
    if report.outcome == steps.STOPPED:
        raise RolloutStuck(f"rollout {rollout_id} was not aborted: {report.failure}")
    lost = report.extra.get("not_restored") or []
    if report.outcome == steps.ABORTED and lost:
        restored = listed(report.restored) if report.restored else "nothing"
        raise PartiallyWritten(
            f"rollout {rollout_id} is aborted, but part of its undo could not be read: not restored: "
            f"{listed(lost)}; restored to their previous bytes: {restored}",
            committed=report.restored,
            not_committed=lost,
        )
