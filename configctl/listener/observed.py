"""Beside a real broker: ask it what it runs after each change, and list where it disagrees.

A sidecar listener (``configctl listener run --bootstrap-server HOST:PORT``) applies every change
to its model of the broker as any listener does; the :class:`Observer` then asks the broker
itself, through the Admin API (:class:`configctl.adminapi.client.KafkaAdmin`), what it runs for
the entities the change touched, and compares through :mod:`configctl.agreement`:

- ``brokers/<id>`` and ``brokers/<default>``: the broker's own running config (DescribeConfigs
  on broker ``<id>``) for the keys the change touched;
- ``topics/<t>``: the topic's config, for the keys the change touched;
- users, clients, user+client and IP entities: the quota entity as stored (DescribeClientQuotas),
  and for a user its SCRAM mechanisms and iteration counts (never a secret).

A ZooKeeper-mode broker applies a change asynchronously (within a second or so), so a difference
is re-checked with backoff (:class:`configctl.retrying.Backoff`) and reported as a ``mismatch``
problem only once it outlasts :data:`SETTLE_S`; it disappears when the broker agrees. A newer
change to the entity supersedes the check (its keys join the new one's). After
:data:`GIVE_UP_S` without agreement it is asked only every :data:`SLOW_RECHECK_S` (a broker
restarted with another server.properties, or an operator's fix, still clears it), and the
mismatch stays listed meanwhile. A broker that does not answer is one ``unreachable`` problem for the
whole listener, cleared when it answers again; its checks keep being retried meanwhile.

Secrets never reach a problem: Kafka does not send secret values and :mod:`configctl.agreement`
skips them; SCRAM credentials are compared by iteration count only.

Everything here runs on the observer's own thread: a slow or absent broker never stalls the
listener's worker, which only hands over what it applied (:meth:`Observer.observe`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from configctl import agreement
from configctl.entities import DEFAULT, Entity
from configctl.errors import ConfigctlError, KafkaUnavailable, one_line, printable
from configctl.handlers.base import MISMATCH, UNREACHABLE, Problem, handler_for
from configctl.handlers.sidecar import Asker, Model
from configctl.reported import ReportedConfig
from configctl.retrying import Backoff

log = logging.getLogger("configctl.listener")

KINDS = (MISMATCH, UNREACHABLE)
"""The problem kinds the observer lists (their home: :mod:`configctl.handlers.base`)."""

FIRST_CHECK_S = 0.1
"""The first question after a change: a ZooKeeper-mode broker usually agrees by then."""
SETTLE_S = 2.0
"""A difference younger than this is the broker still applying, not a mismatch."""
GIVE_UP_S = 60.0
"""Re-checking a mismatch slows down this long after the change; the mismatch stays listed."""
SLOW_RECHECK_S = 300.0
"""How often a mismatch older than :data:`GIVE_UP_S` is asked again."""
BACKOFF_START_S, BACKOFF_MAX_S = 0.2, 5.0
ADMIN_TIMEOUT_S = 5.0
MAX_MISMATCHES = 1_000
"""At most this many mismatches are kept (the newest), as the listener's other problems."""


def compare(
    entity: Entity, keys: frozenset[str], broker_id: int, model: Model, broker: Asker
) -> list[agreement.Mismatch]:
    """What ``broker`` reports otherwise than ``model`` computes for ``entity``: which answer to
    compare is the entity's handler's to say (:meth:`FamilyHandler.disagreements`)."""
    return handler_for(entity).disagreements(entity, keys, broker_id, model, broker)


@dataclass
class Check:
    """One entity waiting for its broker to agree."""

    entity: Entity
    change_number: int | None
    keys: frozenset[str]
    since: float  # monotonic: when the change was applied
    due: float
    reported: bool = False  # its difference outlasted the settling time: a mismatch is listed
    slow: bool = False  # older than GIVE_UP_S: asked every SLOW_RECHECK_S
    backoff: Backoff = field(default_factory=lambda: Backoff(BACKOFF_START_S, BACKOFF_MAX_S))


