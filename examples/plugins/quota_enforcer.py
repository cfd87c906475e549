"""A client quota enforcer: Kafka's produce / fetch / mutation quotas as token buckets.

The broker's request path asks :meth:`ClientQuotaEnforcer.record` how long to throttle a client
after it used some of its quota (bytes produced, bytes fetched, partitions mutated). Each
``(user, client-id, kind)`` has a token bucket refilled at the quota rate that may hold
``burst_seconds`` worth of tokens; a client may go into debt, and the debt divided by the rate is
its throttle time, which is how Kafka's own quota manager behaves.

Which rate applies comes from the listener, which resolves Kafka's eight-level quota precedence
(``users/<u>/clients/<c>`` ... ``clients/<default>``): the enforcer never re-implements it. When a
quota changes anywhere, every bucket is re-rated from the listener's answer, keeping its fill
level as a fraction, so a lowered quota takes effect on the next request without forgiving debt.

Validation refuses a rate that is not a positive number, and byte rates below ``min_byte_rate``
(default 1 KiB/s): such a quota would stall every client it applies to, which is almost always a
typo (``producer_byte_rate=1024`` meant, ``=10`` written). A refused change is not applied by
any plugin, and the listener reports it in the broker state.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Set
from dataclasses import dataclass

from configctl.listener import ConfigUpdate, ConfigView, PluginContext, Reconfigurable

#: kind of usage -> the quota key that limits it
KINDS = {
    "produce": "producer_byte_rate",
    "fetch": "consumer_byte_rate",
    "mutation": "controller_mutation_rate",
}
_BYTE_RATES = {"producer_byte_rate", "consumer_byte_rate"}
_UNLIMITED = float(2**63 - 1)


def parse_rate(name: str, raw: str | None) -> float:
    """A quota value as a rate; Kafka's default (Long.MAX_VALUE / Integer.MAX_VALUE) means unlimited."""
    if raw is None:
        return math.inf
    try:
        rate = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"{name}={raw} must be a positive number")
    return math.inf if rate >= min(_UNLIMITED, 2.147483647e9) else rate


class TokenBucket:
    """Tokens accrue at ``rate`` per second up to ``rate * burst_seconds``; usage may go negative."""

    def __init__(self, rate: float, burst_seconds: float, now: float) -> None:
        self.rate = rate
        self.burst_seconds = burst_seconds
        self.tokens = self.capacity
        self.updated = now

    @property
    def capacity(self) -> float:
        return self.rate * self.burst_seconds

    def _refill(self, now: float) -> None:
        if math.isinf(self.rate):
            return
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def consume(self, amount: float, now: float) -> float:
        """Take ``amount`` tokens; returns how long (seconds) the client should be throttled."""
        if math.isinf(self.rate):
            return 0.0
        self._refill(now)
        self.tokens -= amount
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def set_rate(self, rate: float, now: float) -> None:
        """Change the rate, keeping the fill level as a fraction of capacity (and any debt, re-rated)."""
        self._refill(now)
        if math.isinf(rate) or math.isinf(self.rate):
            self.rate = rate
            self.tokens = self.capacity if not math.isinf(rate) else 0.0
        else:
            fraction = self.tokens / self.capacity if self.capacity else 0.0
            self.rate = rate
            self.tokens = fraction * self.capacity
        self.updated = now


@dataclass(frozen=True)
class BucketKey:
    user: str | None
    client: str | None
    kind: str


class ClientQuotaEnforcer(Reconfigurable):
    """Token-bucket quotas per (user, client id), following the listener's effective quotas."""

    name = "client-quota-enforcer"

    def __init__(
        self,
        *,
        burst_seconds: float = 1.0,
        min_byte_rate: float = 1024.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst_seconds = burst_seconds
        self.min_byte_rate = min_byte_rate
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[BucketKey, TokenBucket] = {}
        self._view: ConfigView | None = None
        self.reconfigurations = 0

    # -- Reconfigurable ---------------------------------------------------------------------------

    def configure(self, context: PluginContext) -> None:
        self._view = context.view

    def reconfigurable_configs(self) -> Set[str]:
        return set(KINDS.values())

    def validate_reconfiguration(self, update: ConfigUpdate) -> None:
        for name in sorted(update.changed & set(KINDS.values())):
            raw = update.value(name)
            rate = parse_rate(name, raw)
            if name in _BYTE_RATES and rate < self.min_byte_rate:
                raise ValueError(
                    f"{name}={raw} is below this enforcer's floor of {self.min_byte_rate:g} bytes/s "
                    "(it would stall every client it applies to)"
                )

    def reconfigure(self, update: ConfigUpdate) -> None:
        """A quota changed somewhere: re-rate every bucket from the listener's resolution."""
        now = self._clock()
        with self._lock:
            for key, bucket in self._buckets.items():
                bucket.set_rate(self._rate(key), now)
            self.reconfigurations += 1

    # -- the broker's request path ----------------------------------------------------------------

    def record(self, user: str | None, client: str | None, kind: str, amount: float) -> float:
        """Record usage; returns the throttle time in seconds (0.0 when within quota)."""
        if kind not in KINDS:
            raise ValueError(f"unknown quota kind {kind!r} (expected one of {', '.join(KINDS)})")
        key = BucketKey(user, client, kind)
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(self._rate(key), self.burst_seconds, now)
            return bucket.consume(amount, now)

    def rate(self, user: str | None, client: str | None, kind: str) -> float:
        """The rate currently enforced for (user, client, kind) (inf: unlimited)."""
        with self._lock:
            bucket = self._buckets.get(BucketKey(user, client, kind))
            return bucket.rate if bucket is not None else self._rate(BucketKey(user, client, kind))

    def _rate(self, key: BucketKey) -> float:
        if self._view is None:
            return math.inf
        name = KINDS[key.kind]
        effective = self._view.quota_config(key.user, key.client).get(name)
        try:
            return parse_rate(name, effective.value if effective is not None else None)
        except ValueError:
            return math.inf
