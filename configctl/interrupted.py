"""A write cut off after it was sent: what landed, what did not, and what cannot be known.

ZooKeeper answers a multi only once it is applied, so a connection lost (or a Ctrl-C) after a
multi was sent leaves its outcome open. Saying "nothing was written" then could be a lie, and
so could "done". Both write paths (``alter`` and ``apply``) settle it the same way, here: the
entities of the multis in flight are re-read once ZooKeeper answers again (within the session
timeout; ZooKeeper answers those reads only after every request sent before them, so they see
the outcome), and the command ends with exactly what is known (:class:`WriteInterrupted`, exit 8),
or with the original error when nothing can have landed.

A write sent through a Kafka broker and never answered (:class:`~configctl.errors.KafkaAnswerLost`)
is settled the same way, with two differences: a ZooKeeper read is not ordered after the broker's
work, so a write not found there may still land (unknown, never "not committed"), and the broker's
own answer is lost, so the command ends with exit 8 even when every write was found.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from configctl import retrying
from configctl.entities import Entity
from configctl.errors import ConfigctlError, KafkaAnswerLost, PartiallyWritten, ZooKeeperUnavailable, one_line
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


UNKNOWN_ZOOKEEPER = "sent but never answered, ZooKeeper did not come back in time"
UNKNOWN_KAFKA = "sent but never answered, and not in ZooKeeper when re-read: the broker may still write it"


def report(
    what: str,
    total: int,
    committed: Sequence[Entity],
    not_committed: Sequence[Entity],
    unknown: Sequence[Entity],
    unknown_why: str = UNKNOWN_ZOOKEEPER,
) -> str:
    parts = [f"{what}; committed {len(committed)} of {total} entities ({listed(committed) or 'none'})"]
    if not_committed:
        parts.append(f"not committed {len(not_committed)} ({listed(not_committed)})")
    if unknown:
        parts.append(f"unknown {len(unknown)}: {unknown_why} ({listed(unknown)})")
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
    landed, missed, unknown = resolve(store, sent)
    answer_lost = isinstance(cause, KafkaAnswerLost)
    if answer_lost:  # not in ZooKeeper yet is not "never": the broker may still write it
        unknown = [*missed, *unknown]
    done = set(committed) | {c.entity for c in landed}
    lost = {c.entity for c in unknown}
    committed_entities = [c.entity for c in changes if c.entity in done]
    not_committed = [c.entity for c in changes if c.entity not in done and c.entity not in lost]
    if not committed_entities and not unknown:
        raise cause
    if not not_committed and not unknown and not answer_lost:
        return landed
    what = one_line(cause.message if isinstance(cause, ConfigctlError) else cause) or "interrupted"
    if isinstance(cause, KeyboardInterrupt):
        what = "interrupted"
    if answer_lost and landed:
        what += " (re-read from ZooKeeper: it was, and history records it)"
    elif sent and not unknown:
        what += " (the writes in flight were re-read after reconnecting)"
    why = UNKNOWN_KAFKA if answer_lost else UNKNOWN_ZOOKEEPER
    raise WriteInterrupted(
        report(what, len(changes), committed_entities, not_committed, [c.entity for c in unknown], why),
        committed=committed_entities,
        not_committed=not_committed,
        unknown=[c.entity for c in unknown],
    ) from None
