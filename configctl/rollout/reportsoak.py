"""The soak where no listener publishes a fleet state (KRaft): each broker asked, again and again, for the soak time.

On ZooKeeper the soak watches the listeners' published problems (:func:`configctl.rollout.health.soak`).
A KRaft cluster has no listener state to watch, but each broker can be asked what it reports
(:class:`~configctl.store.roles.BrokerReports`) and the controllers say which brokers are
registered. So for the soak time, every :data:`ASK_EVERY` seconds, each soaked broker must still
be registered (a broker that stopped or crashed is unregistered by the controllers once its
session times out) and still report what was written (a broker that lost or reverted it, or
never applied it after a restart, fails the step); a change to the rollout's record by someone
else ends the soak at once, as on ZooKeeper. What is judged is what the brokers say, never a guess.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from configctl.errors import ConfigctlError, one_line
from configctl.fleet import APPLIED
from configctl.handlers import handler_for
from configctl.handlers.base import UNREACHABLE
from configctl.rollout.brokerwait import Expected, ask
from configctl.rollout.health import TICK, SoakResult
from configctl.store import ConfigStore
from configctl.store.roles import BrokerReports, broker_reports

ASK_EVERY = 1.0
"""Seconds between two rounds of questions during a soak (each broker asked once per round)."""


def soak_reported(
    store: ConfigStore,
    expected: Sequence[Expected],
    brokers: Sequence[int],
    seconds: float,
    *,
    rollout_id: str | None = None,
    record_version: int | None = None,
    on_tick: Callable[[float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> SoakResult:
    """Ask ``brokers`` for ``seconds``: fail when one is no longer registered or stops reporting
    ``expected``; with ``rollout_id``, a change to the record by someone else interrupts it."""
    ids = sorted(brokers)
    started = time.monotonic()
    if seconds <= 0 or not ids:
        return SoakResult(0.0)
    reports = broker_reports(store, what="a rollout's soak")
    deadline = started + seconds
    next_round = started
    while True:
        now = time.monotonic()
        if now >= next_round:
            failure = _round(store, reports, expected, ids)
            # A record moved by someone else comes first: an abort from another terminal restores
            # the brokers, which then no longer report the change.
            if rollout_id is not None and _record_moved(store, rollout_id, record_version):
                return SoakResult(
                    time.monotonic() - started, "the rollout's record was changed by someone else", (), True
                )
            if failure is not None:
                return SoakResult(time.monotonic() - started, failure)
            next_round = time.monotonic() + ASK_EVERY
        remaining = deadline - time.monotonic()
        if on_tick is not None:
            on_tick(max(0.0, remaining))
        if remaining <= 0:
            return SoakResult(time.monotonic() - started)
        sleep(max(0.01, min(TICK, remaining, next_round - time.monotonic())))


def _round(
    store: ConfigStore, reports: BrokerReports, expected: Sequence[Expected], ids: Sequence[int]
) -> str | None:
    """One round of questions: why the soak fails now, or None."""
    try:
        registered = store.running_brokers() or set()
    except ConfigctlError as exc:
        return f"the cluster did not say which brokers are registered during the soak: {one_line(exc.message, 200)}"
    for broker_id in ids:
        if broker_id not in registered:
            return f"broker {broker_id} stopped during the soak (Kafka no longer registers it)"
        takes = [e for e in expected if handler_for(e.entity).follows(e.entity, broker_id)]
        outcome = ask(reports, broker_id, takes)
        if outcome.status == UNREACHABLE:
            return f"broker {broker_id} stopped answering during the soak ({one_line(outcome.reason, 200)})"
        if outcome.status != APPLIED:
            return f"broker {broker_id} no longer reports the change during the soak: {one_line(outcome.reason, 200)}"
    return None


def _record_moved(store: ConfigStore, rollout_id: str, version: int | None) -> bool:
    found = store.rollouts.record(rollout_id)
    return found is None or (version is not None and found[1] != version)


__all__ = ["ASK_EVERY", "soak_reported"]
