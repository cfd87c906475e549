"""``--wait`` where no listener publishes a fleet state (KRaft): every registered broker is asked.

On ZooKeeper the wait rides on the listeners' published state (:func:`configctl.fleet.wait`). A
store whose capabilities say ``broker_reports`` offers no such state, but each broker can be asked
what it reports (:class:`~configctl.store.roles.BrokerReports`): a topic's config from each broker,
a broker's own config from that broker, ``<default>`` and quotas from every broker. A broker is
``applied`` only once it reported the written value itself; until then it is ``pending`` (it
answered something else: its metadata is behind) or ``unreachable`` (it did not answer). A broker
whose own report holds a written broker key at the written layer but runs another value refused
to apply it (:func:`configctl.reported.not_applied`): a ``mismatch`` at once, with no wait. When the
time runs out, a broker still reporting something else is a ``mismatch`` (a refusal, exit 9);
one that never answered stays ``unreachable`` (exit 10). The questions back off
(:class:`~configctl.retrying.Backoff`): no polling storm.

The outcomes are :mod:`configctl.fleet`'s (:class:`~configctl.fleet.BrokerOutcome`,
:class:`~configctl.fleet.WaitResult`), so the exit statuses and words are the same on both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from configctl.entities import Entity, EntityType
from configctl.errors import ConfigctlError, KafkaUnavailable
from configctl.fleet import APPLIED, DOWN, PENDING, BrokerOutcome, WaitResult, Written
from configctl.fleet import wait as fleet_wait
from configctl.handlers import BROKER, handler_for
from configctl.handlers.base import MISMATCH, UNREACHABLE
from configctl.reported import NotApplied, not_applied
from configctl.retrying import Backoff
from configctl.store import ConfigStore
from configctl.store.roles import BrokerReports, broker_reports

FIRST_DELAY = 0.2
LONGEST_DELAY = 2.0
"""Between two rounds of questions: from 0.2 s, doubling to at most 2 s per round."""
FINAL = (APPLIED, MISMATCH)
"""A broker's answer that asking again cannot change: it runs the write, or it refused it."""
OTHERWISE = "reports "
"""How the reason of a broker that answered with something else begins (a mismatch if it stays)."""


@dataclass(frozen=True)
class Expected:
    """One written entity and the config the cluster holds for it now (the store's terms)."""

    entity: Entity
    config: Mapping[str, str] = field(default_factory=dict)


def expected_after_write(store: ConfigStore, entities: Sequence[Entity]) -> list[Expected]:
    """What each written entity should be reported as: what the write read back once it landed
    (:meth:`~configctl.store.roles.ConfigReads.last_written`), else the cluster's config now."""
    found = []
    for entity in dict.fromkeys(entities):
        stored = store.last_written(entity)
        if stored is None:
            stored = store.read(entity)
        found.append(Expected(entity, dict(stored.config)))
    return found


def differences(expected: Mapping[str, str], reported: Mapping[str, str]) -> list[str]:
    """The keys a broker reports otherwise than ``expected``, as ``key=reported (expected ...)``."""
    found = []
    for key in sorted(set(expected) | set(reported)):
        ours, theirs = expected.get(key), reported.get(key)
        if ours != theirs:
            shown = "unset" if theirs is None else repr(theirs)
            want = "unset" if ours is None else repr(ours)
            found.append(f"{key}={shown} (expected {want})")
    return found


def ask(reports: BrokerReports, broker_id: int, expected: list[Expected]) -> BrokerOutcome:
    """Where broker ``broker_id`` stands now, by its own answer for each entity it takes; an
    entity it reports as expected is taken off ``expected`` (it is not asked again)."""
    refusals = _Refusals(reports, broker_id)
    for item in list(expected):
        try:
            reported = reports.reported_config(broker_id, item.entity)
        except KafkaUnavailable as exc:
            return BrokerOutcome(broker_id, UNREACHABLE, f"did not answer: {exc}", True)
        except ConfigctlError as exc:
            return BrokerOutcome(broker_id, PENDING, f"asked for {item.entity.path}: {exc}", True)
        if item.entity.type.in_broker_memory:  # loggers the broker made since are no difference
            reported = {k: v for k, v in reported.items() if k in item.config}
        # A broker layer's own keys say what is stored, not what the broker runs: its own report
        # (with synonyms) says whether it refused to apply what its metadata holds.
        refused = refusals.of(item)
        if refused is not None:
            reason = f"refused {refused.key}={refused.held}: runs {refused.running} ({refused.source})"
            return BrokerOutcome(broker_id, MISMATCH, reason, True, refused.sentence(broker_id))
        differ = differences(item.config, reported)
        if differ:
            return BrokerOutcome(
                broker_id, PENDING, f"{OTHERWISE}{item.entity.path} {', '.join(differ[:3])}", True
            )
        expected.remove(item)
    return BrokerOutcome(broker_id, APPLIED, "reported by the broker", True)


