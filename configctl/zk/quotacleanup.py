"""Emptied quota nodes removed as Kafka 3.5+ removes them, so a write through configctl leaves the tree Kafka would.

Kafka 3.5+ deletes a user, client or IP node whose config becomes empty (``tryCleanQuotaNodes``),
with the ``clients`` directory and the user node it leaves empty. A write that empties such a node
deletes it in the same multi instead of setting ``{}``; brokers of every version read a missing
node as an empty config, so the notification still carries the change. A rollout predicts the
removal (:data:`CLEANED_TYPES`) so its undo can re-create the node.
"""

from __future__ import annotations

from collections.abc import Sequence

from configctl.entities import CONFIG_ROOT, Entity, EntityType
from configctl.errors import InvalidInput
from configctl.store import Change
from configctl.zk.session import ZkSession
from configctl.znodes import decode_entity_config

CLEANED_TYPES = (EntityType.USERS, EntityType.CLIENTS, EntityType.IPS)
"""Types whose emptied nodes are deleted, as Kafka 3.5+ does (a rollout predicts it to undo it)."""


def removals(session: ZkSession, changes: Sequence[Change]) -> dict[Entity, tuple[tuple[str, int], ...]]:
    """Quota and IP nodes left empty by ``changes`` that Kafka 3.5+ deletes, each with the
    versions to delete at: the paths a multi deletes instead of writing the entity's node.

    A node is deleted only if it has no children; a user+client node's ``clients`` directory
    goes with it when it was the only client, and the user node too when that leaves it with
    no config and no other child.
    """
    emptied = [
        c
        for c in changes
        if c.expected_version >= 0
        and c.exact is None
        and (c.remove_node or (not c.config and c.entity.type in CLEANED_TYPES))
    ]
    if not emptied:
        return {}
    others = {c.entity for c in changes}
    kids = session.children_many([c.entity.znode for c in emptied])
    result: dict[Entity, tuple[tuple[str, int], ...]] = {}
    for change, children in zip(emptied, kids, strict=True):
        if children:
            continue
        paths = [(change.entity.znode, change.expected_version)]
        entity = change.entity
        if entity.client is not None:
            user_path = f"{CONFIG_ROOT}/users/{entity.stored_name}"
            clients_path = f"{user_path}/clients"
            user_entity = Entity(EntityType.USERS, entity.name, literal=entity.literal)
            if session.children(clients_path) == [entity.stored_client]:
                paths.append((clients_path, -1))
                user = session.get(user_path)
                if (
                    user is not None
                    and user_entity not in others
                    and session.children(user_path) == ["clients"]
                    and _is_empty_config(user[0])
                ):
                    paths.append((user_path, user[1].version))
        result[entity] = tuple(paths)
    return result


def _is_empty_config(data: bytes) -> bool:
    try:
        return not decode_entity_config(data)
    except InvalidInput:
        return False
