"""What the fleet really runs (docs/reference/state-and-fleet-nodes.md): every broker's state, and waiting until a change lands.

A running listener keeps ``/configctl/brokers/<id>`` (ephemeral: it exists while the listener's
session does) with ``last_applied_change`` and its problems; it also keeps a persistent
``/configctl/fleet/<id>`` record, so a broker whose listener died is still known. Kafka's own
``/brokers/ids`` adds the Kafka brokers. This module is the client side, for the CLI
(``configctl status``, ``--wait``) and for any other tool: it reads through the store
(:class:`configctl.store.ConfigStore`; ZooKeeper's reads the nodes in
:mod:`configctl.zk.fleetstate`), never decodes nodes itself (:mod:`configctl.znodes` and
:mod:`configctl.migration` do) and never polls (waiting rides on the store's watches). The status also says who owns the cluster's metadata (``"metadata"``): during a
ZooKeeper-to-KRaft migration every write is refused, and the operator should see why before trying.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from configctl.entities import Entity
from configctl.errors import BrokersRefused, Conflict, WaitTimedOut
from configctl.handlers import handler_for
from configctl.handlers.base import KINDS, UNREACHABLE, Problem
from configctl.migration import MetadataOwner
from configctl.store import ConfigStore
from configctl.timeref import in_calendar
from configctl.znodes import BrokerStateZNode, is_json_int

APPLIED = "applied"
PENDING = "pending"
DOWN = "down"
COMPUTED = "computed"
"""Wait statuses: ``applied``; ``pending``, ``down`` (a known broker with no live listener, or a
Kafka broker that Kafka no longer registers, its listener running or not: "down (not
registered)") and ``unreachable`` (its listener applied it, its real broker does not answer);
``computed`` (Kafka registers a broker with this id, but its listener applied it without asking
the broker: nothing says the broker runs it); or the problem kind a broker refused the change with
(``rejected``, ``ignored``, ``unreadable``, ``mismatch``). Only ``applied`` counts; the unanswered
ones are waited for (a listener or a broker that comes back is followed); a refusal or a computed
state ends that broker's wait."""
UNANSWERED = (PENDING, DOWN, UNREACHABLE)

# What a broker's figures rest on (``truth``; status, describe --effective, diff, the console).
OBSERVED = "observed"
"""A sidecar asked its Kafka broker: what it reports is shown."""
NOT_REGISTERED = "down (not registered)"
"""Kafka registered this broker and no longer does (stopped, crashed): nothing runs there."""
CONFIG_MANAGER = "config manager"
"""No Kafka broker has this id: its listener is the broker's own config manager, what it applied stands."""
NO_LISTENER = "no listener"
REPORTED = "reported"
"""No listener at all (KRaft): the broker itself was asked through the Admin API and answered."""


def is_sidecar(state: Mapping[str, Any]) -> bool:
    """Its listener runs beside a Kafka broker and asks it (``kind``; older listeners: ``observed``)."""
    return state.get("kind") == BrokerStateZNode.SIDECAR or state.get("observed") is True


def registered_now(state: Mapping[str, Any] | None, kafka: set[int] | None, broker_id: int) -> bool:
    """Does Kafka register broker ``broker_id``? A sidecar's own word (its watch on the
    registration, ``kafka_registered``) is the freshest; else Kafka's ``/brokers/ids`` as read."""
    published = None if state is None else state.get("kafka_registered")
    if isinstance(published, bool):
        return published
    return broker_id in (kafka or set())


def kafka_column(registered: bool, judged: str) -> str:
    """Kafka's registration as ``status`` and the console show it: ``registered``, ``not
    registered`` (a Kafka broker that was and is no more), or ``none`` (no Kafka broker has the id)."""
    if registered:
        return "registered"
    return "not registered" if judged == NOT_REGISTERED else "none"


def figures(judged: str, observed_change: int | None = None) -> str:
    """What a broker's figures rest on, in words (status, the console)."""
    if judged == OBSERVED:
        seen = "nothing yet" if observed_change is None else f"up to change {observed_change}"
        return f"observed from the broker ({seen})"
    return {
        COMPUTED: "computed (its Kafka broker not asked)",
        UNREACHABLE: "unreachable (its Kafka broker does not answer)",
        NOT_REGISTERED: NOT_REGISTERED,
        CONFIG_MANAGER: "applied (its listener is the broker's config manager)",
        REPORTED: "reported by the broker itself (asked through the Admin API, not computed)",
    }.get(judged, "")


