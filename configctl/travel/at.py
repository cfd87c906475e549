"""``describe --effective --broker B <entity> --at T``: the effective config as of T.

The configs of every entity the answer depends on are rebuilt from history
(:mod:`configctl.travel.past`) and handed to the very code that answers for the present
(:func:`configctl.effective.view_from` and the entity family's handler): there is no second copy
of the precedence rules. server.properties is the one the broker's listener publishes now (its
past is not recorded).

Where the broker's applied log covers T, what the broker actually ran is put in place (as the
present's ``describe --effective`` puts a real broker's reported value), the value history gives
is kept beside it as ``"stored"``, and each difference is listed under ``applied_log``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from configctl import applied
from configctl.effective import (
    EffectiveReport,
    broker_static,
    dependencies,
    target_entity,
    view_from,
)
from configctl.entities import Entity
from configctl.handlers import BROKER, BrokerView, handler_for
from configctl.handlers.base import Problem
from configctl.precedence import EffectiveValue
from configctl.sources import DYNAMIC_TOPIC_CONFIG
from configctl.store import ConfigStore
from configctl.timeref import TimeRef
from configctl.travel.past import History, applied_records, resolve


@dataclasses.dataclass
class Moment:
    """One broker's view at one moment: what history gives, and the broker's applied log."""

    broker_id: int
    at_ms: int
    static: dict[str, str]
    history: History
    records: list[applied.Record] | None
    fold_ms: int = 0
    """Up to when the applied log is read: ``at_ms``, or for ``change:N`` when this broker applied
    change N if it did (the moment's state after the change, as the broker reached it)."""

    def view(self, entity: Entity) -> BrokerView:
        """The broker's view at this moment of everything ``entity``'s answer depends on."""
        wanted = dependencies(self.broker_id, entity, self.history.entities_of)
        return view_from(self.broker_id, self.static, self.history.stored_at(wanted.values(), self.at_ms))

    def effective(self, entity: Entity) -> dict[str, EffectiveValue]:
        return handler_for(entity).effective(entity, self.view(entity))


def moment(
    store: ConfigStore,
    broker_id: int,
    ref: TimeRef,
    applied_dirs: Sequence[str | Path] = (),
    history: History | None = None,
) -> Moment:
    """Broker ``broker_id`` at ``ref``: its static config (:func:`broker_static`), history, its
    applied log (from ``--applied-log``'s directories, else as a migration carried it into the cluster)."""
    static = broker_static(store, broker_id)
    records = applied_records(broker_id, applied_dirs)
    if records is None:
        records = store.carried_applied_log(broker_id)
    history = history or History(store, records or ())
    at_ms = resolve(ref, history, records or ())
    fold_ms = at_ms
    if ref.change is not None:
        for record in records or ():
            if record.change_number == ref.change and record.kind == applied.APPLIED:
                fold_ms = max(at_ms, record.applied_at_ms)
                break
    return Moment(broker_id, at_ms, static, history, records, fold_ms)


def effective_at(
    store: ConfigStore,
    broker_id: int,
    target: Entity | None,
    ref: TimeRef,
    applied_dirs: Sequence[str | Path] = (),
) -> EffectiveReport:
    """``target``'s (or the broker's own) effective config on ``broker_id`` as of ``ref``."""
    entity = target_entity(broker_id, target)
    handler = handler_for(entity)
    at = moment(store, broker_id, ref, applied_dirs)
    view = at.view(entity)
    values = handler.effective(entity, view)
    log_report, stored = _compare(at, entity, values)
    ignored = view.resolution.ignored if handler.layered else ()
    folded = applied.fold(at.records, at.fold_ms) if at.records is not None else None
    problems: tuple[Problem, ...] = ()
    if folded is not None and folded.covers(at.fold_ms):
        depends = dependencies(broker_id, entity, at.history.entities_of)
        problems = tuple(
            Problem.from_json(p)
            for path, found in sorted(folded.problems.items())
            if path in depends
            for p in found
        )
    return EffectiveReport(
        broker_id,
        entity.path,
        tuple(values[name] for name in sorted(values)),
        tuple(ignored),
        folded.last_change if folded is not None and folded.covers(at.fold_ms) else None,
        pending=False,
        problems=problems,
        stored=stored,
        at_ms=at.at_ms,
        applied_log=log_report,
    )


def _compare(
    at: Moment, entity: Entity, values: dict[str, EffectiveValue]
) -> tuple[dict[str, Any] | None, dict[str, str | None]]:
    """Put what the broker ran (its applied log, where it covers T) in place of what history gives;
    the difference is listed, and the history value kept as ``stored``. Secrets are never compared
    in clear (history holds them encrypted, the log as digests): they are left out."""
    if at.records is None:
        return None, {}
    folded = applied.fold(at.records, at.fold_ms)
    covered = folded.covers(at.fold_ms)
    report: dict[str, Any] = {
        "covered": covered,
        "covered_from_ms": folded.covered_from_ms,
        "last_applied_change": folded.last_change if covered else None,
        "differences": [],
    }
    if not covered:
        return report, {}
    paths = _ran_paths(at.broker_id, entity)
    stored: dict[str, str | None] = {}
    for name, value in list(values.items()):
        if value.sensitive:
            continue
        found = [folded.values[(p, name)] for p in paths if (p, name) in folded.values]
        if not found:
            continue
        ran = max(found, key=lambda r: r.applied_at_ms)
        if ran.value == value.value or not _still_logged(entity, ran):
            continue
        report["differences"].append(
            {
                "name": name,
                "written": value.value,
                "ran": ran.value,
                "ran_source": ran.source,
                "reported_by_broker": ran.reported,
                "change_number": ran.change_number,
                "applied_at_ms": ran.applied_at_ms,
            }
        )
        stored[name] = value.value
        values[name] = dataclasses.replace(value, value=ran.value, source=ran.source or value.source)
    return report, stored


def _still_logged(entity: Entity, ran: applied.Ran) -> bool:
    """Is the logged value still what the broker runs, as far as its log can say? A broker's own
    keys: yes (every change to either layer logs them). Another entity's key: only while its own
    layer sets it (a fallback moves with changes logged under other paths)."""
    if handler_for(entity).layered or ran.reported:
        return True
    return ran.source in (DYNAMIC_TOPIC_CONFIG, entity.path)


def _ran_paths(broker_id: int, entity: Entity) -> list[str]:
    """The applied-log entity paths whose records give ``entity``'s effective values: a broker's
    own keys are logged under either of its layers, anything else under its own path."""
    if handler_for(entity).layered:
        return [BROKER.layer(broker_id).path, BROKER.layer(None).path]
    return [entity.path]