class Observer:
    """Asks broker ``broker_id`` (through ``connect()``, a :class:`KafkaAdmin` factory) whether it
    runs what ``model`` computes, keeping problems of kinds ``mismatch`` and
    ``unreachable``. ``on_change`` is called (from the observer's thread) when the problems change.

    :meth:`step` does one round of due checks and is what the thread runs; tests drive it
    directly with their own ``clock``.
    """

    def __init__(
        self,
        broker_id: int,
        model: Model,
        connect: Callable[[], Asker],
        *,
        on_change: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.broker_id = int(broker_id)
        self.model = model
        self._connect = connect
        self._on_change = on_change
        self._clock = clock
        self._wall_ms = wall_ms
        self._lock = threading.Condition(threading.RLock())
        self._checks: dict[str, Check] = {}
        self._mismatches: dict[tuple[str, str], Problem] = {}
        self._unreachable: Problem | None = None
        self._broker: Asker | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._logged: set[tuple[str, str, str | None, str | None]] = set()
        self.observed_at_ms: int | None = None
        self._handed: int | None = None  # the newest change the listener applied and handed over
        self.counters: dict[str, int] = {
            "observations": 0,
            "admin_requests": 0,
            "mismatch_problems": 0,
            "unreachable_problems": 0,
        }

    # ------------------------------------------------------------------------------ the worker's side

    def observe(
        self, changes: Iterable[tuple[str, int | None, Iterable[str]]], up_to: int | None = None
    ) -> None:
        """Entities the listener just applied: ``(entity_path, change_number, keys touched)``, in the
        batch that moved it to change ``up_to`` (None: a reload that did not move it)."""
        now = self._clock()
        with self._lock:
            if up_to is not None:
                self._handed = up_to if self._handed is None else max(self._handed, up_to)
            for path, number, keys in changes:
                try:
                    entity = Entity.from_path(path)
                except ConfigctlError:
                    continue
                if not handler_for(entity).follows(entity, self.broker_id):
                    continue
                old = self._checks.get(path)
                watched = set(keys) | {k for (p, k) in self._mismatches if p == path}
                if old is not None:  # superseded: the newer change decides, its keys join
                    watched |= old.keys
                self._checks[path] = Check(entity, number, frozenset(watched), now, now + FIRST_CHECK_S)
            self._lock.notify_all()

    def observe_layers(self, up_to: int | None = None) -> None:
        """At start (the listener's model is at change ``up_to``): the broker's own layers
        (``brokers/<id>``, ``brokers/<default>``), whatever changed before the sidecar ran, and
        whether the broker answers at all."""
        layers = [f"brokers/{self.broker_id}", f"brokers/{DEFAULT}"]
        self.observe(
            ((path, None, self.model.entity_config(Entity.from_path(path)).keys()) for path in layers), up_to
        )

    # ------------------------------------------------------------------------------ queries

    def problems(self) -> list[Problem]:
        with self._lock:
            found = list(self._mismatches.values())
            if self._unreachable is not None:
                found.append(self._unreachable)
            return found

    def pending(self) -> list[str]:
        """Entities still being re-checked (changed, not yet agreed, not given up)."""
        with self._lock:
            return sorted(self._checks)

    def observed_change(self) -> int | None:
        """The newest change up to which the broker has answered for everything the listener
        applied: it agreed, or its difference is listed as a mismatch. A check still open (the
        broker applying, or not answering) holds it at the change before that check's; a check
        from the start (no change number) holds it at None. ``--wait`` counts a broker as
        applied only up to here (:func:`configctl.fleet.outcome`)."""
        with self._lock:
            open_checks = [c.change_number for c in self._checks.values() if not c.reported]
            if self._handed is None or None in open_checks:
                return None
            return min([self._handed, *(n - 1 for n in open_checks if n is not None)])

    def state(self) -> dict[str, Any]:
        """The state node's observation fields (see :meth:`observed_change`)."""
        with self._lock:
            return {
                "observed": True,
                "observed_at_ms": self.observed_at_ms,
                "observing": len(self._checks),
                "observed_change": self.observed_change(),
            }

    # ------------------------------------------------------------------------------ one round

    def next_due(self) -> float | None:
        with self._lock:
            return min((c.due for c in self._checks.values()), default=None)

    def step(self) -> bool:
        """Check every entity that is due; True when what is published changed (the problems, or
        ``observed_at_ms`` after an answer)."""
        now = self._clock()
        with self._lock:
            due = [c for c in self._checks.values() if c.due <= now]
        if not due:
            return False
        changed = False
        probed = False
        for check in due:
            try:
                broker = self._asker()
                if not probed:  # its own broker first: any broker answers a topic or a quota
                    self._probe(broker)
                    probed = True
                found = compare(check.entity, check.keys, self.broker_id, self.model, broker)
            except KafkaUnavailable as exc:
                self._drop_asker()
                changed |= self._set_unreachable(check, exc)
                with self._lock:
                    for other in due:  # one answer missing is the broker gone: all wait alike
                        if self._checks.get(other.entity.path) is other:
                            other.due = self._clock() + other.backoff.next_delay()
                break
            except ConfigctlError as exc:  # refused (a topic gone, no permission): not a mismatch
                self._once("cannot ask the broker about", check.entity.path, one_line(exc))
                with self._lock:
                    if self._checks.get(check.entity.path) is check:
                        del self._checks[check.entity.path]
                continue
            self._answered()
            self._settle(check, found)
            changed = True
        return changed

    def _probe(self, broker: Asker) -> None:
        """Does its own broker answer? Any refusal of this question (no permission to describe its
        configs, say) leaves nothing observable either: it counts as the broker not answering,
        never as a question to drop, so no change is taken as applied unasked."""
        try:
            broker.describe_broker(self.broker_id, [agreement.PROBE_KEY])
        except KafkaUnavailable:
            raise
        except ConfigctlError as exc:
            raise KafkaUnavailable(
                f"broker {self.broker_id} refused to describe itself: {one_line(exc)}"
            ) from None

    def _settle(self, check: Check, found: list[agreement.Mismatch]) -> bool:
        now = self._clock()
        path = check.entity.path
        changed = False
        with self._lock:
            if self._checks.get(path) is not check:
                return False  # superseded while asking: the newer check decides
            self.counters["observations"] += 1
            differing = {m.key: m for m in found}
            for key in [k for (p, k) in self._mismatches if p == path and k not in differing]:
                del self._mismatches[(path, key)]  # converged
                log.info("%s", printable(f"broker {self.broker_id} now agrees on {path} {key}"))
                changed = True
            if not found:
                del self._checks[path]
                return changed
            settled = now - check.since >= SETTLE_S
            if settled:
                for mismatch in found:
                    changed |= self._report(check, mismatch)
                check.reported = True
            if now - check.since >= GIVE_UP_S:
                if not check.slow:
                    check.slow = True
                    log.warning(
                        "%s",
                        printable(
                            f"broker {self.broker_id} still disagrees on {path} after {GIVE_UP_S:g}s; "
                            f"asking again every {SLOW_RECHECK_S:g}s"
                        ),
                    )
                check.due = now + SLOW_RECHECK_S
                check.keys = frozenset(check.keys | differing.keys())
                return changed
            delay = check.backoff.next_delay()
            check.due = now + delay if settled else min(now + delay, check.since + SETTLE_S)
            check.keys = frozenset(check.keys | differing.keys())
        return changed

    def _report(self, check: Check, mismatch: agreement.Mismatch) -> bool:
        key = (mismatch.entity_path, mismatch.key)
        old = self._mismatches.get(key)
        if old is not None and (old.expected, old.reported, old.change_number) == (
            mismatch.expected,
            mismatch.reported,
            check.change_number,
        ):
            return False
        self._mismatches.pop(key, None)
        self._mismatches[key] = Problem(
            MISMATCH,
            mismatch.entity_path,
            check.change_number,
            mismatch.reason,
            at_ms=self._wall_ms(),
            key=mismatch.key,
            expected=mismatch.expected,
            reported=mismatch.reported,
        )
        while len(self._mismatches) > MAX_MISMATCHES:
            self._mismatches.pop(next(iter(self._mismatches)))
        seen = (MISMATCH, mismatch.entity_path, mismatch.key, mismatch.expected)
        if seen not in self._logged:
            self._logged.add(seen)
            self.counters["mismatch_problems"] += 1
            log.warning(
                "%s",
                printable(
                    f"mismatch: {mismatch.entity_path} (change {check.change_number}): broker "
                    f"{self.broker_id} does not run it: {mismatch.reason}"
                ),
            )
        return True

    def _set_unreachable(self, check: Check, exc: Exception) -> bool:
        with self._lock:
            if self._unreachable is not None:
                return False
            self._unreachable = Problem(
                UNREACHABLE,
                None,
                check.change_number,
                f"broker {self.broker_id} does not answer: {one_line(exc)}",
                at_ms=self._wall_ms(),
            )
            self.counters["unreachable_problems"] += 1
        log.warning("%s", printable(f"unreachable: {self._unreachable.reason}; will keep asking"))
        return True

    def _answered(self) -> bool:
        with self._lock:
            self.observed_at_ms = self._wall_ms()
            if self._unreachable is None:
                return False
            self._unreachable = None
        log.info("broker %d answers again", self.broker_id)
        return True

    def _once(self, what: str, path: str, reason: str) -> None:
        seen = ("error", path, reason, None)
        if seen not in self._logged:
            self._logged.add(seen)
            log.warning("%s", printable(f"{what} {path}: {reason}"))

    def _asker(self) -> Asker:
        if self._broker is None:
            self._broker = _Counted(self._connect(), self.counters)
        return self._broker

    def _drop_asker(self) -> None:
        broker, self._broker = self._broker, None
        if broker is not None:
            try:
                broker.close()
            except Exception:  # closing a client whose broker is gone: nothing to keep
                log.debug("closing the Admin API client failed", exc_info=True)

    # ------------------------------------------------------------------------------ the thread

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, name=f"configctl-observer-{self.broker_id}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop asking; a question still in flight (up to its timeout) is left to the daemon thread,
        so a listener stops promptly even beside a broker that hangs."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                return
        self._drop_asker()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._stopping:
                    due = self.next_due()
                    wait = None if due is None else due - self._clock()
                    if wait is not None and wait <= 0:
                        break
                    self._lock.wait(wait)
                if self._stopping:
                    return
            try:
                if self.step():
                    self._on_change()
            except Exception:  # never let the observer die: log, and try again later
                if self._stopping:
                    return
                log.warning("observing the broker failed (will retry)", exc_info=True)
                with self._lock:
                    if not self._stopping:
                        self._lock.wait(BACKOFF_MAX_S)


class _Counted:
    """An :class:`Asker` that counts the questions put to the broker (``admin_requests``: what a
    sidecar costs the broker per change, reported by ``make bench``)."""

    def __init__(self, asker: Asker, counters: dict[str, int]) -> None:
        self._asker, self._counters = asker, counters

    def describe_broker(self, broker_id: int, keys: Iterable[str] | None = None) -> dict[str, ReportedConfig]:
        self._counters["admin_requests"] += 1
        return self._asker.describe_broker(broker_id, keys)

    def describe_topic(self, topic: str, keys: Iterable[str] | None = None) -> dict[str, ReportedConfig]:
        self._counters["admin_requests"] += 1
        return self._asker.describe_topic(topic, keys)

    def client_quotas(self, entity: Entity) -> dict[str, str]:
        self._counters["admin_requests"] += 1
        return self._asker.client_quotas(entity)

    def scram_credentials(self, user: str) -> dict[str, int]:
        self._counters["admin_requests"] += 1
        return self._asker.scram_credentials(user)

    def close(self) -> None:
        self._asker.close()
