"""What the drift views show a person, shared by the audit's HTML report and the console's Drift page.

At 500 brokers the raw document reads badly: one stuck change makes a hundred stale rows, a
static difference on ``log.retention.hours`` is listed again under each of its synonyms, and the
newest change is said to come from "zookeeper" whatever it came from. These helpers turn the
audit document into what a person reads at a glance: root causes grouped, each counted once,
labelled by where it came from. Pure functions on the JSON document (no Spark), so both views
and their tests use them as they are. Broker ids as ranges and how long brokers disagreed are
spelled here too, for the timeline's table and page (:mod:`configctl.audit.timeline_view`) and
the console's intervals alike: one spelling wherever a timeline appears.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from configctl import catalogue


def ranges(ids: Iterable[int]) -> str:
    """``1-4, 7, 9-10``: a few hundred broker ids on one line."""
    parts: list[str] = []
    start = previous = None
    for broker in sorted({i for i in ids if isinstance(i, int)}):
        if start is None:
            start = previous = broker
        elif broker == previous + 1:  # type: ignore[operator]
            previous = broker
        else:
            parts.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = previous = broker
    if start is not None:
        parts.append(f"{start}" if start == previous else f"{start}-{previous}")
    return ", ".join(parts)


def duration(ms: Any) -> str:
    """``1h 02m``, ``3m 20s``, ``850 ms``: how long brokers disagreed."""
    if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


def stale_groups(
    stale: Sequence[Mapping[str, Any]], status: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Stale brokers grouped by the change they stopped at: one line per root cause, biggest first.

    Given the fleet's status document (the console has it; the audit's file does not), each group
    also says why where the status says it: how many of its brokers are down (no live listener)
    and which problems they report (a plugin that rejected the change, a mismatch, ...).
    """
    by_id = {b.get("broker_id"): b for b in (status or {}).get("brokers") or [] if isinstance(b, Mapping)}
    groups: dict[Any, list[int]] = {}
    for item in stale:
        groups.setdefault(item.get("change_number"), []).append(item.get("broker_id"))
    out = []
    for change, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0]))):
        why: list[str] = []
        if by_id:
            down = [b for b in ids if b in by_id and not by_id[b].get("live")]
            if down:
                why.append(f"{len(down)} down ({ranges(down)})")
            kinds: dict[str, list[int]] = {}
            for b in ids:
                for problem in (by_id.get(b) or {}).get("problems") or []:
                    kinds.setdefault(str(problem.get("kind")), []).append(b)
            why += [f"{kind} on {len(set(bs))} ({ranges(bs)})" for kind, bs in sorted(kinds.items())]
        out.append({"change_number": change, "count": len(ids), "brokers": ranges(ids), "why": why})
    return out


def static_by_key(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Static skew counted once per key: entries for synonyms (``log.retention.hours`` and
    ``log.retention.ms``) are one difference, listed under the names the brokers used."""
    groups: dict[frozenset[str], list[Mapping[str, Any]]] = {}
    for item in items:
        groups.setdefault(catalogue.synonym_group(str(item.get("name"))), []).append(item)
    return [
        {"names": [str(e.get("name")) for e in entries], "entries": entries} for entries in groups.values()
    ]


def expected_source(doc: Mapping[str, Any], desired_state: str | Path | None = None) -> str:
    """Where the newest change and the expected state came from, truthfully: the desired-state
    file's name when one was given (the audit document says "zookeeper" for both), "zookeeper"
    only when ZooKeeper was read, "snapshots" when neither was (the newest change any broker ran)."""
    said = str(doc.get("latest_change_source") or "")
    if desired_state is not None and said != "snapshots":
        return Path(desired_state).name
    return said or "snapshots"