def truth(state: Mapping[str, Any] | None, registered: bool) -> str:
    """What broker's figures rest on: ``observed`` (its Kafka broker asked), ``unreachable`` (asked,
    no answer), ``computed`` (a Kafka broker registered with its id was not asked), ``down (not
    registered)`` (a Kafka broker that Kafka no longer registers), ``config manager`` (no Kafka
    broker has its id) or ``no listener``. The one home of that judgement."""
    if state is None:
        return NO_LISTENER
    if is_sidecar(state):
        if state.get("kafka_registered") is not None and not registered:
            return NOT_REGISTERED
        if any(p.kind == UNREACHABLE for p in problems_of(state)):
            return UNREACHABLE
        return OBSERVED
    return COMPUTED if registered else CONFIG_MANAGER


def broker_state(store: ConfigStore, broker_id: int | str) -> dict[str, Any] | None:
    """The state broker ``broker_id``'s listener published, None when no listener runs (or it is unreadable)."""
    return store.broker_state(broker_id)


def broker_states(store: ConfigStore) -> dict[int, dict[str, Any]]:
    """The published state of every running listener, by broker id."""
    return store.broker_states()


def fleet_records(store: ConfigStore) -> dict[int, dict[str, Any]]:
    """Every broker's persistent record (written by its listener, kept when it dies), by broker id."""
    return store.fleet_records()


def problems_of(state: Mapping[str, Any]) -> list[Problem]:
    problems = state.get("problems")
    if not isinstance(problems, list):
        return []
    return [Problem.from_json(p) for p in problems if isinstance(p, Mapping)]


def latest_change_number(store: ConfigStore) -> int | None:
    """The newest change notification still in the store (None when none is left)."""
    return store.latest_change_number()


# -- status -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerStatus:
    """One broker as the fleet sees it now."""

    broker_id: int
    live: bool
    last_applied_change: int | None
    behind: int | None
    applied_at_ms: int | None
    problems: tuple[Problem, ...] = ()
    host: str | None = None
    last_seen_ms: int | None = None
    kafka_registered: bool = False
    observed: bool = False
    """Its figures come from its real broker (a sidecar beside a real broker), not only configctl's model."""
    observed_change: int | None = None
    """Beside a real broker: the newest change its broker has answered for (agreed or mismatch)."""
    observed_at_ms: int | None = None
    problems_omitted: int = 0
    """Problems its listener has but did not publish (the list is cut at its newest 1,000)."""
    listener_live: bool = False
    """Its listener runs (``live`` is false all the same for a Kafka broker no longer registered)."""
    kind: str | None = None
    """Its listener's ``kind``: ``sidecar`` (beside a Kafka broker), ``config-manager``, None (none runs)."""
    truth: str = NO_LISTENER
    """What its figures rest on (:func:`truth`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "broker_id": self.broker_id,
            "live": self.live,
            "listener_live": self.listener_live,
            "kind": self.kind,
            "truth": self.truth,
            "last_applied_change": self.last_applied_change,
            "behind": self.behind,
            "applied_at_ms": self.applied_at_ms,
            "problems": [p.to_json() for p in self.problems],
            "host": self.host,
            "last_seen_ms": self.last_seen_ms,
            "kafka_registered": self.kafka_registered,
            "observed": self.observed,
            "observed_change": self.observed_change,
            "observed_at_ms": self.observed_at_ms,
            "problems_omitted": self.problems_omitted,
        }


@dataclass(frozen=True)
class FleetStatus:
    """The ``configctl status`` document (docs/reference/json-output.md)."""

    latest_change_number: int | None
    brokers: tuple[BrokerStatus, ...]
    metadata: MetadataOwner | None = None
    """Who owns the cluster's metadata (``/controller``, ``/migration``): whether writes are taken."""

    def to_json(self) -> dict[str, Any]:
        return {
            "latest_change_number": self.latest_change_number,
            "brokers": [b.to_json() for b in self.brokers],
            "metadata": self.metadata.to_json() if self.metadata is not None else None,
        }

    def broker(self, broker_id: int) -> BrokerStatus | None:
        return next((b for b in self.brokers if b.broker_id == broker_id), None)


