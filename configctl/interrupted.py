"""A write cut off after it was sent: what landed, what did not, and what cannot be known.

ZooKeeper answers a multi only once it is applied, so a connection lost (or a Ctrl-C) after a
multi was sent leaves its outcome open. Saying "nothing was written" then could be a lie, and
so could "done". Both write paths (``alter`` and ``apply``) settle it the same way, here: the
entities of the multis in flight are re-read once ZooKeeper answers again (within the session
timeout; ZooKeeper answers those reads only after every request sent before them, so they see
the outcome), and the command ends with exactly what is known (:class:`WriteInterrupted`, exit 8),
or with the original error when nothing can have landed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from configctl import retrying
from configctl.entities import Entity
from configctl.errors import ConfigctlError, PartiallyWritten, ZooKeeperUnavailable, one_line
from configctl.store import Change, ConfigStore

RETRY_PAUSE = 0.25
"""The pause between re-reads while ZooKeeper is away (a constant :class:`~configctl.retrying.Backoff`)."""
NAMED = 3
"""Entities named per list in the one-line message (``--output json`` has them all)."""


class WriteInterrupted(PartiallyWritten):
    """What was committed, not committed, and unknown (exit 8), as entity paths and as entities."""

    def __init__(
        self,
        message: str,
        *,
        committed: Sequence[Entity],
        not_committed: Sequence[Entity],
        unknown: Sequence[Entity],
    ) -> None:
        super().__init__(
            message,
            committed=[e.path for e in committed],
            not_committed=[e.path for e in not_committed],
            unknown=[e.path for e in unknown],
        )
        self.committed_entities = list(committed)
        self.not_committed_entities = list(not_committed)
        self.unknown_entities = list(unknown)

    def to_json(self) -> dict[str, list[str]]:
        return {"committed": self.committed, "not_committed": self.not_committed, "unknown": self.unknown}


def resolve(store: ConfigStore, sent: Sequence[Change]) -> tuple[list[Change], list[Change], list[Change]]:
    """Split changes sent but never answered into landed, not landed and unknown, by re-reading."""
    if not sent:
        return [], [], []
    deadline = time.monotonic() + store.timeout
    pauses = retrying.Backoff(RETRY_PAUSE, RETRY_PAUSE)
    while True:  # re-read until ZooKeeper answers, within the store's timeout
        try:
            landed, missed = store.landed(sent)
            break
        except ZooKeeperUnavailable:
            pause = pauses.next_delay()
            if time.monotonic() + pause >= deadline:
                return [], [], list(sent)
            time.sleep(pause)
        except (ConfigctlError, KeyboardInterrupt):
            return [], [], list(sent)
    # A node moved by someone else since is neither ours nor untouched: unknown, and said so.
    still = {c.entity for c in missed if _untouched(store, c)}
    return landed, [c for c in missed if c.entity in still], [c for c in missed if c.entity not in still]


def _untouched(store: ConfigStore, change: Change) -> bool:
    try:
        return store.read(change.entity, strict=False).version == change.expected_version
    except ConfigctlError:
        return False


def listed(entities: Sequence[Entity], limit: int = NAMED) -> str:
    shown = ", ".join(e.label for e in entities[:limit])
    more = len(entities) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def report(
    what: str,
    total: int,
    committed: Sequence[Entity],
    not_committed: Sequence[Entity],
    unknown: Sequence[Entity],
) -> str:
    parts = [f"{what}; committed {len(committed)} of {total} entities ({listed(committed) or 'none'})"]
    if not_committed:
        parts.append(f"not committed {len(not_committed)} ({listed(not_committed)})")
    if unknown:
        parts.append(
            f"unknown {len(unknown)}: sent but never answered, ZooKeeper did not come back in time "
            f"({listed(unknown)})"
        )
    return "; ".join(parts) + "; run plan or describe to see what is left (--output json lists every entity)"


def settle(
    store: ConfigStore,
    changes: Sequence[Change],
    committed: Sequence[Entity],
    sent: Sequence[Change],
    cause: BaseException,
) -> list[Change]:
    """After ``cause`` stopped a write with ``sent`` in flight: return what landed if everything
    asked for is accounted as written; raise the truth otherwise (``cause`` itself when nothing
    can have landed, :class:`WriteInterrupted` when part of it did or it cannot be known)."""
    landed, _missed, unknown = resolve(store, sent)
    done = set(committed) | {c.entity for c in landed}
    lost = {c.entity for c in unknown}
    committed_entities = [c.entity for c in changes if c.entity in done]
    not_committed = [c.entity for c in changes if c.entity not in done and c.entity not in lost]
    if not committed_entities and not unknown:
        raise cause
    if not not_committed and not unknown:
        return landed
    what = one_line(cause.message if isinstance(cause, ConfigctlError) else cause) or "interrupted"
    if isinstance(cause, KeyboardInterrupt):
        what = "interrupted"
    if sent and not unknown:
        what += " (the writes in flight were re-read after reconnecting)"
    raise WriteInterrupted(
        report(what, len(changes), committed_entities, not_committed, [c.entity for c in unknown]),
        committed=committed_entities,
        not_committed=not_committed,
        unknown=[c.entity for c in unknown],
    ) from None
