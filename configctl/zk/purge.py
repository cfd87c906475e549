"""Expiring change notifications: Kafka's purge of ``/config/changes``, without a round trip per node.

Kafka's ``ZkNodeChangeNotificationListener.purgeObsoleteNotifications`` reads the stat of every
notification and deletes those older than the expiry. Sequence numbers grow with creation time,
so ctime is (almost) monotonic in the number: one ``exists`` on the oldest child says whether
anything has expired; only then a binary search (O(log n) ``exists``) finds the boundary
(:func:`expired_prefix`), and everything below it is deleted with pipelined deletes that ignore
nodes another broker already removed. The first not-expired node's ctime is remembered, so most
purges cost no round trip at all. A random jitter on the expiry age, per purger, spreads a
fleet's purges apart: the broker with the smallest jitter does the work, the rest find the nodes
gone.

**One purger at a time.** Kafka's brokers all purge; at fleet size that is N listeners looking up
the oldest node after every change, and every delete waking all N child watches for a re-list.
configctl need not: a purger first holds the lease, an ephemeral node (:data:`LEASE_PATH`, under
configctl's own ``/configctl``, never inside Kafka's ``/config``) that lives as long as its
holder's session (:class:`PurgeLease`). The others do no purge work at all and look whether the
lease is free once every :data:`LEASE_CHECK_S` (a read, jittered); a holder that dies frees it
with its session. The holder purges at most once every ``purge_interval_s`` (a tenth of the expiry,
at most a minute), so deletes come in batches: one wake-up of the fleet per batch, not per change.
A purger that may not create the lease (ACLs on ``/configctl``) purges without one, as Kafka does.
``lease_path=None`` is Kafka's way: everyone purges.

Purging is best effort: a purger that may not delete notifications (Kafka's ACLs, no
credentials) logs it once and tries again after :data:`PURGE_RETRY_S` (a
:class:`configctl.retrying.Backoff` of constant delay); it never holds up its caller.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence

from kazoo.exceptions import NodeExistsError, NoNodeError

from configctl.errors import ConfigctlError, PermissionDenied, ZooKeeperUnavailable, one_line, printable
from configctl.retrying import Backoff
from configctl.zk.errors import translate_errors
from configctl.zk.session import ZkSession
from configctl.znodes import CONFIGCTL_ROOT

MAX_JITTER_MS = 30_000
LEASE_PATH: str | None = f"{CONFIGCTL_ROOT}/purge-lease"
"""The purge lease every listener's purge uses by default (None: every purger purges, Kafka's way)."""
LEASE_CHECK_S = 60.0
"""How often a purger without the lease looks whether it is free (each wait 0.5-1.5 times it)."""
MAX_PURGE_INTERVAL_S = 60.0
PURGE_RETRY_S = 60.0
"""After a failed purge (no permission to delete, say), wait this long before trying again."""


def expired_prefix(
    names: Sequence[str], ctime_ms: Callable[[str], int | None], cutoff_ms: int
) -> tuple[int, int | None]:
    """How many of ``names`` (oldest first) were created before ``cutoff_ms``, by binary search.

    Returns ``(count, ctime)`` where ``ctime`` is the creation time of ``names[count]`` when it
    was looked up (None otherwise). A node that no longer exists counts as expired: only a purge
    removes notifications. Costs 1 lookup when nothing expired, O(log n) otherwise.
    """
    if not names:
        return 0, None
    first = ctime_ms(names[0])
    if first is not None and first >= cutoff_ms:
        return 0, first
    low, high = 1, len(names)  # names[:low] expired; names[high:] not expired (or past the end)
    boundary_ctime: int | None = None
    while low < high:
        middle = (low + high) // 2
        ctime = ctime_ms(names[middle])
        if ctime is None or ctime < cutoff_ms:
            low = middle + 1
        else:
            high = middle
            boundary_ctime = ctime
    return low, boundary_ctime if low < len(names) else None


class PurgeLease:
    """An ephemeral node held by at most one session: its holder is the fleet's one purger.

    Holding is known without a round trip (the node lives exactly as long as the session that
    created it); not holding costs one ``exists`` every :data:`LEASE_CHECK_S`, and a ``create``
    only when the node is gone. ``available`` turns False for good when the lease may not be
    created (ACLs): the caller then purges without it.
    """

    def __init__(self, session: ZkSession, path: str, logger: logging.Logger) -> None:
        self.session = session
        self.path = path
        self._log = logger
        self._held_by: int | None = None  # the session id that created the node
        self._next_look = 0.0
        self.available = True
        self.stats = {"lease_checks": 0, "lease_claims": 0}

    def held(self) -> bool:
        """This session holds the lease (claiming it if it is free and it is time to look)."""
        current = self.session.session_id
        if current is not None and current == self._held_by:
            return True
        if self._held_by is not None:  # held by a session that ended: its node went with it
            self._held_by, self._next_look = None, 0.0
        now = time.monotonic()
        if current is None or now < self._next_look:
            return False
        self._next_look = now + LEASE_CHECK_S * random.uniform(0.5, 1.5)
        self.stats["lease_checks"] += 1
        try:
            with translate_errors(f"stat {self.path}"):
                stat = self.session.exists(self.path)
            if stat is not None and stat.ephemeralOwner != current:
                return False
            if stat is None:
                self.stats["lease_claims"] += 1
                with translate_errors(f"create {self.path}"):
                    self.session.client.create_async(self.path, b"", ephemeral=True, makepath=True).get(
                        timeout=self.session.timeout
                    )
        except NodeExistsError:
            return False  # another purger was quicker
        except NoNodeError:
            return False
        except PermissionDenied as exc:
            self.available = False
            self._log.info("purging without a lease (%s): every listener purges", printable(one_line(exc)))
            return False
        self._held_by = current
        self._log.info("holding the purge lease %s: this listener purges expired notifications", self.path)
        return True

    def give_up(self) -> None:
        """Release the lease for good (this purger may not delete): another purger may have the right.

        The node is deleted only while it is still this session's; from then on the caller purges
        without a lease (and keeps failing on its own, every :data:`PURGE_RETRY_S`).
        """
        self.available = False
        held, self._held_by = self._held_by, None
        if held is None or held != self.session.session_id:
            return
        try:
            stat = self.session.exists(self.path)
            if stat is not None and stat.ephemeralOwner == held:
                self.session.client.delete_async(self.path, version=stat.version).get(
                    timeout=self.session.timeout
                )
        except Exception as exc:  # best effort: the node goes with the session anyway
            self._log.debug("could not release the purge lease: %s", exc)
        self._log.info("gave up the purge lease %s: this listener may not delete notifications", self.path)


class NotificationPurge:
    """Deletes the notifications under ``path`` created more than ``expiration_ms`` ago.

    Names are sequential (a prefix and 10 zero-padded digits): string order is creation order.
    ``jitter_ms`` is the most this purger adds to the expiry (default: a tenth of it, at most
    30 s); the jitter itself is drawn once, at random.
    """

    def __init__(
        self,
        session: ZkSession,
        path: str,
        *,
        expiration_ms: int,
        jitter_ms: int | None = None,
        clock: Callable[[], float] = time.time,
        logger: logging.Logger | None = None,
        lease_path: str | bool | None = True,
        purge_interval_s: float | None = None,
    ) -> None:
        """``lease_path``: True for :data:`LEASE_PATH` (read when built), None or False for none."""
        self.session = session
        self.path = path.rstrip("/")
        self.expiration_ms = int(expiration_ms)
        if jitter_ms is None:
            jitter_ms = min(MAX_JITTER_MS, self.expiration_ms // 10)
        self.jitter_ms = random.uniform(0, max(0, jitter_ms))
        self._clock = clock
        self._log = logger or logging.getLogger(__name__)
        if lease_path is True:
            lease_path = LEASE_PATH
        self.lease = PurgeLease(session, lease_path, self._log) if lease_path else None
        if purge_interval_s is None:
            purge_interval_s = min(MAX_PURGE_INTERVAL_S, self.expiration_ms / 10_000)
        self.purge_interval_s = max(0.0, float(purge_interval_s))
        self._next_purge = 0.0  # monotonic: a lease holder's next purge (batches deletes)
        self._hint: tuple[str, int] | None = None  # (name, ctime) of a node known not to have expired
        self._retry = Backoff(PURGE_RETRY_S, PURGE_RETRY_S)
        self._not_before = 0.0  # monotonic time before which no purge is tried (after a failure)
        self._error: str | None = None
        self.stats: dict[str, int] = {
            "purged_notifications": 0,
            "purge_lookups": 0,
            "purge_searches": 0,
            "purge_errors": 0,
        }

    def forget_hint(self) -> None:
        """Nothing is known about the oldest node any more (a new session, a full reload)."""
        self._hint = None

    def purge(self, names: set[str]) -> list[str]:
        """Delete what expired among ``names``; returns the expired names (now gone).

        A failure is logged once and retried after :data:`PURGE_RETRY_S`, never raised, except
        a lost connection (:class:`ZooKeeperUnavailable`), which fails the caller's step.
        """
        if not names or time.monotonic() < self._not_before:
            return []
        lease = self.lease
        try:
            if lease is not None and lease.available:
                if time.monotonic() < self._next_purge or not lease.held():
                    return []
                self._next_purge = time.monotonic() + self.purge_interval_s
            expired = self._purge(names)
        except ZooKeeperUnavailable:
            raise  # the connection went away: the caller retries its step as a whole
        except ConfigctlError as exc:
            self.stats["purge_errors"] += 1
            if isinstance(exc, PermissionDenied) and lease is not None and lease.available:
                lease.give_up()  # let a purger that may delete take the lease
            self._not_before = time.monotonic() + self._retry.next_delay()
            reason = one_line(exc)
            if reason != self._error:
                self._log.warning(
                    "cannot purge expired notifications (trying again in %.0f s): %s",
                    PURGE_RETRY_S,
                    printable(reason),
                )
            self._error = reason
            return []
        self._retry.reset()
        self._error = None
        return expired

    def _purge(self, names: set[str]) -> list[str]:
        cutoff = int(self._clock() * 1000) - self.expiration_ms - int(self.jitter_ms)
        hint = self._hint
        if hint is not None and hint[0] <= min(names) and hint[1] >= cutoff:
            return []  # the oldest node is no older than one known not to have expired
        ordered = sorted(names)

        def ctime(name: str) -> int | None:
            self.stats["purge_lookups"] += 1
            stat = self.session.exists(f"{self.path}/{name}")
            return None if stat is None else stat.ctime

        self.stats["purge_searches"] += 1
        count, boundary_ctime = expired_prefix(ordered, ctime, cutoff)
        if count < len(ordered) and boundary_ctime is not None:
            self._hint = (ordered[count], boundary_ctime)
        elif count == len(ordered):
            self._hint = None
        if not count:
            return []
        started = time.monotonic()
        deleted = self.session.delete_nodes(f"{self.path}/{name}" for name in ordered[:count])
        self.stats["purged_notifications"] += deleted
        self._log.info(
            "purged %d expired notification(s) up to %s in %.0f ms",
            deleted,
            printable(ordered[count - 1]),
            (time.monotonic() - started) * 1000,
        )
        return ordered[:count]


__all__ = [
    "LEASE_CHECK_S",
    "LEASE_PATH",
    "PURGE_RETRY_S",
    "NotificationPurge",
    "PurgeLease",
    "expired_prefix",
]