def known_brokers(store: ConfigStore) -> list[int]:
    """Every broker the fleet knows: a live listener, a persistent record (its listener
    down, until the operator retires it: ``configctl retire``), or Kafka's registration."""
    kafka = store.running_brokers() or set()
    return sorted(set(store.broker_states()) | set(store.fleet_records()) | kafka)


def retire(store: ConfigStore, broker_id: int) -> bool:
    """Forget a decommissioned broker's record, so ``status`` and ``--wait`` stop counting it.

    Refused (:class:`Conflict`) while its listener runs or Kafka registers it: a running broker
    is not retired. Returns False when there was no record to forget.
    """
    if store.broker_state(broker_id) is not None:
        raise Conflict(f"broker {broker_id} has a live listener: stop it before retiring the broker")
    if broker_id in (store.running_brokers() or set()):
        raise Conflict(
            f"broker {broker_id} is registered by Kafka (/brokers/ids): it runs, so it cannot be retired"
        )
    return store.retire_broker(broker_id)


def status(store: ConfigStore) -> FleetStatus:
    """Every live listener, and every broker known from ``/configctl/fleet`` or Kafka's ``/brokers/ids``."""
    store.capabilities.require("fleet_state", what="the fleet's status")
    states = store.broker_states()
    records = store.fleet_records()
    kafka = store.running_brokers() or set()
    latest = store.latest_change_number()
    metadata = store.metadata_owner()
    numbers = (_change(s.get("last_applied_change")) for s in states.values())
    applied = [a for a in numbers if a is not None]
    if latest is None and applied:
        latest = max(applied)  # every notification was purged: the newest any broker applied is the newest
    brokers = []
    for broker_id in sorted(set(states) | set(records) | kafka):
        state = states.get(broker_id)
        record = records.get(broker_id, {})
        live = state or {}
        last = _change((state if state is not None else record).get("last_applied_change"))
        behind = None if latest is None or last is None else max(0, latest - last)
        registered = broker_id in kafka
        judged = truth(state, registered)
        kind = live.get("kind")
        brokers.append(
            BrokerStatus(
                broker_id=broker_id,
                live=state is not None and judged != NOT_REGISTERED,
                listener_live=state is not None,
                kind=kind if isinstance(kind, str) and len(kind) <= 32 else None,
                truth=judged,
                last_applied_change=last,
                behind=behind,
                applied_at_ms=_time_ms(live.get("applied_at_ms")),
                problems=tuple(problems_of(state)) if state is not None else (),
                host=_host(live.get("host")) or _host(record.get("host")),
                last_seen_ms=_time_ms(record.get("last_seen_ms")),
                kafka_registered=registered,
                observed=live.get("observed") is True,
                observed_change=_change(live.get("observed_change")),
                observed_at_ms=_time_ms(live.get("observed_at_ms")),
                problems_omitted=_change(live.get("problems_omitted")) or 0,
            )
        )
    return FleetStatus(latest, tuple(brokers), metadata)


# A record or state node is anyone's to write (a forged or damaged one must not crash a reader or
# pass absurd values through ``-o json``): each field is taken only with its type and range.
_MAX_CHANGE = 9_999_999_999  # the widest change number a 10-digit sequential node carries
_MAX_HOST = 255


def _change(value: Any) -> int | None:
    return value if is_json_int(value) and -1 <= value <= _MAX_CHANGE else None


def _time_ms(value: Any) -> int | None:
    return value if in_calendar(value) else None


