"""Where the store has no watches (a KRaft cluster), the console asks again on an interval.

On ZooKeeper the hub's documents move when a watch tells them to (:mod:`configctl.zk.fleetwatch`).
A KRaft cluster tells nobody anything: no configctl listener publishes a state, and Kafka's
Admin API has no watch on configs or registrations. So the hub asks the cluster again every
:data:`POLL_INTERVAL` seconds, with :class:`Polling` in place of the store's fleet watch, and
every browser is still told only when a document really moved (the hub compares each rebuilt
document with the last one).

Each poll reads through a store opened for it (``reopen``, handed over by ``configctl serve``):
the KRaft store reads configctl's history topic once and keeps it for its life, which suits a
command that ends in a second, not a console that runs for weeks and must see the records other
configctl processes write meanwhile.
"""

from __future__ import annotations

POLL_INTERVAL = 5.0
"""Seconds between two polls of a store without watches (KRaft). Each poll asks the cluster
(DescribeCluster, DescribeQuorum), each registered broker for its own and the ``<default>``
layers, reads configctl's history topic and every entity's config (for the writes made outside
configctl): a few requests per broker and about a dozen more. Every 5 s that is a light,
constant load on the cluster whatever the number of browsers (a shorter interval multiplies it,
every entity's config included), and a change reaches the pages within about 5 s, where
ZooKeeper's watches take well under one."""


class Polling:
    """The :class:`~configctl.store.roles.FleetWatch` of a store without watches: it holds none
    and tells nothing; the hub's own interval (:data:`POLL_INTERVAL`) looks at everything."""

    everything: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return 0

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def refresh(self, keys: set[str]) -> set[str]:
        return set()


__all__ = ["POLL_INTERVAL", "Polling"]
