"""Kafka's protocol numbers for what configctl speaks about: config resource types and SCRAM mechanisms. Pure.

The Admin API's requests (:mod:`configctl.adminapi.client`) and the metadata log's records
(:mod:`configctl.kraft.metadatarecords`) carry the same numbers (Kafka's ``ConfigResource.Type``
and ``ScramMechanism``); one table, so the two can never read a number differently.
"""

from __future__ import annotations

from configctl.entities import EntityType

RESOURCE_TYPES = {
    2: EntityType.TOPICS,
    4: EntityType.BROKERS,
    8: EntityType.BROKER_LOGGERS,
    16: EntityType.CLIENT_METRICS,
    32: EntityType.GROUPS,
}
"""Kafka's ``ConfigResource.Type`` numbers, and the family each stands for."""
RESOURCE_TYPE_OF = {family: number for number, family in RESOURCE_TYPES.items()}
"""The ``ConfigResource.Type`` number of each family that has one."""
SCRAM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""Kafka's ``ScramMechanism`` type numbers."""
SCRAM_TYPE_OF = {name: number for number, name in SCRAM_TYPES.items()}

__all__ = ["RESOURCE_TYPES", "RESOURCE_TYPE_OF", "SCRAM_TYPES", "SCRAM_TYPE_OF"]