def _host(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= _MAX_HOST else None


# -- waiting ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One committed write to follow: the entity and the change number of its notification."""

    entity: Entity
    change_number: int
    refused_from: int | None = None
    """A problem with the entity from this change on refuses it (None: from ``change_number``;
    -1: any problem still listed, when the write changed nothing and the entity's change is older)."""


@dataclass(frozen=True)
class BrokerOutcome:
    """Where one live broker stands with the written changes."""

    broker_id: int
    status: str
    reason: str | None = None
    kafka_registered: bool | None = None
    """Kafka registers it (None: not known, or no Kafka broker was ever registered with its id)."""
    refusal: str | None = None
    """A refusal as one sentence (:meth:`Problem.refusal`): the broker's, or configctl's plugin's veto."""

    @property
    def label(self) -> str:
        """The status as shown: a Kafka broker no longer registered is ``down (not registered)``."""
        return NOT_REGISTERED if self.status == DOWN and self.kafka_registered is False else self.status

    def to_json(self) -> dict[str, Any]:
        return {
            "broker_id": self.broker_id,
            "status": self.status,
            "reason": self.reason,
            "kafka_registered": self.kafka_registered,
            "refusal": self.refusal,
        }


@dataclass
class WaitResult:
    """The ``--wait`` ``"rollout"`` document (docs/reference/json-output.md): the newest change written and each live broker's status."""

    change_number: int | None
    brokers: list[BrokerOutcome] = field(default_factory=list)
    timed_out: bool = False

    @property
    def refused(self) -> list[BrokerOutcome]:
        return [b for b in self.brokers if b.status in KINDS and b.status not in UNANSWERED]

    @property
    def computed(self) -> list[BrokerOutcome]:
        """Kafka brokers whose listener applied it without asking them: never counted as applied."""
        return [b for b in self.brokers if b.status == COMPUTED]

    @property
    def pending(self) -> list[BrokerOutcome]:
        """Brokers that have not answered: still applying, unconfirmed by their broker (``computed``
        too: its listener never asked it, so no caller may count it as applied), or down."""
        return [b for b in self.brokers if b.status in UNANSWERED or b.status == COMPUTED]

    @property
    def all_applied(self) -> bool:
        return all(b.status == APPLIED for b in self.brokers)

    def to_json(self) -> dict[str, Any]:
        return {"change_number": self.change_number, "brokers": [b.to_json() for b in self.brokers]}


def outcome(
    broker_id: int,
    state: Mapping[str, Any] | None,
    written: Sequence[Written],
    kafka: set[int] | None = None,
) -> BrokerOutcome:
    """Has this broker applied every written change, refused one, or is it still on its way?

    A problem with a written entity at (or after) its change number is a refusal of that change;
    a change to an entity this broker does not follow (another broker's own config) counts as
    applied once the broker has moved past it. Beside a real broker (``"observed": true``, a
    sidecar) applying it to the listener's model is not enough: the broker itself must have answered
    for it (``observed_change``), by agreeing or by a ``mismatch``; a Kafka broker that Kafka no
    longer registers is ``down`` whatever its listener says, and one whose listener did not ask it
    is ``computed``, never ``applied`` (``kafka``: Kafka's registered ids as read, see :func:`truth`).
    """
    registered = registered_now(state, kafka, broker_id)
    judged = truth(state, registered)
    if state is None:
        return BrokerOutcome(
            broker_id,
            DOWN,
            "no live listener (known from its record or Kafka's registration)",
            registered if kafka is not None else None,
        )
    if judged == NOT_REGISTERED:
        return BrokerOutcome(
            broker_id,
            DOWN,
            f"Kafka no longer registers broker {broker_id} (stopped or crashed); its configctl listener runs",
            False,
        )
    relevant = [w for w in written if handler_for(w.entity).follows(w.entity, broker_id)]
    for problem in problems_of(state):
        for item in relevant:
            since = item.change_number if item.refused_from is None else item.refused_from
            if problem.entity_path == item.entity.path and (
                problem.change_number is None or problem.change_number >= since
            ):
                where = f"{problem.name}: " if problem.name else ""
                by = f" (plugin {problem.plugin})" if problem.plugin else ""
                return BrokerOutcome(
                    broker_id,
                    problem.kind,
                    f"{where}{problem.reason}{by}",
                    registered,
                    problem.refusal(broker_id, beside_kafka=is_sidecar(state)),
                )
    last = _change(state.get("last_applied_change"))
    newest = max((w.change_number for w in written), default=-1)
    if not (last is not None and last >= newest):
        return BrokerOutcome(broker_id, PENDING, f"applied up to change {last}, waiting for {newest}")
    if relevant and state.get("observed") is True:
        seen = _change(state.get("observed_change"))
        wanted = max(w.change_number for w in relevant)
        if not (seen is not None and seen >= wanted):
            away = next((p for p in problems_of(state) if p.kind == UNREACHABLE), None)
            if away is not None:
                return BrokerOutcome(broker_id, UNREACHABLE, f"its listener applied it, but {away.reason}")
            return BrokerOutcome(
                broker_id, PENDING, "its listener applied it; asking the broker whether it runs it"
            )
    if relevant and judged == COMPUTED:
        return BrokerOutcome(
            broker_id,
            COMPUTED,
            f"its listener applied it without asking Kafka broker {broker_id} (registered, not asked): "
            "nothing says the broker runs it",
            True,
        )
    return BrokerOutcome(
        broker_id, APPLIED, None, registered if (kafka is not None or is_sidecar(state)) else None
    )


def wait(
    store: ConfigStore,
    written: Sequence[Written],
    timeout: float,
    *,
    brokers: Iterable[int] | None = None,
    on_update: Callable[[list[BrokerOutcome]], None] | None = None,
    every_known: bool = False,
) -> WaitResult:
    """Follow the listeners' state nodes (watches) until each applied ``written`` or refused it.

    ``brokers`` limits the wait to those ids (a canary); by default every listener live now, or
    with ``every_known`` every broker known (:func:`known_brokers`): one whose listener is down
    is ``down`` until its listener comes back and applies it. ``on_update`` is called with every
    broker's outcome whenever one changes. Returns when every broker has an answer or
    ``timeout`` seconds passed (``timed_out``).
    """
    store.capabilities.require("watches", "fleet_state", what="waiting for the brokers")
    newest = max((w.change_number for w in written), default=None)
    if brokers is not None:
        ids = sorted(brokers)
    else:
        ids = known_brokers(store) if every_known else sorted(store.broker_states())
    result = WaitResult(newest)
    if not ids or newest is None:
        return result
    kafka = store.running_brokers()
    outcomes: dict[int, BrokerOutcome] = {}
    changed = threading.Condition()

    def watcher(broker_id: int) -> Callable[[bytes | None], bool]:
        def on_data(data: bytes | None) -> bool:
            state = None if data is None else BrokerStateZNode.decode_live(data)
            with changed:
                outcomes[broker_id] = outcome(broker_id, state, written, kafka)
                changed.notify_all()
            return outcomes[broker_id].status in UNANSWERED  # False stops the watch: the answer is in

        return on_data

    deadline = time.monotonic() + max(0.0, timeout)
    for i in ids:
        store.watch_broker_state(i, watcher(i))
    shown: list[BrokerOutcome] = []
    with changed:
        while True:
            current = [outcomes.get(i, BrokerOutcome(i, PENDING, "no answer yet")) for i in ids]
            if on_update is not None and current != shown:
                shown = current
                on_update(current)
            if all(o.status not in UNANSWERED for o in current):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.timed_out = True
                break
            changed.wait(remaining)
    # Each watch stops itself once its callback returns False; the rest end when the store is closed.
    result.brokers = [outcomes.get(i, BrokerOutcome(i, PENDING, "no answer yet")) for i in ids]
    return result


def raise_for_wait(
    result: WaitResult, timeout: float | None, *, done: str = "the write is committed"
) -> None:
    """The exit status a wait earned (after the command printed its result): 9 when a broker
    refused the change, 10 when one had not applied it in time; ``done`` says what was written."""
    if not result.brokers:
        return
    if result.refused:
        first = result.refused[0]
        more = f" (and {len(result.refused) - 1} more broker(s))" if len(result.refused) > 1 else ""
        raise BrokersRefused(f"{done}{_numbered(result)}, but {first.refusal}{more}")
    if result.computed:
        ids = ", ".join(str(b.broker_id) for b in result.computed)
        raise WaitTimedOut(
            f"{done}{_numbered(result)}, but Kafka broker(s) {ids} were not asked: their "
            "listener computed it (computed, not applied); run each listener beside its broker so it asks"
        )
    if result.pending:
        ids = ", ".join(f"{b.broker_id} ({b.label})" for b in result.pending)
        when = f"after {timeout:g}s" if timeout is not None else "in time"
        first = result.pending[0]
        raise WaitTimedOut(
            f"{done}{_numbered(result)}, but broker(s) {ids} had not applied it {when}"
            + (f"; broker {first.broker_id}: {first.reason}" if first.reason else "")
        )


def _numbered(result: WaitResult) -> str:
    """`` (change N)`` after what was written; nothing where writes get no change number (KRaft)."""
    return "" if result.change_number is None else f" (change {result.change_number})"
