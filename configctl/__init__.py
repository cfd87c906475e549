"""configctl: dynamic configuration management for Kafka-style broker fleets.

The core (entities, catalogue, validation, precedence) is pure and importable without
ZooKeeper or Spark; the ``zk`` package is the one place that talks to ZooKeeper.
"""

__version__ = "0.1.0"
