"""The KRaft side of a cluster in migration, read where it is held: the KRaft brokers, else the controllers.

From the moment a migrating cluster's KRaft controllers take it over (KIP-866), their metadata
log is the cluster's metadata and ZooKeeper is its copy. Which node can say what that log holds
depends on the brokers:

- **Every broker runs KRaft** (steps 6 on): a broker answers from its own copy of the metadata
  log, so the KRaft store reads every family as it always does.
- **A broker still runs ZooKeeper mode** (steps 3 to 5, and during the rolling restart of step 6):
  such a broker answers DescribeConfigs, DescribeClientQuotas and SCRAM reads from ZooKeeper, so
  asking the brokers would compare ZooKeeper with itself. The controllers are asked instead
  (KIP-919). A 3.9.2 controller in migration mode answers from its own metadata for every topic
  and for the cluster-wide broker default (shown in ``tests/migration``). It answers for no other
  broker id ("Unexpected broker id"), serves no DescribeClientQuotas and refuses
  DescribeUserScramCredentials. So per-broker configs, quotas and SCRAM credentials have no
  reader on the KRaft side yet: they are named as unread, with why, never taken as equal.

A controller serves no Metadata request to list topics by, and so the topics asked about are
the ones ZooKeeper holds and the ones the brokers' metadata lists. In migration, that metadata
is the KRaft controller's, sent to every broker.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from configctl.adminapi.client import UNKNOWN_TOPIC, describe_request, described
from configctl.adminapi.controllers import OPTION, ControllerClient
from configctl.adminapi.nodemodes import broker_answers, broker_quorum, quorum_addresses
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput
from configctl.kafkacodes import RESOURCE_TYPE_OF
from configctl.kraft.reads import OWN_SOURCE, own_layer
from configctl.kraft.store import OWN_TOPICS, KRaftStore
from configctl.store import Stored

_TOPIC = RESOURCE_TYPE_OF[EntityType.TOPICS]
_BROKER = RESOURCE_TYPE_OF[EntityType.BROKERS]
_HELD = 0
"""The version given to what a controller reports: it exists (a controller keeps no configctl version)."""


@dataclass
class KRaftSide:
    """What the KRaft side holds, as far as it can be read now, and who said it."""

    stored: list[Stored]
    running_brokers: set[int] | None
    """The brokers a per-broker config can be asked of (None: not known)."""
    read_from: str
    """``brokers`` or ``controllers``."""
    unread: dict[str, str] = field(default_factory=dict)
    """Family → why the KRaft side cannot report it now (``migrationcheck.FAMILIES``' names)."""


def read_side(
    store: KRaftStore,
    types: Iterable[EntityType],
    zookeeper_topics: Iterable[str],
    controllers: str | None,
) -> KRaftSide:
    """The KRaft side of the cluster ``store`` reaches, for the entity ``types`` compared:
    from the brokers once every answering broker runs KRaft, else from the controllers
    (``controllers``: ``--bootstrap-controller``, else the quorum a broker runs with), with
    ``zookeeper_topics`` among the topics asked about."""
    wanted = tuple(types)
    answers = broker_answers(store.admin)
    still = sorted(node for node, answer in answers.items() if answer.problem is None and not answer.kraft)
    if not still:
        stored = [s for t in wanted for s in store.read_type(t, strict=False)]
        return KRaftSide(stored, store.running_brokers(), "brokers")
    addresses = quorum_addresses(controllers) if controllers else broker_quorum(store.admin, sorted(answers))
    if not addresses:
        raise InvalidInput(
            f"brokers {_ids(still)} still run ZooKeeper mode and answer from ZooKeeper, and they name no "
            f"KRaft controller to ask instead: give the controllers with {OPTION}"
        )
    topics = sorted((set(store.admin.topic_names()) | set(zookeeper_topics)) - OWN_TOPICS)
    with ControllerClient(",".join(addresses), store.command_config, store.timeout) as client:
        stored = controllers_hold(client, topics if EntityType.TOPICS in wanted else ())
    why = f"{{}} and brokers {_ids(still)} still answer from ZooKeeper (step 6 checks it)"
    unread = {
        "brokers": why.format("a KRaft controller describes no other broker's config"),
        "quotas": why.format("a KRaft controller serves no DescribeClientQuotas"),
        "scram": why.format("a KRaft controller refuses DescribeUserScramCredentials"),
    }
    return KRaftSide(stored, None, "controllers", unread)


def controllers_hold(client: ControllerClient, topics: Iterable[str]) -> list[Stored]:
    """Each topic's config and the broker default as the controllers hold them (one request each);
    a topic the controllers do not have is left out."""
    names = list(topics)
    found: list[Stored] = []
    if names:
        what = f"describe {len(names)} topics"
        answers = described(client.send(describe_request(_TOPIC, names), what), what, {UNKNOWN_TOPIC})
        for name in names:
            if name in answers:
                config = own_layer(answers[name], OWN_SOURCE["topic"])
                found.append(Stored(Entity.of(EntityType.TOPICS, name), config, _HELD))
    what = "describe the broker defaults"
    default = described(client.send(describe_request(_BROKER, [""]), what), what)[""]
    found.append(
        Stored(Entity.named(EntityType.BROKERS, ""), own_layer(default, OWN_SOURCE["default"]), _HELD)
    )
    return found


def _ids(brokers: list[int]) -> str:
    return ", ".join(str(b) for b in brokers)


__all__ = ["KRaftSide", "controllers_hold", "read_side"]
