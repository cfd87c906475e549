"""The pages: server-rendered HTML from the same documents the API serves.

Jinja2 with autoescaping on: every stored string (an entity name, a reason, a host, a problem's
text) is text, never markup; a topic named ``<script>`` shows as ``<script>``. No template uses
an inline script, an inline style or an external URL (the Content-Security-Policy of
:mod:`.security` would refuse them anyway); the one script, ``/static/console.js``, sorts and
filters tables and swaps in the page anew when ``/events`` says a document it shows moved
(the Rollouts page with actions on adds ``/static/actions.js``, its Abort buttons' script).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape

from configctl import fleet
from configctl.audit import report_view
from configctl.console import nodes
from configctl.console.documents import BROKERS, EntityDocument
from configctl.documents.history import keys_changed
from configctl.entities import Entity
from configctl.errors import ConfigctlError

_ENV = Environment(
    loader=PackageLoader("configctl.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


LAST_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last moment a date can show."""

UNKNOWN = "unknown"


def moment(ms: Any) -> int | None:
    """A time in milliseconds since the epoch, or None when ``ms`` is none a date can show: not a
    number (text, a bool, a list), not whole, zero or negative, or past the year 9999 (``1e20``).
    The audit's file is only read, never trusted: such a time is shown as unknown, never a 500."""
    if isinstance(ms, bool) or not isinstance(ms, int | float):
        return None
    if isinstance(ms, float) and not (math.isfinite(ms) and ms.is_integer()):
        return None
    return int(ms) if 0 < ms <= LAST_MS else None