class _Refusals:
    """What broker ``broker_id`` holds but refused to apply (:func:`configctl.reported.not_applied`),
    from its own report, asked once per round however many of its layers were written."""

    def __init__(self, reports: BrokerReports, broker_id: int) -> None:
        self.reports = reports
        self.broker_id = broker_id
        self._found: list[NotApplied] | None = None

    def of(self, item: Expected) -> NotApplied | None:
        """A key of written broker layer ``item`` the broker holds as written but does not run;
        None for any other entity, or while its metadata has not reached the write."""
        if item.entity.type is not EntityType.BROKERS:
            return None
        if self._found is None:
            try:
                self._found = not_applied(
                    self.reports.reported_keys(self.broker_id, BROKER.layer(self.broker_id))
                )
            except ConfigctlError:
                return None  # asked again next round
        return next(
            (
                n
                for n in self._found
                if n.entity(self.broker_id) == item.entity and item.config.get(n.key) == n.held
            ),
            None,
        )


def wait_written(
    store: ConfigStore,
    written: Sequence[Written],
    timeout: float,
    *,
    brokers: Iterable[int] | None = None,
    on_update: Callable[[list[BrokerOutcome]], None] | None = None,
) -> WaitResult:
    """Wait for the brokers to apply ``written``, whichever store: each broker asked where the
    store says ``broker_reports`` (KRaft), the listeners' published states followed otherwise
    (:func:`configctl.fleet.wait`). ``brokers`` limits it to those ids (a canary)."""
    if store.capabilities.broker_reports:
        expected = expected_after_write(store, [w.entity for w in written])
        return wait_reported(store, expected, timeout, brokers=brokers, on_update=on_update)
    return fleet_wait(store, written, timeout, brokers=brokers, on_update=on_update)


def wait_reported(
    store: ConfigStore,
    expected: Sequence[Expected],
    timeout: float,
    *,
    brokers: Iterable[int] | None = None,
    on_update: Callable[[list[BrokerOutcome]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> WaitResult:
    """Ask every registered broker (of ``brokers``, when given) that takes one of ``expected``
    until each reports it, or ``timeout`` seconds passed (``timed_out``; a broker still reporting
    something else is then a ``mismatch``). ``on_update`` is called with every broker's outcome
    whenever one changes. A broker of ``brokers`` that is not registered is ``down`` at once."""
    reports = broker_reports(store, what="waiting for the brokers")
    result = WaitResult(None)
    if not expected:
        return result
    registered = sorted(store.running_brokers() or ())
    if brokers is not None:
        wanted = sorted(set(brokers))
        gone = [b for b in wanted if b not in registered]
        if gone:
            result.brokers = [BrokerOutcome(b, DOWN, "Kafka does not register it", False) for b in gone]
            return result
        registered = wanted
    takes = {b: [e for e in expected if handler_for(e.entity).follows(e.entity, b)] for b in registered}
    ids = [b for b in registered if takes[b]]
    if not ids:
        return result
    outcomes = {b: BrokerOutcome(b, PENDING, "not asked yet") for b in ids}
    deadline = time.monotonic() + max(0.0, timeout)
    backoff = Backoff(FIRST_DELAY, LONGEST_DELAY)
    shown: list[BrokerOutcome] = []
    while True:
        for b in ids:
            if outcomes[b].status not in FINAL:
                outcomes[b] = ask(reports, b, takes[b])
        current = [outcomes[b] for b in ids]
        if on_update is not None and current != shown:
            shown = current
            on_update(current)
        if all(o.status in FINAL for o in current):
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            result.timed_out = True
            break
        sleep(min(backoff.next_delay(), remaining))
    result.brokers = [_final(outcomes[b]) if result.timed_out else outcomes[b] for b in ids]
    if result.timed_out and on_update is not None and result.brokers != shown:
        on_update(result.brokers)
    return result


def _final(item: BrokerOutcome) -> BrokerOutcome:
    """After the timeout: a broker that answered with something else reports a mismatch."""
    if item.status != PENDING or not (item.reason or "").startswith(OTHERWISE):
        return item
    return BrokerOutcome(
        item.broker_id,
        MISMATCH,
        item.reason,
        item.kafka_registered,
        f"broker {item.broker_id} {item.reason} when the wait ended",
    )


__all__ = ["Expected", "ask", "differences", "expected_after_write", "wait_reported", "wait_written"]
