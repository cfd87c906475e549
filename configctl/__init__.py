"""configctl: dynamic configuration management for Kafka-style broker fleets.

The core (entities, catalogue, validation, precedence) is pure and importable without
ZooKeeper or Spark; ``zkstore`` is the one module that talks to ZooKeeper.
"""

__version__ = "0.1.0"
