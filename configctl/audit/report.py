"""Rendering an audit document: a rich summary for the terminal and a self-contained HTML report.

Both read only the JSON-ready document :func:`configctl.audit.run.audit` returns, so a
document saved from a cluster run (``--json-file``) renders the same way later. The HTML is a
single file with inline CSS (no scripts, no network), so it can be mailed or attached to a
ticket as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from configctl.audit import report_view
from configctl.audit.schema import DIGEST_PREFIX
from configctl.audit.verdict import has_drift

KIND_LABELS = {
    "missed": "missed a change",
    "divergent": "holds a minority value",
    "static": "server.properties differs",
    "override": "per-broker override",
}
TERMINAL_ROWS = 15


def short_value(value: str | None, width: int = 60, none: str = "—") -> str:
    """A value for a narrow column: digests cut to 12 hex digits, long values cut with an ellipsis."""
    if value is None:
        return none
    if value.startswith(DIGEST_PREFIX) and len(value) > len(DIGEST_PREFIX) + 12:
        return value[: len(DIGEST_PREFIX) + 12] + "…"
    return value if len(value) <= width else value[: width - 1] + "…"


def _broker_list(value: dict[str, Any], shown: int = 12) -> str:
    ids = value["brokers"][:shown]
    text = ", ".join(str(b) for b in ids)
    rest = value["count"] - len(ids)
    return f"{text} +{rest} more" if rest > 0 else text


# -- terminal -----------------------------------------------------------------------------------------


def print_summary(doc: dict[str, Any], console: Console | None = None, rows: int = TERMINAL_ROWS) -> None:
    """The summary figures, then each non-empty finding as a table of at most ``rows`` rows."""
    console = console or Console()
    counts = doc["counts"]
    malformed = doc["malformed"]["unparseable"] + doc["malformed"]["missing_fields"]
    missed = "n/a (no ZooKeeper)" if doc["missed_changes"] is None else str(counts.get("missed_changes", 0))
    latest = doc["latest_change_number"]
    verdict = (
        Text("drift found", style="bold red") if has_drift(doc) else Text("no drift", style="bold green")
    )
    figures = Table.grid(padding=(0, 2))
    figures.add_column(style="dim")
    figures.add_column()
    figures.add_row("brokers", str(doc["brokers"]))
    figures.add_row("snapshot rows", f"{doc['rows']:,}")
    figures.add_row("malformed lines", Text(str(malformed), style="yellow" if malformed else ""))
    figures.add_row(
        "newest change", "—" if latest is None else f"{latest} (from {doc['latest_change_source']})"
    )
    figures.add_row("stale brokers", str(counts["stale_brokers"]))
    figures.add_row("divergent keys", str(counts["divergent"]))
    figures.add_row("missed changes", missed)
    figures.add_row("static skew", str(counts["static_skew"]))
    figures.add_row("per-broker overrides", str(counts["per_broker_overrides"]))
    figures.add_row("verdict", verdict)
    console.print(Panel(figures, title="configctl audit", expand=False))

    def table(title: str, name: str, columns: Sequence[str], cells: list[list[str]]) -> None:
        if not cells:
            return
        t = Table(title=f"{title} ({counts[name]})", title_justify="left", show_lines=False)
        for column in columns:
            t.add_column(column, overflow="fold")
        for row in cells[:rows]:
            t.add_row(*row)
        console.print(t)
        hidden = counts[name] - min(rows, len(cells))
        if hidden > 0:
            console.print(f"  … {hidden} more (use --output json or --html for all)", style="dim")

    table(
        "Stale brokers",
        "stale_brokers",
        ["broker", "applied change", "behind"],
        [[str(s["broker_id"]), str(s["change_number"]), str(s["behind"])] for s in doc["stale_brokers"]],
    )
    table(
        "Divergent keys",
        "divergent",
        ["entity", "key", "majority", "others (brokers)"],
        [
            [
                d["entity_path"],
                d["name"],
                short_value(d["majority_value"], 30, "absent"),
                "; ".join(
                    f"{short_value(v['value'], 30, 'absent')} on {_broker_list(v)}" for v in d["values"][1:]
                ),
            ]
            for d in doc["divergent"]
        ],
    )
    if doc["missed_changes"]:
        table(
            "Missed changes",
            "missed_changes",
            ["broker", "entity", "key", "expected", "running"],
            [
                [
                    str(m["broker_id"]),
                    m["entity_path"],
                    m["name"],
                    short_value(m["expected_value"], 30, "not set"),
                    short_value(m["actual_value"], 30, "not set"),
                ]
                for m in doc["missed_changes"]
            ],
        )
    table(
        "Static skew (server.properties)",
        "static_skew",
        ["key", "majority", "others (brokers)"],
        [
            [
                d["name"],
                short_value(d["majority_value"], 30),
                "; ".join(f"{short_value(v['value'], 30)} on {_broker_list(v)}" for v in d["values"][1:]),
            ]
            for d in doc["static_skew"]
        ],
    )
    table(
        "Per-broker overrides",
        "per_broker_overrides",
        ["broker", "key", "value"],
        [[str(o["broker_id"]), o["name"], short_value(o["value"], 40)] for o in doc["per_broker_overrides"]],
    )
    if malformed:
        console.print(
            f"[yellow]{malformed} malformed snapshot line(s) skipped[/yellow] "
            f"({doc['malformed']['unparseable']} unparseable, {doc['malformed']['missing_fields']} missing fields)"
        )


# -- HTML ---------------------------------------------------------------------------------------------


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("configctl.audit", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shorten"] = lambda text, width=48: text if len(text) <= width else text[: width - 1] + "…"

    def show(value: str | None, absent: str = "absent") -> Markup:
        if value is None:
            return Markup('<span class="absent">{}</span>').format(absent)
        shown = short_value(value, 80)
        if shown != value:
            return Markup('<span title="{}">{}</span>').format(value, shown)
        return escape(value)

    def brokers(value: dict[str, Any]) -> Markup:
        return escape(_broker_list(value, 40))

    def more(doc: dict[str, Any], name: str) -> Markup:
        hidden = doc["truncated"].get(name, 0)
        if not hidden:
            return Markup("")
        return Markup('<p class="note">… and {} more not listed (raise --limit to see them).</p>').format(
            hidden
        )

    env.globals.update(show=show, brokers=brokers, more=more, ranges=report_view.ranges)
    return env


def render_html(
    doc: dict[str, Any],
    *,
    title: str = "Config audit",
    source: str | None = None,
    generated: str | None = None,
    desired_state: str | Path | None = None,
) -> str:
    """The HTML report: summary figures, the brokers × keys heatmap and every finding table.

    ``desired_state`` is the file the expected state came from, if one did: the report names it
    rather than "zookeeper" (see :func:`report_view.expected_source`).
    """
    counts = doc["counts"]
    malformed_total = doc["malformed"]["unparseable"] + doc["malformed"]["missing_fields"]
    latest = doc["latest_change_number"]

    def card(figure: Any, label: str, alert: bool = False, sub: str | None = None) -> dict[str, Any]:
        style = "alert" if alert else ("quiet" if figure in (0, "—") else "")
        return {"figure": figure, "label": label, "style": style, "sub": sub}

    missed = counts.get("missed_changes", 0) if doc["missed_changes"] is not None else "—"
    expected = report_view.expected_source(doc, desired_state)
    static_groups = report_view.static_by_key(doc["static_skew"] or [])
    cards = [
        card(doc["brokers"], "brokers"),
        card(f"{doc['rows']:,}", "snapshot rows"),
        card("—" if latest is None else latest, "newest change", sub=f"from {expected}"),
        card(counts["stale_brokers"], "stale brokers", counts["stale_brokers"] > 0),
        card(counts["divergent"], "divergent keys", counts["divergent"] > 0),
        card(missed, "missed changes", isinstance(missed, int) and missed > 0),
        card(
            len(static_groups) + doc["truncated"].get("static_skew", 0),
            "static skew keys",
            counts["static_skew"] > 0,
        ),
        card(counts["per_broker_overrides"], "per-broker overrides"),
        card(malformed_total, "malformed lines", malformed_total > 0),
    ]
    template = _environment().get_template("report.html.j2")
    return template.render(
        doc=doc,
        title=title,
        source=source,
        generated=generated,
        drift=has_drift(doc),
        cards=cards,
        heatmap=doc["heatmap"],
        labels=KIND_LABELS,
        malformed_total=malformed_total,
        expected_source=expected,
        stale_groups=report_view.stale_groups(doc["stale_brokers"] or []),
        static_groups=static_groups,
    )


def write_html(doc: dict[str, Any], path: str | Path, **kwargs: Any) -> Path:
    target = Path(path)
    target.write_text(render_html(doc, **kwargs), encoding="utf-8")
    return target
