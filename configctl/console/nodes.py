"""The Fleet page of a KRaft cluster: one row per node, as the brokers and controllers report it.

A KRaft cluster runs no configctl listener, so its ``status`` document (``"mode": "kraft"``,
:class:`configctl.documents.status.ReportedStatus`) holds no applied change, no "behind" and no
problem: only what the cluster says of itself (registered brokers, fenced or not; the controller
quorum's voters and observers with their log end offsets) and what each broker answered when
asked itself (its own and the ``<default>`` dynamic layers: key counts and a digest). The rows
here put those together per node id, and add nothing the cluster did not say, with one
exception that says so: a broker this console saw registered earlier and the cluster no longer
lists is shown ``not registered`` (:class:`Departed`), since nothing else would show it at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

REGISTERED, FENCED, NOT_REGISTERED = "registered", "fenced", "not registered"
"""A node's broker registration as shown: registered (unfenced), registered but fenced (stopped,
or not yet caught up), or not registered (an observer of the quorum the cluster does not list
as a broker, or a broker seen registered earlier that it no longer lists)."""


def is_kraft(status: Mapping[str, Any]) -> bool:
    """Whether ``status`` is the ``status -o json`` of a KRaft cluster (asked, not published)."""
    return status.get("mode") == "kraft"


class Departed:
    """The brokers this console saw registered and the cluster no longer lists, with when it last
    saw each (the console's own memory, lost when it restarts; said so on the page)."""

    def __init__(self) -> None:
        self._seen: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def note(self, status: Mapping[str, Any]) -> None:
        """Remember every broker ``status`` lists, as of now."""
        now = int(time.time() * 1000)
        with self._lock:
            for broker in status.get("brokers") or []:
                if isinstance(broker, Mapping) and isinstance(broker.get("broker_id"), int):
                    self._seen[broker["broker_id"]] = {**broker, "last_seen_ms": now}

    def gone(self, status: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The brokers seen before that ``status`` does not list."""
        listed = {b.get("broker_id") for b in status.get("brokers") or [] if isinstance(b, Mapping)}
        with self._lock:
            return [dict(b) for i, b in sorted(self._seen.items()) if i not in listed]


def node_rows(status: Mapping[str, Any], gone: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per node: every registered broker, every voter and observer of the quorum, and
    every broker in ``gone``, sorted by node id."""
    quorum = status.get("quorum") or {}
    leader = quorum.get("leader_id")
    voters = {v.get("node_id"): v for v in quorum.get("voters") or [] if isinstance(v, Mapping)}
    observers = {o.get("node_id"): o for o in quorum.get("observers") or [] if isinstance(o, Mapping)}
    brokers = {b.get("broker_id"): b for b in status.get("brokers") or [] if isinstance(b, Mapping)}
    departed = {b.get("broker_id"): b for b in gone or [] if b.get("broker_id") not in brokers}
    rows = []
    for node in sorted(i for i in {*brokers, *voters, *observers, *departed} if isinstance(i, int)):
        broker = brokers.get(node)
        voter = voters.get(node)
        replica = voter or observers.get(node) or {}
        if broker is not None:
            registration = FENCED if broker.get("fenced") is True else REGISTERED
        elif node in departed or node in observers:
            registration = NOT_REGISTERED
        else:
            registration = ""  # a controller only: it registers no broker
        takes_broker = node in brokers or node in departed
        roles = [r for r, here in (("broker", takes_broker), ("controller", voter is not None)) if here]
        answers = bool(broker and broker.get("answers"))
        shown = broker or departed.get(node) or {}
        rows.append(
            {
                "node_id": node,
                "roles": ", ".join(roles),
                "registration": registration,
                "host": shown.get("host"),
                "port": shown.get("port"),
                "rack": shown.get("rack"),
                "asked": broker is not None,
                "answers": answers,
                "reason": (broker or {}).get("reason"),
                "dynamic_config_keys": (broker or {}).get("dynamic_config_keys"),
                "default_config_keys": (broker or {}).get("default_config_keys"),
                "config_digest": (broker or {}).get("config_digest"),
                "quorum_role": _quorum_role(node, leader, voter is not None, bool(replica)),
                "log_end_offset": replica.get("log_end_offset"),
                "lag": replica.get("lag"),
                "last_fetch_ms": replica.get("last_fetch_ms"),
                "last_seen_ms": (departed.get(node) or {}).get("last_seen_ms"),
                "healthy": registration in (REGISTERED, "") and (answers or broker is None),
            }
        )
    return rows


def _quorum_role(node: int, leader: Any, voter: bool, replica: bool) -> str:
    if voter:
        return "leader" if node == leader else "voter"
    return "observer" if replica else ""


def summary(status: Mapping[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts above the table."""
    brokers = [r for r in rows if r["asked"]]
    return {
        "brokers": len(brokers),
        "answering": sum(1 for r in brokers if r["answers"]),
        "fenced": sum(1 for r in rows if r["registration"] == FENCED),
        "not_registered": sum(1 for r in rows if r["registration"] == NOT_REGISTERED),
        "controllers": sum(1 for r in rows if "controller" in r["roles"]),
    }


def as_fleet(status: Mapping[str, Any]) -> dict[str, Any]:
    """The KRaft ``status`` in the terms the Drift page's "why" reads (``live``, ``problems``): a
    broker is live when it is registered unfenced and answered; no listener reports problems."""
    return {
        "brokers": [
            {
                "broker_id": b.get("broker_id"),
                "live": bool(b.get("answers")) and b.get("fenced") is not True,
                "problems": [],
            }
            for b in status.get("brokers") or []
            if isinstance(b, Mapping)
        ]
    }


__all__ = ["Departed", "as_fleet", "is_kraft", "node_rows", "summary"]
