"""Which ACL a node configctl creates gets: Kafka's ``zookeeper.set.acl=true`` layout.

Without credentials nodes are open, as in a default Kafka install. With an identity (``--zk-auth
digest:...`` or ``--zk-sasl``) the creator has every right and the world may read, except under
the sensitive roots, which the world may not read: users (SCRAM credentials) and brokers
(encrypted passwords), as Kafka's ``ZkData.SensitiveRootPaths`` says, plus configctl's history
of those same entities (it holds the same values).

The creator is named (``sasl:alice``, ``digest:admin:<hash>``) when the client knows its own
name; under Kerberos (``--zk-sasl gssapi``) only the server knows the principal, so the ACL says
``auth`` (ZooKeeper's "whoever created it", what Kafka itself writes) and the server fills it in.
"""

from __future__ import annotations

from typing import Any

from kazoo.security import ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, Id, Permissions, make_digest_acl

from configctl.entities import CONFIG_ROOT, EntityType
from configctl.zkconnection import ConnectionSettings
from configctl.znodes import HistoryZNodes, RolloutZNode

_SENSITIVE_TYPES = (EntityType.USERS, EntityType.BROKERS)
SENSITIVE_ROOTS: tuple[str, ...] = (
    *(f"{root}/{etype.value}" for root in (CONFIG_ROOT, HistoryZNodes.ROOT) for etype in _SENSITIVE_TYPES),
    RolloutZNode.ROOT,  # a rollout records the previous bytes of the entities it writes, users' included
)


def is_sensitive_path(path: str) -> bool:
    """True for a node at or below a sensitive root."""
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)


class AclPolicy:
    """The ACL for each path, for one connection's identity."""

    def __init__(self, settings: ConnectionSettings) -> None:
        self._owner: Any | None = None
        if settings.sasl is not None and settings.sasl.user:
            self._owner = ACL(Permissions.ALL, Id("sasl", settings.sasl.user))
        elif settings.sasl is not None:
            self._owner = ACL(Permissions.ALL, Id("auth", ""))
        elif settings.digest is not None:
            self._owner = make_digest_acl(settings.digest.user, settings.digest.password, all=True)

    @property
    def secured(self) -> bool:
        return self._owner is not None

    def acl_for(self, path: str) -> list[Any]:
        if self._owner is None:
            return list(OPEN_ACL_UNSAFE)
        if is_sensitive_path(path):
            return [self._owner]
        return [self._owner, *READ_ACL_UNSAFE]
