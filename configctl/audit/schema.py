"""The snapshot format (Contract 4) as the audit reads it, and the key lists that shape findings.

Spark is told the schema instead of inferring it: inference reads the whole input once more,
and a fleet where one file happens to hold only nulls would infer a different type than the
rest. ``_corrupt_record`` catches lines that are not JSON objects of this shape, so a bad
line is counted instead of failing the job. This module needs only the standard library
(pyspark is imported when the Spark schema is asked for), so the CLI reads its constants
without paying for pyspark, and it ships to a cluster with ``--py-files``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

CORRUPT_COLUMN = "_corrupt_record"

# Contract 4: one JSON object per line with exactly these fields (name, Spark type).
SNAPSHOT_FIELDS: tuple[tuple[str, str], ...] = (
    ("broker_id", "int"),
    ("change_number", "long"),
    ("entity_path", "string"),
    ("name", "string"),
    ("value", "string"),
    ("source", "string"),
    ("captured_at_ms", "long"),
)
FIELD_NAMES: tuple[str, ...] = tuple(name for name, _ in SNAPSHOT_FIELDS)

# Every field but ``value`` must be present (a value may legitimately be null: a key with no default).
REQUIRED_FIELDS: tuple[str, ...] = tuple(name for name in FIELD_NAMES if name != "value")


def snapshot_schema() -> StructType:
    """The explicit read schema: Contract 4's fields, all nullable, plus ``_corrupt_record``."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {"int": IntegerType(), "long": LongType(), "string": StringType()}
    fields = [StructField(name, types[kind], True) for name, kind in SNAPSHOT_FIELDS]
    return StructType([*fields, StructField(CORRUPT_COLUMN, StringType(), True)])


# Snapshot files as the listener names them; ``.gz`` copies are read too (Spark decompresses them).
DEFAULT_FILE_PATTERN = "{*.jsonl,*.jsonl.gz}"

# Kafka's config sources (Contract 3); quotas name the entity path that supplied them instead.
PER_BROKER_SOURCE = "DYNAMIC_BROKER_CONFIG"
DEFAULT_BROKER_SOURCE = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_SOURCE = "STATIC_BROKER_CONFIG"
BUILTIN_SOURCE = "DEFAULT_CONFIG"
TOPIC_SOURCE = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_SOURCES: tuple[str, ...] = (PER_BROKER_SOURCE, DEFAULT_BROKER_SOURCE)
SERVER_PROPERTIES_SOURCES: tuple[str, ...] = (STATIC_SOURCE, BUILTIN_SOURCE)

# The label under which broker keys that should agree fleet-wide are reported in ``divergent``.
BROKER_DEFAULT_PATH = "brokers/<default>"

# Keys that differ from broker to broker by nature (identity, addresses, disks, own keystore):
# comparing them across brokers would only report noise. Matched as a whole name or as the
# suffix of a listener-prefixed name (``listener.name.internal.ssl.keystore.location``).
PER_BROKER_BY_NATURE: tuple[str, ...] = (
    "broker.id",
    "node.id",
    "broker.rack",
    "listeners",
    "advertised.listeners",
    "advertised.host.name",
    "advertised.port",
    "host.name",
    "port",
    "log.dirs",
    "log.dir",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
)

# Kafka's password configs (matched as a suffix, as DynamicBrokerConfig does) and SCRAM credentials.
# Their values must only ever be compared and shown as digests.
SENSITIVE_SUFFIXES: tuple[str, ...] = (
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.password",
    "ssl.truststore.certificates",
    "ssl.truststore.password",
    "password.encoder.secret",
    "password.encoder.old.secret",
    "delegation.token.master.key",
    "delegation.token.secret.key",
)
SENSITIVE_NAMES: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DIGEST_PREFIX = "sha256:"


def _name_regex(names: tuple[str, ...], suffixes: tuple[str, ...]) -> str:
    whole = "|".join(re.escape(n) for n in names)
    tails = "|".join(re.escape(s) for s in suffixes)
    return f"^(?:{whole})$|(?:^|\\.)(?:{tails})$" if whole else f"(?:^|\\.)(?:{tails})$"


# Java regular expressions for Spark's ``rlike`` (the same text is valid for Python's ``re``).
SENSITIVE_NAME_REGEX = _name_regex(SENSITIVE_NAMES, SENSITIVE_SUFFIXES)


def per_broker_regex(extra: tuple[str, ...] = ()) -> str:
    """The regex of per-broker-by-nature key names, with the operator's own additions."""
    return _name_regex((), (*PER_BROKER_BY_NATURE, *extra))


def is_sensitive(name: str) -> bool:
    """True for a key whose value is a secret (compared and shown by digest only)."""
    return re.search(SENSITIVE_NAME_REGEX, name) is not None


def is_per_broker_by_nature(name: str, extra: tuple[str, ...] = ()) -> bool:
    return re.search(per_broker_regex(extra), name) is not None
