"""Writes Kafka's own ZooKeeper admin path refuses, refused here too (before anything is written).

* A config for a topic that does not exist: Kafka's ``AdminZkClient.validateTopicConfig`` refuses
  it, and for good reason: creating the topic later writes its own config node over ours, so the
  settings would silently vanish. (Only where Kafka registers topics under ``/brokers/topics``.)
* A broker config while the affected brokers run: ``kafka-configs.sh --zookeeper`` refuses it
  (``validateBrokersNotRunning``) so that a running broker's own validation is not skipped; a
  per-broker config needs that broker down, a ``<default>`` one every broker down. configctl
  follows Kafka unless the operator says ``--allow-running-brokers`` (its listeners validate as
  they apply, and report what they refuse).
* An IP entity whose name is neither an IP address nor a host name that resolves: Kafka 3.9's
  ``kafka-configs.sh`` and its brokers (``DynamicConfig.Ip.isValidIpEntity``) refuse it, since a
  broker could never match a connection to it (a real broker shows it in ``tests/kafka``).

Pure: the registrations are read by :mod:`configctl.zk.registrations`, names resolved by
:mod:`configctl.ips`.
"""

from __future__ import annotations

from collections.abc import Iterable

from configctl.entities import Entity, EntityType


def refusals(
    entities: Iterable[Entity],
    *,
    running_brokers: set[int] | None,
    existing_topics: set[str] | None,
    allow_running_brokers: bool = False,
    unresolved_ips: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[str]:
    """One sentence per entity Kafka would not let this write touch (empty: go ahead)."""
    problems = []
    for entity in entities:
        if entity.type is EntityType.IPS and entity.name in unresolved_ips:
            problems.append(
                f"the entity name for ips must be a valid IP or resolvable host, but {entity.name!r} "
                "does not resolve here (Kafka refuses it too)"
            )
        if (
            entity.type is EntityType.TOPICS
            and existing_topics is not None
            and entity.name not in existing_topics
        ):
            problems.append(
                f"topic {entity.name!r} does not exist in this Kafka cluster; create it first "
                "(its creation would overwrite a config written now)"
            )
        if entity.type is EntityType.BROKERS and running_brokers and not allow_running_brokers:
            if entity.user_is_default:
                problems.append(
                    f"{len(running_brokers)} Kafka broker(s) are running (/brokers/ids): Kafka's ZooKeeper path "
                    "refuses cluster-wide broker configs then; use --allow-running-brokers to write anyway"
                )
            elif int(entity.name) in running_brokers:
                problems.append(
                    f"Kafka broker {entity.name} is running (/brokers/ids/{entity.name}): Kafka's ZooKeeper path "
                    "refuses its broker configs then; use --allow-running-brokers to write anyway"
                )
    return problems
