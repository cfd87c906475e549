"""Where an effective config value comes from: Kafka's ``ConfigEntry.ConfigSource`` names (docs/reference/json-output.md).

The listener, ``describe --effective``, the snapshot lines and the Spark audit all speak these
names; they live here, in a module with no imports, so the audit job can ship it to a cluster
without anything else. A quota's or an IP's source is the entity path that supplied it instead.
"""

from __future__ import annotations

DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DEFAULT_CONFIG = "DEFAULT_CONFIG"

DYNAMIC_BROKER_SOURCES: tuple[str, ...] = (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG)
"""A broker key set in ZooKeeper (``brokers/<id>`` or ``brokers/<default>``)."""

SERVER_PROPERTIES_SOURCES: tuple[str, ...] = (STATIC_BROKER_CONFIG, DEFAULT_CONFIG)
"""A broker key not set in ZooKeeper: server.properties or Kafka's built-in default."""
