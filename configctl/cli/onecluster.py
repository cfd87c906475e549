"""``--zookeeper`` and ``--bootstrap-server`` must name one Kafka cluster: checked before the first write.

With both options a write is split: a running broker's config goes through the brokers at
``--bootstrap-server``, and everything else (other entities, configctl's history, rollout records,
the change notifications configctl writes) goes to ``--zookeeper``. Given two clusters' addresses,
that would write the broker config into one cluster and its history and notifications into the
other, and print the other cluster's change number. Kafka's brokers report the cluster's id in
their metadata, and ZooKeeper holds it in ``/cluster/id``: they must be equal.

When: once, before the store's first write (or ``--dry-run`` validation), which is the first time
a command needs a broker for its own work. A read-only command is not held to it (it reads
ZooKeeper only) and pays nothing for it; a write pays one metadata request, before anything is
written anywhere. The store's choice point
(:func:`configctl.cli.context.new_store`) composes this around the Admin API writes.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

from configctl.errors import WrongCluster
from configctl.store import Capabilities, Change, Committed, ConfigWrites, NodeOp


class OneCluster:
    """The writes role (:class:`configctl.store.ConfigWrites`) of ``writes``, refused with
    :class:`~configctl.errors.WrongCluster` before the first write unless the brokers' cluster id
    (``kafka_id``) is the one ZooKeeper holds (``zookeeper_id``)."""

    def __init__(
        self,
        writes: ConfigWrites,
        *,
        kafka_id: Callable[[], str | None],
        zookeeper_id: Callable[[], str | None],
        bootstrap: str,
        zookeeper: str,
    ) -> None:
        self.writes = writes
        self._kafka_id = kafka_id
        self._zookeeper_id = zookeeper_id
        self._bootstrap = bootstrap
        self._zookeeper = zookeeper
        self._checked = False

    def check(self) -> None:
        """Refuse (one line) unless both options name the same cluster; asked once per store."""
        if self._checked:
            return
        theirs = self._kafka_id()
        ours = self._zookeeper_id()
        refusal = same_cluster(theirs, ours, bootstrap=self._bootstrap, zookeeper=self._zookeeper)
        if refusal is not None:
            raise WrongCluster(refusal)
        self._checked = True

    @property
    def capabilities(self) -> Capabilities:
        return self.writes.capabilities

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        self.check()
        return self.writes.commit(changes, reason=reason, extra=extra)

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        self.check()
        return (yield from self.writes.commit_batches(changes, reason=reason, in_flight=in_flight))

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        return self.writes.landed(changes)

    def validate(self, changes: Sequence[Change]) -> None:
        self.check()
        self.writes.validate(changes)


def same_cluster(
    kafka_id: str | None, zookeeper_id: str | None, *, bootstrap: str, zookeeper: str
) -> str | None:
    """Why ``--bootstrap-server`` (cluster ``kafka_id``) and ``--zookeeper`` (``zookeeper_id``,
    from ``/cluster/id``) are not one cluster, or None when they are."""
    if kafka_id is not None and kafka_id == zookeeper_id:
        return None
    brokers = f"cluster {kafka_id}" if kafka_id else "a cluster that reports no id"
    held = f"cluster {zookeeper_id}" if zookeeper_id else "no Kafka cluster id (/cluster/id absent)"
    return (
        f"--bootstrap-server {bootstrap} is {brokers} but --zookeeper {zookeeper} holds {held}: "
        "both must name the same Kafka cluster; nothing was written"
    )
