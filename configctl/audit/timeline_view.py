"""How the timeline document (``audit --timeline``) is shown: a terminal table and an HTML page.

The page is ``templates/timeline.html.j2``, written to stand alone here and to be included by
the audit report (``report.html.j2``) when a document carries ``intervals``: one template, so
the timeline looks the same wherever it appears. Brokers are listed as ranges (``1-4, 7``) and
durations in words by the drift views' helpers (:mod:`configctl.audit.report_view`), the ones the
console's Drift page uses, so a timeline reads the same there too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from configctl.audit import report_view
from configctl.timeref import iso

if TYPE_CHECKING:
    from rich.console import Console

_SHOWN_VALUE = 40


def brokers_as_ranges(brokers: list[int]) -> str:
    return report_view.ranges(brokers)


def change(interval: dict[str, Any], side: str) -> str:
    """An interval's opening or closing change number, marked when it was written outside configctl
    (:mod:`configctl.audit.timeline_outside`)."""
    number = interval[f"{side}_by_change"]
    if number is None:
        return "—"
    return f"{number} (outside configctl)" if interval.get(f"{side}_outside_configctl") else str(number)


def held(interval: dict[str, Any]) -> str:
    """``a on 1-3 · b on 4``: each value with its brokers."""
    parts = []
    for value, brokers in interval["values"].items():
        shown = value if len(value) <= _SHOWN_VALUE else value[: _SHOWN_VALUE - 1] + "…"
        parts.append(f"{shown} on {brokers_as_ranges(brokers)}")
    return " · ".join(parts)


@dataclass(frozen=True)
class TimelineView:
    """The timeline document for :func:`configctl.cli.render.show`: as it is, or a table."""

    doc: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.doc

    def render(self, out: Console) -> None:
        from rich.table import Table

        doc = self.doc
        out.print(
            f"{len(doc['intervals'])} interval(s) of disagreement over {doc['brokers']} broker(s)' applied logs"
            + (
                f" ({doc['intervals_truncated']} more not listed: raise --limit)"
                if doc["intervals_truncated"]
                else ""
            )
            + (f"; {doc['skipped_lines']} torn or foreign line(s) skipped" if doc["skipped_lines"] else ""),
            highlight=False,
        )
        if not doc["intervals"]:
            return
        table = Table(show_edge=False, pad_edge=False)
        for column in ("ENTITY", "KEY", "START", "END", "FOR", "VALUES", "CHANGES"):
            table.add_column(column, overflow="fold")
        for i in doc["intervals"]:
            end = "open" if i["end_ms"] is None else iso(i["end_ms"])
            closed = "" if i["closed_by_change"] is None else f" → {change(i, 'closed')}"
            table.add_row(
                i["entity_path"],
                i["key"],
                iso(i["start_ms"]),
                end,
                report_view.duration(i["duration_ms"]) or "—",
                held(i),
                f"{change(i, 'opened')}{closed}",
            )
        out.print(table)
        outside = doc.get("outside_writes") or {}
        if outside:
            out.print(
                f"{len(outside)} of these changes were written outside configctl (kafka-configs.sh, the Admin "
                "API or another tool): configctl history shows what each changed.",
                highlight=False,
            )


def render_timeline_html(
    doc: dict[str, Any], *, source: str | None = None, generated: str | None = None
) -> str:
    """The standalone page of ``audit --timeline --html``."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("configctl.audit", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(iso=iso, duration=report_view.duration, ranges=brokers_as_ranges)
    return env.get_template("timeline.html.j2").render(
        doc=doc, standalone=True, source=source, generated=generated
    )


def write_timeline_html(doc: dict[str, Any], path: str | Path, *, source: str | None = None) -> Path:
    target = Path(path)
    generated = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    target.write_text(render_timeline_html(doc, source=source, generated=generated), encoding="utf-8")
    return target
