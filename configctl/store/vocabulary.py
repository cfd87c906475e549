"""The words every store speaks: a config as read, a change to write, what committed, and the version rule.

Shared by every implementation of the store's roles (:mod:`configctl.store.roles`) and by the
features on them: :class:`Stored` (a config as read, with its version), :class:`Change` (a config
to write if the entity is still at the version read), :class:`Committed`, :class:`NodeOp` (another
node in the same transaction), :class:`Notification`, :class:`VersionConflict` and
:class:`CommitInterrupted`; and the one version rule (:func:`version_after`). No I/O, and nothing
above the core: rollout records (:mod:`configctl.rollout.record`) use the version rule too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from configctl.entities import Entity
from configctl.errors import ZooKeeperUnavailable
from configctl.znodes import encode_entity_config

ABSENT = -1
"""The version of an entity whose node does not exist (:attr:`Stored.version`, :attr:`Change.expected_version`)."""


def version_after(expected_version: int) -> int:
    """The version an entity's node has after a write that found it at ``expected_version``:
    created at 0 when it was absent (:data:`ABSENT`), else one on.

    The one home of this rule (the store's commit, what landed after a lost connection, a
    rollout's undo record). A write that removes an emptied quota node leaves it absent instead
    (Kafka 3.5+'s rule, :data:`configctl.zk.quotacleanup.CLEANED_TYPES`); only the store knows that
    for sure, once it has read the node's children.
    """
    return 0 if expected_version < 0 else expected_version + 1


@dataclass(frozen=True)
class Stored:
    """An entity's config as it is in the store; ``version`` is -1 when the node does not exist.

    ``problem`` says why a node that exists could not be read as a Kafka config (``config`` is
    then empty): such a node is reported, and only replaced on an explicit request.
    ``created_ms`` and ``modified_ms`` are the node's creation and last write times as the store
    keeps them (None: not known, or absent): they date writes nobody recorded
    (:mod:`configctl.travel.outside`). They take no part in comparing two reads.
    """

    entity: Entity
    config: dict[str, str]
    version: int
    problem: str | None = None
    created_ms: int | None = field(default=None, compare=False)
    modified_ms: int | None = field(default=None, compare=False)

    @property
    def exists(self) -> bool:
        return self.version >= 0


@dataclass(frozen=True)
class Change:
    """One entity's new config, to be written only if the node still has ``expected_version``.

    A rollout that undoes its own writes restores a node's exact previous bytes, which Kafka or
    another tool may have encoded differently: ``exact`` is then written as is (``config`` is
    what it decodes to, for the history record), and ``remove_node`` deletes a node that did not
    exist before.
    """

    entity: Entity
    config: dict[str, str]
    expected_version: int
    previous: dict[str, str] = field(default_factory=dict)
    exact: bytes | None = None
    remove_node: bool = False

    @cached_property
    def data(self) -> bytes:
        """The bytes the config node gets (encoded once: the size check and the write both need them)."""
        return self.exact if self.exact is not None else encode_entity_config(self.config)


@dataclass(frozen=True)
class NodeOp:
    """A node outside ``/config`` written in the same multi as configs, so both land or neither does
    (a rollout's record, its claims on entities, the owner of a running rollout).

    ``action`` is ``create`` (``ephemeral`` for a node that lives with this session), ``set`` and
    ``delete`` (checked against ``version``; -1 is any) or ``check`` (the node is at ``version``).
    """

    action: str
    path: str
    data: bytes = b""
    version: int = -1
    ephemeral: bool = False


@dataclass(frozen=True)
class Committed:
    entity: Entity
    version: int
    change_number: int | None


@dataclass(frozen=True)
class Notification:
    """A change notification node: its name and change number."""

    name: str
    number: int


class VersionConflict(Exception):
    """A version-checked write found the node moved (someone else wrote first); nothing was written."""


class CommitInterrupted(Exception):
    """A write was cut off with transactions in flight: ``unknown`` may or may not have landed.

    ``committed`` were confirmed before that; ``not_sent`` were never sent. ``failure`` is what cut
    it off when that was not a lost connection (a refusal, the caller's own error); else ``error``
    says the connection went. The write path turns this into
    :class:`configctl.errors.PartiallyWritten` or, after re-reading, a plain answer.
    """

    def __init__(
        self,
        committed: list[Committed],
        unknown: list[Change],
        not_sent: list[Change],
        cause: str,
        failure: BaseException | None = None,
    ) -> None:
        super().__init__(cause)
        self.committed, self.unknown, self.not_sent, self.cause = committed, unknown, not_sent, cause
        self.failure = failure
        self.error = ZooKeeperUnavailable(f"lost the connection to ZooKeeper while writing configs ({cause})")
