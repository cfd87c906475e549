"""The store every feature talks to: its roles, their vocabulary, and what a store can do.

A feature (the write path, its impact check, ``describe --effective``, ``status`` and ``--wait``,
history and rollback, desired state, canaries and waves) is written against the roles in
:mod:`configctl.store.roles` and the words in :mod:`configctl.store.vocabulary`, and nothing below
them; this package's front door names them all. Which implementation plays each role is decided
once, where the command opens its store (:func:`configctl.cli.context.new_store`), and composed
explicitly (:class:`configctl.store.composed.Store`); no command and no feature asks which it got.
A store says what it can do as data (:class:`Capabilities`). Nothing here does I/O.
"""

from configctl.store.capabilities import Capabilities, Unsupported
from configctl.store.composed import Store
from configctl.store.roles import (
    CHANGES,
    FLEET_PARTS,
    ROLLOUTS,
    STATUS,
    ActiveRollout,
    ConfigReads,
    ConfigStore,
    ConfigWrites,
    Connection,
    FleetState,
    FleetWatch,
    History,
    Notifications,
    Registrations,
    Rollouts,
    Watches,
)
from configctl.store.vocabulary import (
    ABSENT,
    Change,
    CommitInterrupted,
    Committed,
    NodeOp,
    Notification,
    Stored,
    VersionConflict,
    version_after,
)

__all__ = [
    "ABSENT",
    "CHANGES",
    "FLEET_PARTS",
    "ROLLOUTS",
    "STATUS",
    "ActiveRollout",
    "Capabilities",
    "Change",
    "CommitInterrupted",
    "Committed",
    "ConfigReads",
    "ConfigStore",
    "ConfigWrites",
    "Connection",
    "FleetState",
    "FleetWatch",
    "History",
    "NodeOp",
    "Notification",
    "Notifications",
    "Registrations",
    "Rollouts",
    "Store",
    "Stored",
    "Unsupported",
    "VersionConflict",
    "Watches",
    "version_after",
]
