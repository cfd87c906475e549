"""Many multis in flight at once, and the exact account of them when the write is cut off.

A bulk commit (:meth:`configctl.zk.configstore.ZooKeeperStore.commit_batches`) keeps up to
``in_flight`` multis outstanding, so the next one is built while ZooKeeper applies the previous
one. Each is still all or nothing and version-checked. When one fails with
:class:`VersionConflict` no further multi is sent; those already sent are waited for (and yielded
if they committed), then the conflict is raised.

Only this module knows which multis were out when the write stopped, so it says so itself: once
a multi has been sent, any failure (the connection lost, a refusal, Ctrl-C, or the caller's own
failure thrown in at a ``yield`` with ``generator.throw``) ends in :class:`CommitInterrupted`
naming what committed, what was in flight (``unknown``) and what was never sent (``not_sent``);
a failure other than a lost connection is its ``__cause__``. A failure before the first multi
went out is raised as it is: nothing was written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Any

from configctl.errors import one_line
from configctl.store import Change, CommitInterrupted, Committed, VersionConflict
from configctl.zk.errors import LOST, translate_errors
from configctl.zk.multi import Prepared


def send(
    planned: Sequence[list[Change]],
    prepare: Callable[[list[Change]], Prepared],
    finish: Callable[[Prepared, list[Any]], list[Committed]],
    *,
    timeout: float,
    in_flight: int,
) -> Generator[list[Committed], None, None]:
    """Send the multis of ``planned`` (``prepare`` builds each, ``finish`` reads its results),
    up to ``in_flight`` outstanding, yielding each batch that committed, in order."""
    queue: deque[tuple[Prepared, Any]] = deque()
    conflict: VersionConflict | None = None
    committed: list[Committed] = []
    sent = answered = 0  # multis handed to the connection, and answered, in order

    def interrupted(cause: BaseException, failure: BaseException | None = None) -> CommitInterrupted:
        unknown = [c for batch in planned[answered:sent] for c in batch]
        not_sent = [c for batch in planned[sent:] for c in batch]
        return CommitInterrupted(list(committed), unknown, not_sent, one_line(cause), failure)

    def settle() -> list[Committed] | None:
        nonlocal conflict, answered
        prepared, async_result = queue[0]
        try:
            results = async_result.get(timeout=timeout)
        except LOST as exc:
            raise interrupted(exc) from None
        queue.popleft()
        answered += 1
        try:
            with translate_errors("write configs"):
                done = finish(prepared, results)
        except VersionConflict as exc:
            conflict = conflict or exc
            return None
        committed.extend(done)
        return done

    try:
        for batch in planned:
            if conflict is not None:
                break
            prepared = prepare(batch)
            sent += 1  # from here on it may have gone out
            try:
                queue.append((prepared, prepared.transaction.commit_async()))
            except LOST as exc:
                sent -= 1  # refused before it went out: the connection was already gone
                raise interrupted(exc) from None
            while len(queue) >= max(1, in_flight):
                done = settle()
                if done is not None:
                    yield done
        while queue:
            done = settle()
            if done is not None:
                yield done
    except (VersionConflict, CommitInterrupted):
        raise
    except (Exception, KeyboardInterrupt) as exc:
        if sent == 0:
            raise  # nothing went out: "nothing was written" still holds
        raise interrupted(exc, failure=exc) from exc
    if conflict is not None:
        raise conflict