def when(ms: Any) -> str:
    """A time in milliseconds as UTC (the console serves people in many time zones); "" when
    :func:`moment` finds none."""
    found = moment(ms)
    if found is None:
        return ""
    return datetime.fromtimestamp(found / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def entity_url(path: str | None) -> str:
    """The console's link to an entity (its stored path, percent-encoded once more)."""
    return "/entity/" + quote(path or "", safe="/")


def entity_label(path: str | None) -> str:
    """An entity path with plain names (``users/alice``), or the path as stored when it is not one."""
    try:
        return Entity.from_path(path or "").label
    except ConfigctlError:
        return path or ""


_ENV.filters["when"] = when
_ENV.filters["entity_label"] = entity_label
_ENV.filters["duration"] = report_view.duration
_ENV.filters["entity_url"] = entity_url


def _render(template: str, **context: Any) -> str:
    """A page; ``versions`` (the shared documents' versions it was made from) lets its script see,
    on connecting to ``/events``, whether something moved in between. ``source`` names what the
    documents are read from beside a problem; ``no_rollouts``, when given, hides the Rollouts link
    (the store keeps no rollout records: the line says why)."""
    context.setdefault("versions", {})
    context.setdefault("source", "ZooKeeper")
    context.setdefault("no_rollouts", None)
    return _ENV.get_template(template).render(**context)


# -- fleet ------------------------------------------------------------------------------------------


def fleet_rows(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per broker, with what the table sorts and filters on."""
    rows = []
    for broker in status.get("brokers") or []:
        problems = broker.get("problems") or []
        kinds = sorted({str(p.get("kind")) for p in problems})
        count = len(problems) + int(broker.get("problems_omitted") or 0)
        truth = str(broker.get("truth") or fleet.NO_LISTENER)
        figures = fleet.figures(truth, broker.get("observed_change"))
        rows.append(
            {
                **broker,
                "kinds": kinds,
                "problem_count": count,
                "mismatch": "mismatch" in kinds,
                "figures": figures,
                "down_not_registered": truth == fleet.NOT_REGISTERED,
                "kafka": fleet.kafka_column(bool(broker.get("kafka_registered")), truth),
                "seen_ms": broker.get("applied_at_ms") if broker.get("live") else broker.get("last_seen_ms"),
            }
        )
    return rows


def fleet_page(
    status: Mapping[str, Any],
    changes: Sequence[Mapping[str, Any]],
    rollouts: Sequence[Mapping[str, Any]],
    problem: str | None,
    versions: Mapping[str, int] | None = None,
    *,
    source: str = "ZooKeeper",
    no_rollouts: str | None = None,
    poll: float | None = None,
    gone: list[dict[str, Any]] | None = None,
    stale: Mapping[str, str] | None = None,
) -> str:
    """The Fleet page: the brokers as their listeners published them, or, for a KRaft cluster's
    ``status`` (``"mode": "kraft"``), every node as the cluster and each broker report it
    (:mod:`.nodes`; ``gone``: brokers seen registered before, ``poll``: seconds between polls,
    ``stale``: the documents that could not be read at the last poll, and why)."""
    if nodes.is_kraft(status):
        rows = nodes.node_rows(status, gone)
        return _render(
            "fleet_kraft.html",
            page="fleet",
            versions=versions or {},
            live="status changes rollouts",
            status=status,
            rows=rows,
            summary=nodes.summary(status, rows),
            changes=changes,
            rollouts=[r for r in rollouts if r.get("open") or r.get("problem")],
            problem=problem,
            source=source,
            no_rollouts=no_rollouts,
            poll=poll,
            stale=stale or {},
        )
    rows = fleet_rows(status)
    summary = {
        "brokers": len(rows),
        "live": sum(1 for r in rows if r.get("live")),
        "behind": sum(1 for r in rows if r.get("behind")),
        "with_problems": sum(1 for r in rows if r["problem_count"]),
        "mismatch": sum(1 for r in rows if r["mismatch"]),
    }
    open_rollouts = [r for r in rollouts if r.get("open") or r.get("problem")]
    return _render(
        "fleet.html",
        page="fleet",
        versions=versions or {},
        live="status changes rollouts",
        status=status,
        rows=rows,
        summary=summary,
        changes=changes,
        rollouts=open_rollouts,
        problem=problem,
        source=source,
        no_rollouts=no_rollouts,
    )


# -- entity -----------------------------------------------------------------------------------------


def entity_page(
    document: EntityDocument,
    problem: str | None,
    versions: Mapping[str, int] | None = None,
    *,
    source: str = "ZooKeeper",
    no_rollouts: str | None = None,
) -> str:
    keys = sorted((document.stored.get("config") or {}).keys())
    by_broker = []
    for report in document.effective:
        shown = report.to_json()
        configs = {c["name"]: c for c in shown["configs"]}
        by_broker.append({"report": shown, "cells": [configs.get(k) for k in keys]})
    history = []
    for record, shown in zip(document.records, document.history, strict=False):
        history.append({**shown, "keys_changed": keys_changed(record)})
    reasons = {item["reason"] for item in document.to_json()["effective_unavailable"]}
    return _render(
        "entity.html",
        page="entity",
        versions=versions or {},
        live="status changes",
        doc=document.to_json(),
        applied=[{**o.to_json(), "label": o.label} for o in document.applied],  # "down (not registered)"
        keys=keys,
        by_broker=by_broker,
        history=history,
        problem=problem,
        source=source,
        no_rollouts=no_rollouts,
        asked=document.verdicts_from == BROKERS,
        same_reason=reasons.pop() if len(reasons) == 1 and len(document.effective_problems) > 1 else None,
    )


# -- rollouts ---------------------------------------------------------------------------------------


def rollouts_page(
    rollouts: Sequence[Mapping[str, Any]],
    details: Mapping[str, Mapping[str, Any]],
    problem: str | None,
    versions: Mapping[str, int] | None = None,
    *,
    actions: bool = False,
) -> str:
    """The Rollouts page; with ``actions`` (``serve --allow-actions``) each open rollout has an
    Abort button, and the page loads ``/static/actions.js``, which asks for the token and a reason."""
    return _render(
        "rollouts.html",
        page="rollouts",
        versions=versions or {},
        live="rollouts status",
        rollouts=rollouts,
        details=details,
        problem=problem,
        actions=actions,
    )


# -- drift ------------------------------------------------------------------------------------------

KIND_CLASSES = {
    "missed": "heat-missed",
    "divergent": "heat-divergent",
    "static": "heat-static",
    "override": "heat-override",
}


def drift_page(
    document: Mapping[str, Any] | None,
    reason: str | None,
    status: Mapping[str, Any] | None = None,
    *,
    no_rollouts: str | None = None,
) -> str:
    """The Drift page; ``status`` (the fleet now) lets each group of stale brokers say why (a
    KRaft cluster's, in the same terms: :func:`.nodes.as_fleet`)."""
    if status is not None and nodes.is_kraft(status):
        status = nodes.as_fleet(status)
    heatmap = (document or {}).get("heatmap") or {}
    stale = (document or {}).get("stale_brokers") or []
    return _render(
        "drift.html",
        page="drift",
        live="",
        doc=document,
        reason=reason,
        keys=heatmap.get("keys") or [],
        brokers=heatmap.get("brokers") or [],
        cells=heatmap.get("cells") or [],
        kind_classes=KIND_CLASSES,
        stale_groups=report_view.stale_groups(stale, status),
        fleet_now={
            b.get("broker_id"): {
                "live": bool(b.get("live")),
                "kinds": sorted({str(p.get("kind")) for p in b.get("problems") or []}),
            }
            for b in (status or {}).get("brokers") or []
            if isinstance(b, Mapping)
        },
        stale_heat=[
            {**g, "ids": report_view.ranges(g.get("brokers") or [])}
            for g in heatmap.get("stale_groups") or []
            if isinstance(g, Mapping)
        ],
        intervals=_intervals((document or {}).get("intervals") or []),
        counts=(document or {}).get("counts") or {},
        problem=None,
        no_rollouts=no_rollouts,
    )


def _intervals(intervals: Any) -> list[dict[str, Any]]:
    """The timeline (``audit --timeline``'s ``intervals``), open ones first, then the newest:
    each value with the brokers that ran it, as ranges; each time as shown (a time that is none,
    :func:`moment`, is ``unknown``; an interval without an end is still open)."""
    rows = []
    for item in intervals if isinstance(intervals, list) else []:
        if not isinstance(item, Mapping):
            continue
        values: Mapping[Any, Any] = item["values"] if isinstance(item.get("values"), Mapping) else {}
        path = item.get("entity_path")
        start, end = moment(item.get("start_ms")), moment(item.get("end_ms"))
        still_open = item.get("end_ms") is None
        took = _span(item.get("duration_ms"))
        rows.append(
            {
                **item,
                "entity_path": path if isinstance(path, str) else None,
                "still_open": still_open,
                "start_ms": start,
                "end_ms": end,
                "from": when(start) or UNKNOWN,
                "until": "" if still_open else when(end) or UNKNOWN,
                "for": report_view.duration(took) if took is not None else "" if still_open else UNKNOWN,
                "duration_ms": took,
                "held": [
                    {
                        "value": value,
                        "brokers": report_view.ranges(sorted(b for b in brokers if isinstance(b, int))),
                    }
                    for value, brokers in values.items()
                    if isinstance(brokers, list)
                ],
            }
        )
    rows.sort(key=lambda r: (not r["still_open"], -(r["start_ms"] or 0)))
    return rows


def _span(ms: Any) -> int | None:
    """A duration in milliseconds, or None when ``ms`` is none (as :func:`moment`, zero allowed)."""
    return ms if isinstance(ms, int) and not isinstance(ms, bool) and 0 <= ms <= LAST_MS else None


def error_page(status: int, text: str, *, no_rollouts: str | None = None) -> str:
    return _render(
        "error.html", page="", live="", status_code=status, text=text, problem=None, no_rollouts=no_rollouts
    )
