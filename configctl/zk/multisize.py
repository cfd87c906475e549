"""What fits in one ZooKeeper multi: the request limits, what one change costs, and the batches a bulk write is cut into.

ZooKeeper refuses a request over ``jute.maxbuffer`` (1 MiB by default). A config node that could
not be written together with its notification is refused before the write (:func:`check_sizes`);
a bulk commit is cut into multis below the limit (:func:`batches`, what
:meth:`configctl.zk.configstore.ZooKeeperStore.commit_batches` sends); and a rollout, whose multis
also carry its record, undo chunk and claims, gets a fixed share of one (:data:`BUDGET_BYTES`,
:data:`MAX_OPS`). One home for these numbers, so the store and its rollouts cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from configctl.errors import InvalidInput
from configctl.store import Change
from configctl.znodes import encode_entity_config

MAX_MULTI_BYTES = 900_000
"""Bytes one multi may carry: ZooKeeper's jute.maxbuffer is 1 MiB, minus room for framing."""
MAX_MULTI_OPS = 1000
MAX_CONFIG_BYTES = 850_000
"""The largest config node configctl writes: it must fit one multi with its notification."""
OPS_PER_CHANGE = 3  # config node, notification, history record (a new entity's is its history directory)
_OPS_PER_REMOVAL = 5  # up to three deletes (node, clients directory, user) instead of the config node

# -- a rollout's share of one multi -------------------------------------------------------------------

BUDGET_BYTES = MAX_MULTI_BYTES - 100_000
"""Bytes of entity data one rollout multi may carry: the store's multi, less room for the record
node with its events, the undo chunk's own framing and the claims."""
MAX_OPS = MAX_MULTI_OPS - 100
"""Operations per rollout multi: the store's, less room for the record, undo and claim nodes."""
MAX_WRITES_PER_MULTI = MAX_OPS // 6
"""Entities per multi (each is up to six operations with its notification and history)."""
PLAN_CHUNK_BYTES = BUDGET_BYTES // 2
"""The largest ``plan-NNNN`` node: a plan of 100,000 topics is recorded in a few hundred of them."""


def check_sizes(changes: Sequence[Change]) -> None:
    """Refuse, before anything is written, a config node too large to go with its notification."""
    for change in changes:
        size = len(change.data)
        if size > MAX_CONFIG_BYTES:
            raise InvalidInput(
                f"{change.entity.label}: the config would be {size:,} bytes; ZooKeeper takes at most "
                f"{MAX_CONFIG_BYTES:,} in one transaction with its notification; nothing was written"
            )


def batches(changes: Sequence[Change]) -> Iterator[list[Change]]:
    """Split ``changes`` into multis below ZooKeeper's request size (what ``commit_batches`` sends)."""
    batch: list[Change] = []
    size = ops = 0
    for change in changes:
        cost = _change_size(change)
        change_ops = OPS_PER_CHANGE if change.config else _OPS_PER_REMOVAL
        if batch and (size + cost > MAX_MULTI_BYTES or ops + change_ops > MAX_MULTI_OPS):
            yield batch
            batch, size, ops = [], 0, 0
        batch.append(change)
        size += cost
        ops += change_ops
    if batch:
        yield batch


def _change_size(change: Change) -> int:
    """Bytes one change adds to a multi: config node, history record (config + delta), paths."""
    config = _config_size(change.config)
    delta = sum(len(k) + len(v) + 8 for k, v in change.previous.items() if change.config.get(k) != v)
    return config * 2 + delta + len(change.entity.znode) * 4 + 400


def _config_size(config: dict[str, str]) -> int:
    """The exact length of ``encode_entity_config(config)``, without encoding in the usual case.

    Batching a bulk apply sizes every change; plain ASCII keys and values (nearly all configs)
    need no JSON escaping, so their encoded length is just the characters plus punctuation.
    """
    size = len('{"version":1,"config":{}}') - 1
    for key, value in config.items():
        if not (_plain_ascii(key) and _plain_ascii(value)):
            return len(encode_entity_config(config))
        size += len(key) + len(value) + 6  # "key":"value",
    return size if config else size + 1


def _plain_ascii(text: str) -> bool:
    return (
        isinstance(text, str)
        and text.isascii()
        and text.isprintable()
        and '"' not in text
        and "\\" not in text
    )
