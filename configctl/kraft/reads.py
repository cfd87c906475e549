"""What a KRaft cluster stores for an entity, read through the Admin API in configctl's terms.

KRaft keeps dynamic configs as metadata records, and the only way in is the brokers' (or the
controllers') Admin API: DescribeConfigs reports every layer of a topic's or broker's config, of
which configctl's "stored config" is the one dynamic layer the entity owns (its source tells
which); DescribeClientQuotas reports what is stored for exactly one quota or IP entity; SCRAM
credentials are reported by mechanism and iteration count only (Kafka never hands out a salted
password, so configctl shows what Kafka shows: ``iterations=N``). Kafka 4's groups and
client-metrics subscriptions are config resources of their own, described as topics are: their
stored config is the layer at their own source. A broker's loggers (``broker-loggers/<id>``) are
asked of that broker: every logger it has, at the level it reports (they live in its memory, not
in the metadata).

Sensitive values (passwords) come back as null: they are stored here as
:data:`configctl.secrets.MASK`, so a describe shows that a key is set without its value.
"""

from __future__ import annotations

from configctl import secrets
from configctl.adminapi.client import KafkaAdmin
from configctl.entities import Entity, EntityType
from configctl.reported import ReportedConfig
from configctl.secrets import MASK

OWN_SOURCE = {
    "topic": "DYNAMIC_TOPIC_CONFIG",
    "broker": "DYNAMIC_BROKER_CONFIG",
    "default": "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "groups": "DYNAMIC_GROUP_CONFIG",
    "client-metrics": "DYNAMIC_CLIENT_METRICS_CONFIG",
}
"""The DescribeConfigs source of the layer each kind of entity owns (its "stored" config)."""


def own_layer(reported: dict[str, ReportedConfig], source: str) -> dict[str, str]:
    """The keys ``reported`` holds at ``source`` (the entity's own layer), a hidden value masked."""
    return {
        name: MASK if entry.value is None else entry.value
        for name, entry in sorted(reported.items())
        if entry.source == source
    }


def scram_config(mechanisms: dict[str, int]) -> dict[str, str]:
    """A user's SCRAM credentials as configctl shows them on KRaft: mechanism → ``iterations=N``."""
    return {mechanism: secrets.shown_iterations(n) for mechanism, n in sorted(mechanisms.items())}


def read_entity(admin: KafkaAdmin, entity: Entity, any_broker: int | None) -> dict[str, str]:
    """The config ``entity`` has in the cluster ({} when none is set). ``any_broker`` answers for
    the cluster-wide broker default (None: no broker runs, so there is nothing to ask)."""
    if entity.type is EntityType.TOPICS:
        return own_layer(admin.describe_topic(entity.name), OWN_SOURCE["topic"])
    if entity.type.in_broker_memory:  # a broker's loggers: asked of that broker, every one
        return admin.logger_levels(entity)
    if entity.type.kraft_only:  # groups, client-metrics: a config resource of their own
        return own_layer(admin.describe_resource(entity), OWN_SOURCE[entity.type.value])
    if entity.type is EntityType.BROKERS:
        if entity.is_default:
            if any_broker is None:
                return {}
            return own_layer(admin.describe_broker(any_broker, default=True), OWN_SOURCE["default"])
        return own_layer(admin.describe_broker(int(entity.name)), OWN_SOURCE["broker"])
    config = admin.client_quotas(entity)
    if entity.type is EntityType.USERS and entity.client is None and not entity.is_default:
        config.update(scram_config(admin.scram_credentials(entity.name)))
    return dict(sorted(config.items()))


__all__ = ["OWN_SOURCE", "own_layer", "read_entity", "scram_config"]
