"""Kafka's ``/config`` tree as a broker follows it: entity directories listed, entity nodes read.

What a broker reads (Kafka's ``DynamicConfigManager`` at start and for each change), in few round
trips: the entity directories pipelined, the nodes as ZooKeeper multiReads (a thousand a request;
pipelined reads on servers without it). Unlike the write side's strict reads
(:mod:`configctl.zk.configstore`), a node or directory that may not be read (Kafka's ACLs on
``/config/users``, say) is answered by its :mod:`configctl.errors` exception in its place: the
broker reports that one and applies the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from configctl.entities import CONFIG_ROOT, Entity, EntityType
from configctl.zk.session import ZkSession

Listing = list[str] | Exception | None
"""A directory's sorted children; the error that kept it from being listed; None when absent."""
Data = bytes | Exception | None
"""A node's bytes; the error that kept it from being read; None when absent."""
Stamped = tuple[Data, int | None]
"""A node as read, with the zxid of the last write to what was read (:meth:`ConfigTree.stamped`)."""


class ConfigTree:
    """Reads of ``/config`` that never fail as a whole for one node (see the module docstring)."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session

    def list_types(self, types: Sequence[EntityType]) -> list[Listing]:
        """The entity names stored under each ``/config/<type>``, in the order given."""
        return self.session.children_many([f"{CONFIG_ROOT}/{t.value}" for t in types], node_errors=True)

    def list_clients(self, users: Sequence[str]) -> list[Listing]:
        """The client names stored under each ``/config/users/<user>/clients`` (stored user names)."""
        return self.session.children_many(
            [f"{CONFIG_ROOT}/users/{u}/clients" for u in users], node_errors=True
        )

    def read(self, entities: Sequence[Entity], *, known: Mapping[str, Any] | None = None) -> list[Data]:
        """Each entity's config node, in the order given, in one round trip of latency.

        ``known``: nodes already read (by path, as :meth:`ZkSession.get_many` answers with
        ``node_errors``) that are new enough for the caller; only the others are asked for."""
        if not entities:
            return []
        paths = [entity.znode for entity in entities]
        if known:
            asked = [path for path in paths if path not in known]
            answers = dict(zip(asked, self.session.get_many(asked, node_errors=True), strict=True))
            return _data([known[path] if path in known else answers[path] for path in paths])
        return _data(self.session.get_many(paths, node_errors=True))

    def stamped(self, entities: Sequence[Entity]) -> list[Stamped]:
        """Each entity's config node now, in one round trip, with the zxid of the last write to
        it: the node's ``mzxid``, or for an absent node its directory's ``pzxid`` (the last child
        made or deleted there, its own deletion included). The zxid is None where it cannot be
        known (the node unreadable, its directory absent)."""
        if not entities:
            return []
        paths = [entity.znode for entity in entities]
        parents = sorted({path.rpartition("/")[0] for path in paths})
        found = self.session.get_many(paths + parents, node_errors=True)
        directories = dict(zip(parents, found[len(paths) :], strict=True))
        result: list[Stamped] = []
        for path, answer in zip(paths, found[: len(paths)], strict=True):
            if isinstance(answer, tuple):
                result.append((answer[0], answer[1].mzxid))
            elif answer is None:
                directory = directories[path.rpartition("/")[0]]
                result.append((None, directory[1].pzxid if isinstance(directory, tuple) else None))
            else:
                result.append((answer, None))
        return result

    def read_chunks(self, entities: Sequence[Entity], chunk: int) -> Iterator[list[Data]]:
        """:meth:`read` ``chunk`` entities at a time, in order, the next chunk asked for when the
        caller is done with this one: 100,000 raw nodes are never held at once. Stats are not
        decoded (a full load has no use for them)."""
        for found in self.session.iter_many(
            [entity.znode for entity in entities], node_errors=True, chunk=chunk, stats=False
        ):
            yield _data(found)


def _data(found: list[Any]) -> list[Data]:
    return [answer[0] if isinstance(answer, tuple) else answer for answer in found]


__all__ = ["ConfigTree", "Data", "Listing", "Stamped"]
