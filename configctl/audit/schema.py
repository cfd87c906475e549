"""How the audit reads snapshot lines, and the key lists that shape its findings.

The line itself (fields, types, file names) is :mod:`configctl.snapshot`'s; source names are
:mod:`configctl.sources`'; which keys hold secrets is :mod:`configctl.catalogue`'s. This module
only turns them into what Spark needs: an explicit read schema and Java regular expressions.

Spark is told the schema instead of inferring it: inference reads the whole input once more,
and a fleet where one file happens to hold only nulls would infer a different type than the
rest. ``_corrupt_record`` catches lines that are not JSON objects of this shape, so a bad
line is counted instead of failing the job. Standard library only at import time (pyspark is
imported when the Spark schema is asked for), so the CLI reads it without paying for pyspark.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from configctl import catalogue, snapshot
from configctl.digests import DIGEST_PREFIX, KEYED_PREFIX  # noqa: F401 (the job's SQL needs them as literals)

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

CORRUPT_COLUMN = "_corrupt_record"


def snapshot_schema() -> StructType:
    """The explicit read schema: the fields, all nullable, plus ``_corrupt_record``."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {"int": IntegerType(), "long": LongType(), "string": StringType()}
    fields = [StructField(name, types[kind], True) for name, kind in snapshot.FIELDS]
    return StructType([*fields, StructField(CORRUPT_COLUMN, StringType(), True)])


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


def _name_regex(names: tuple[str, ...], suffixes: tuple[str, ...]) -> str:
    tails = "|".join(re.escape(s) for s in suffixes)
    suffix_part = f"(?:^|\\.)(?:{tails})$" if tails else ""
    if not names:
        return suffix_part or "(?!)"
    whole = "|".join(re.escape(n) for n in names)
    return f"^(?:{whole})$|{suffix_part}" if suffix_part else f"^(?:{whole})$"


@cache
def sensitive_name_regex() -> str:
    """Names whose values are secrets, as a Java regex for Spark's ``rlike`` (also valid in Python).

    Derived from :func:`configctl.catalogue.sensitive_names`: every sensitive key name of any
    entity type, whole, or a password-config suffix after a dot (a listener-prefixed password
    config, as Kafka's ``DynamicBrokerConfig`` matches them). Snapshot lines carry a key name
    without its entity type, which is why the audit asks by name alone.
    """
    names, suffixes = catalogue.sensitive_names()
    return _name_regex(tuple(sorted(names)), tuple(suffixes))


def per_broker_regex(extra: tuple[str, ...] = ()) -> str:
    """The regex of per-broker-by-nature key names, with the operator's own additions."""
    return _name_regex((), (*PER_BROKER_BY_NATURE, *extra))


def is_sensitive(name: str) -> bool:
    """True for a key whose value is a secret (compared and shown by digest only)."""
    return re.search(sensitive_name_regex(), name) is not None


def is_per_broker_by_nature(name: str, extra: tuple[str, ...] = ()) -> bool:
    return re.search(per_broker_regex(extra), name) is not None
