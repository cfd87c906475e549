"""ZooKeeper's retry policies: :mod:`configctl.retrying`'s ideas adapted to kazoo's ``KazooRetry``.

Inside the edge a retried call also meets kazoo's own errors (a lost connection is retried, not
only a lost race), so the policies here are ``KazooRetry`` (exponential backoff with jitter, a
deadline, an interrupt hook); the conflict policy's waits are :mod:`configctl.retrying`'s, which
the features use, and a worker's delays are its :class:`~configctl.retrying.Backoff`:

* :func:`connection_retry`: reconnecting a dropped session (forever; the session timeout decides);
* :func:`command_retry`: one read or write that met a dropped connection (a few tries, within the
  command timeout);
* :func:`conflict_retry`: a version-checked step inside the edge that lost a race (re-read, retry).
"""

from __future__ import annotations

from kazoo.retry import ForceRetryError, KazooRetry, RetryFailedError

from configctl.retrying import CONFLICT_ATTEMPTS, ConflictWaits

RetryNow = ForceRetryError
"""Raised inside a retried callable to ask for another try (a lost race, say)."""
RetriesExhausted = RetryFailedError
"""Raised by a policy once its tries or its deadline are used up."""


def connection_retry() -> KazooRetry:
    return KazooRetry(max_tries=-1, max_delay=1.0)


def command_retry(timeout: float) -> KazooRetry:
    return KazooRetry(max_tries=3, deadline=timeout, max_delay=1.0)


def conflict_retry(max_tries: int = CONFLICT_ATTEMPTS) -> KazooRetry:
    """Retries a callable that raises ``kazoo.retry.ForceRetryError`` when it lost a race.

    Short, jittered waits: racing writers to one entity spread apart instead of colliding again.
    Exhausted, it raises ``kazoo.retry.RetryFailedError``.
    """
    return KazooRetry(
        max_tries=max_tries,
        delay=ConflictWaits.DELAY,
        backoff=ConflictWaits.BACKOFF,
        max_delay=ConflictWaits.MAX_DELAY,
        max_jitter=ConflictWaits.JITTER,
    )
