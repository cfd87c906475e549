"""What a store can do beyond reading and writing entity configs, declared as data.

A feature that needs more than reads and writes asks ``store.capabilities`` (or
:meth:`Capabilities.require`, which refuses with one line) instead of looking at the
implementation's class.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from configctl.errors import InvalidInput


class Unsupported(InvalidInput):
    """The store the command opened cannot do what the feature needs; nothing was written."""


@dataclass(frozen=True)
class Capabilities:
    """What a store can do beyond reading and writing entity configs, declared as data.

    Each field is one capability a feature may need; :meth:`require` refuses a feature that
    needs one the store lacks, in one line, before anything is written.
    """

    versioned_writes: bool
    """A write names the version it read and fails with :class:`VersionConflict` when the entity
    moved since (``--if-version``, plans checked against what they read, rollback, rollouts)."""
    extra_nodes: bool
    """:meth:`~configctl.store.roles.ConfigWrites.commit` writes other nodes (:class:`NodeOp`) in the same transaction as
    configs (a rollout's record, undo chunks and claims)."""
    watches: bool
    """The store calls back when a broker's published state or a rollout's record changes
    (``--wait``, a rollout's wait and soak): no polling."""
    history: bool
    """Every write is recorded with who, when and why (``history``, ``rollback``)."""
    notifications: bool
    """Every write gets a change number that brokers report having applied (``--wait``, ``status``)."""
    fleet_state: bool
    """What each broker's listener published is readable (``status``, ``describe --effective``,
    a canary's live brokers)."""
    rollout_records: bool
    """Rollout records (:attr:`~configctl.store.roles.ConfigStore.rollouts`): canaries and waves survive their process."""
    brokers_validate: bool = False
    """A running broker's config goes through that broker, which validates it (and encrypts its
    passwords with its own secret): Kafka's refusal of ZooKeeper writes while brokers run does not
    apply, passwords are sent in clear (over the client's TLS), and :meth:`~configctl.store.roles.ConfigWrites.validate`
    asks the broker."""
    broker_reports: bool = False
    """Each broker can be asked, through the Admin API sent to that broker, what it reports for an
    entity (:class:`~configctl.store.roles.BrokerReports`): ``--wait`` asks every registered broker
    until each reports the written value, ``status`` and ``describe --effective --broker N`` show
    what the brokers say (KRaft, where no configctl listener publishes a fleet state)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def require(self, *names: str, what: str) -> None:
        """Refuse ``what`` (a feature, as the operator names it) unless every capability in
        ``names`` is there (:class:`Unsupported`, exit 1)."""
        for name in names:
            if name not in self.names():
                raise ValueError(f"unknown store capability {name!r}")
            if not getattr(self, name):
                raise Unsupported(
                    f"{what} needs {name.replace('_', ' ')}, which the store in use does not offer; "
                    "nothing was written"
                )
