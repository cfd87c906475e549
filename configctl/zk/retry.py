"""Retry policies: how long to keep trying, and how to wait between tries, in one place.

Every retry in configctl is one of these, built on kazoo's ``KazooRetry`` (exponential backoff
with jitter, a deadline, an interrupt hook):

* :func:`connection_retry`: reconnecting a dropped session (forever; the session timeout decides);
* :func:`command_retry`: one read or write that met a dropped connection (a few tries, within the
  command timeout);
* :func:`conflict_retry`: a version-checked write that lost a race (re-read, re-apply, retry);
* :class:`Backoff`: the delays of a long-running worker that retries a failed step until stopped.
"""

from __future__ import annotations

from kazoo.retry import ForceRetryError, KazooRetry, RetryFailedError

RetryNow = ForceRetryError
"""Raised inside a retried callable to ask for another try (a lost race, say)."""
RetriesExhausted = RetryFailedError
"""Raised by a policy once its tries or its deadline are used up."""

CONFLICT_ATTEMPTS = 200


def connection_retry() -> KazooRetry:
    return KazooRetry(max_tries=-1, max_delay=1.0)


def command_retry(timeout: float) -> KazooRetry:
    return KazooRetry(max_tries=3, deadline=timeout, max_delay=1.0)


def conflict_retry(max_tries: int = CONFLICT_ATTEMPTS) -> KazooRetry:
    """Retries a callable that raises ``kazoo.retry.ForceRetryError`` when it lost a race.

    Short, jittered waits: racing writers to one entity spread apart instead of colliding again.
    Exhausted, it raises ``kazoo.retry.RetryFailedError``.
    """
    return KazooRetry(max_tries=max_tries, delay=0.001, backoff=2, max_delay=0.05, max_jitter=1.0)


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
