"""What a simulated fleet is made of: Kafka's built-in defaults, the server.properties every broker
shares, and the values ZooKeeper's changes and injected drift pick from.

Plain tables, no rule: :mod:`configctl.audit.simulation_model` answers what a broker runs from
them (its built-in defaults), :mod:`configctl.audit.simulation_build` draws the base state, the
changes and the drift from them. Secrets are digests (:func:`configctl.secrets.digest`), as a
listener writes them.
"""

from __future__ import annotations

from configctl.secrets import digest

# Built-in defaults of the broker keys the simulated brokers report (Kafka 3.9 values).
BUILTIN: dict[str, str | None] = {
    "advertised.listeners": None,
    "auto.create.topics.enable": "true",
    "background.threads": "10",
    "broker.id": "-1",
    "broker.rack": None,
    "compression.type": "producer",
    "default.replication.factor": "1",
    "delete.topic.enable": "true",
    "group.initial.rebalance.delay.ms": "3000",
    "leader.imbalance.check.interval.seconds": "300",
    "listeners": "PLAINTEXT://:9092",
    "log.cleaner.dedupe.buffer.size": "134217728",
    "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
    "log.cleaner.threads": "1",
    "log.cleanup.policy": "delete",
    "log.dirs": None,
    "log.retention.hours": "168",
    "log.segment.bytes": "1073741824",
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    "message.max.bytes": "1048588",
    "min.insync.replicas": "1",
    "num.io.threads": "8",
    "num.network.threads": "3",
    "num.partitions": "1",
    "num.recovery.threads.per.data.dir": "1",
    "num.replica.fetchers": "1",
    "offsets.topic.replication.factor": "3",
    "queued.max.requests": "500",
    "replica.fetch.max.bytes": "1048576",
    "replica.lag.time.max.ms": "30000",
    "socket.receive.buffer.bytes": "102400",
    "socket.request.max.bytes": "104857600",
    "socket.send.buffer.bytes": "102400",
    "ssl.keystore.password": None,
    "ssl.truststore.password": None,
    "transaction.state.log.replication.factor": "3",
    "unclean.leader.election.enable": "false",
    "zookeeper.connect": None,
    "zookeeper.session.timeout.ms": "18000",
}

# server.properties every broker shares (identity keys are added per broker).
STATIC_SHARED: dict[str, str] = {
    "zookeeper.connect": "zk-1:2181,zk-2:2181,zk-3:2181/kafka",
    "num.network.threads": "8",
    "num.io.threads": "16",
    "num.partitions": "6",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "auto.create.topics.enable": "false",
    "log.retention.hours": "72",
    "offsets.topic.replication.factor": "3",
    "socket.request.max.bytes": "104857600",
    "ssl.truststore.password": digest("fleet-truststore-secret"),
}

# Keys a broker's server.properties may set differently (skew); none is ever set dynamically.
SKEW_VALUES: dict[str, tuple[str, ...]] = {
    "num.io.threads": ("8", "24", "32"),
    "num.network.threads": ("3", "5", "16"),
    "num.partitions": ("3", "12"),
    "log.retention.hours": ("168", "24"),
    "queued.max.requests": ("1000", "2000"),
    "replica.fetch.max.bytes": ("4194304",),
    "replica.lag.time.max.ms": ("10000", "45000"),
    "ssl.truststore.password": (digest("old-truststore-secret"),),
}

# brokers/<default> keys: the base set, and the values later changes or patches pick from.
DEFAULT_BASE: dict[str, str] = {"message.max.bytes": "2097152", "max.connections": "20000"}
DEFAULT_VALUES: dict[str, tuple[str, ...]] = {
    "message.max.bytes": ("2097152", "4194304", "8388608"),
    "max.connections": ("20000", "30000", "50000"),
    "log.segment.bytes": ("536870912", "268435456"),
    "compression.type": ("lz4", "zstd"),
    # a double: written as a broker reports it (Double.toString), as a listener's snapshot has it
    "log.cleaner.io.max.bytes.per.second": ("5.24288E7", "1.048576E8"),
    "background.threads": ("16", "20"),
    "max.connections.per.ip": ("1000", "500"),
}

# Keys operators set per broker (brokers/<id>); the keystore password is a secret.
PER_BROKER_VALUES: dict[str, tuple[str, ...]] = {
    "num.replica.fetchers": ("2", "4", "8"),
    "log.cleaner.threads": ("2", "4"),
    "num.recovery.threads.per.data.dir": ("2", "4"),
    "listener.name.internal.ssl.keystore.password": (),  # a per-broker digest, made on the spot
}

TOPIC_PREFIXES = (
    "orders",
    "payments",
    "clicks",
    "inventory",
    "audit-log",
    "metrics",
    "sessions",
    "shipments",
)
TOPIC_VALUES: dict[str, tuple[str, ...]] = {
    "retention.ms": ("86400000", "259200000", "604800000", "3600000", "1209600000"),
    "cleanup.policy": ("compact", "delete", "compact,delete"),
    "min.insync.replicas": ("1", "2", "3"),
    "max.message.bytes": ("2097152", "5242880", "10485760"),
    "segment.bytes": ("268435456", "536870912"),
    "compression.type": ("lz4", "zstd", "snappy"),
    "retention.bytes": ("1073741824", "10737418240", "-1"),
}

QUOTA_BASE: dict[str, dict[str, str]] = {
    "clients/<default>": {"consumer_byte_rate": "10485760"},
    "clients/reporting": {"consumer_byte_rate": "2097152"},
    "users/<default>": {"producer_byte_rate": "5242880"},
    "users/User%3Aalice": {
        "producer_byte_rate": "1048576",
        "SCRAM-SHA-256": digest("salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"),
    },
    "users/User%3Abob/clients/app-1": {"request_percentage": "200"},
    "ips/<default>": {"connection_creation_rate": "100"},
    "ips/10.1.2.3": {"connection_creation_rate": "20"},
}
QUOTA_VALUES: dict[str, tuple[str, ...]] = {
    "consumer_byte_rate": ("10485760", "20971520", "4194304"),
    "producer_byte_rate": ("1048576", "2097152", "5242880"),
    "request_percentage": ("200", "150", "50"),
    "connection_creation_rate": ("100", "50", "20", "10"),
    "SCRAM-SHA-256": tuple(digest(f"salt=cm90YXRlZA==,rotation={i}") for i in range(3)),
}
