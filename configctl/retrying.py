"""Trying again: a lost race retried with short jittered waits, and a worker's backoff. Pure.

The features' retries (a version-checked write that lost a race, a rollout abort whose record
moved, re-reading what landed after a lost connection) live here, on the standard library alone,
so no feature reaches into the ZooKeeper edge for a policy; :mod:`configctl.zk.retry` adapts the
same ideas to kazoo for the session's own reconnects and requests.

* :func:`conflict_retry`: calls a function again while it raises :class:`RetryNow` (it lost a
  race: re-read, re-apply), with waits that spread racing writers apart;
* :class:`Backoff`: the delays of a long-running worker that retries a failed step until stopped.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

CONFLICT_ATTEMPTS = 200


class RetryNow(Exception):
    """Raised inside a retried callable to ask for another try (a lost race, say)."""


class RetriesExhausted(Exception):
    """Raised by a policy once its tries are used up."""


class ConflictWaits:
    """Exponential waits from 1 ms to 50 ms, each jittered by up to ±100%, at most ``max_tries`` tries."""

    DELAY, BACKOFF, MAX_DELAY, JITTER = 0.001, 2.0, 0.05, 1.0

    def __init__(self, max_tries: int, sleep: Callable[[float], None] = time.sleep) -> None:
        self.max_tries, self.sleep = max_tries, sleep

    def __call__(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        delay, attempts = self.DELAY, 0
        while True:
            try:
                return func(*args, **kwargs)
            except RetryNow:
                attempts += 1
                if attempts == self.max_tries:
                    raise RetriesExhausted("Too many retry attempts") from None
                pause = delay * random.uniform(1.0 - self.JITTER, 1.0 + self.JITTER)
                self.sleep(pause)
                delay = min(pause * self.BACKOFF, self.MAX_DELAY)


def conflict_retry(max_tries: int = CONFLICT_ATTEMPTS) -> ConflictWaits:
    """Retries a callable that raises :class:`RetryNow` when it lost a race.

    Short, jittered waits: racing writers to one entity spread apart instead of colliding again.
    Exhausted, it raises :class:`RetriesExhausted`.
    """
    return ConflictWaits(max_tries)


class Backoff:
    """Delays for a worker that retries a failed step until it succeeds or is stopped."""

    def __init__(self, start: float = 0.1, maximum: float = 2.0) -> None:
        self.start, self.maximum = start, maximum
        self.failures = 0

    def next_delay(self) -> float:
        """Record one more failure and return how long to wait before the next try."""
        # The exponent stops growing once the maximum is reached: 2**1024 would overflow a float
        # after a thousand failures in a row (a listener without ZooKeeper for half an hour).
        delay = self.maximum if self.failures >= 64 else min(self.maximum, self.start * (2**self.failures))
        self.failures += 1
        return delay

    def reset(self) -> int:
        """A step succeeded: start again from the shortest delay; returns the failures it ended."""
        failures, self.failures = self.failures, 0
        return failures
