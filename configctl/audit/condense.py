"""The condensed table every finding reads: the raw snapshot lines grouped by what they say, in one pass.

The input is mostly the same lines repeated by every broker (every topic override is on every
broker), so the audit condenses it in ONE pass, the only one over the raw lines: lines are
grouped by what they say (path, name, value, source), each group keeping the sorted set of
brokers saying it, and in the same aggregation every broker's highest change number (each
line is counted twice, once by what it says and once for its broker). The per-line work is
kept to what a bare "read + groupBy" does: a malformed line is recognised by null checks,
and what only malformed lines need (the file name, the text shown) sits in branches good
lines never take. Classifying groups (a broker's own key or a cluster-wide entity) and
digesting secrets sent in clear happen after, on the condensed table: distinct lines, not
lines. Expressions are SQL text (see configctl.audit.sql: one JVM round trip each).

From the rows :func:`configctl.audit.reading.read_snapshots` returns, :func:`condense` makes the
groups and :func:`classify` the table; the audit run (:mod:`configctl.audit.run`) cuts it by
``kind`` for the drift classes and, when some secret arrived in clear, calls
:func:`digest_clear_under_key` and :func:`merge_digested`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from configctl import snapshot
from configctl.audit import sql
from configctl.audit.drift.base import Inputs
from configctl.audit.schema import CORRUPT_COLUMN, DIGEST_PREFIX, KEYED_PREFIX, sensitive_name_regex
from configctl.digests import digest

# A malformed line's text is shown only if it names no secret.
_SECRET_HINT = r"(?i)(password|secret|jaas|scram|ssl\.key|keystore\.key|certificate)"
_EXAMPLE_CHARS = 200

KIND_OWN = "own"  # a broker's line about its own broker keys (path null: compared by name)
KIND_ENTITY = "entity"  # a line about a cluster-wide entity (topic, client, user, ip)
KIND_CHANGE = "cn"  # one per broker: its change number (broker_id); one with a null id counts bad lines
KIND_BAD = "bad"  # malformed lines (path: file, name: unparseable|missing_fields, value: text)

_WITHHELD = "(text withheld: it names a secret)"


def _clear_secret(value: str = "value", name: str = "name") -> str:
    """SQL: ``value`` is a secret that arrived in clear (a digest in neither form)."""
    return (
        f"({value} IS NOT NULL AND NOT startswith({value}, {sql.text(DIGEST_PREFIX)}) "
        f"AND NOT startswith({value}, {sql.text(KEYED_PREFIX)}) "
        f"AND {name} RLIKE {sql.text(sensitive_name_regex())})"
    )


def _comparable(value: str = "value") -> str:
    """SQL: :func:`configctl.digests.comparable`: a ``hmac-sha256:<hex>`` digest in snapshot form
    (``sha256:<hex>``, the same HMAC), so lines holding either form of one secret are one value."""
    return (
        f"CASE WHEN startswith({value}, {sql.text(KEYED_PREFIX)}) "
        f"THEN concat({sql.text(DIGEST_PREFIX)}, substring({value}, {len(KEYED_PREFIX) + 1})) ELSE {value} END"
    )


def _digested(value: str = "value", name: str = "name") -> str:
    """SQL: a secret in clear as its digest (the listener's ``configctl.secrets.digest``), else the value."""
    return (
        f"CASE WHEN {_clear_secret(value, name)} "
        f"THEN concat({sql.text(DIGEST_PREFIX)}, sha2({value}, 256)) ELSE {value} END"
    )


def _lines(raw: DataFrame, keyed: bool) -> DataFrame:
    """Each raw line as the condensing groups it (a malformed one by file, problem and text).

    A malformed line's text shows a secret in clear as its digest; under a digest key (``keyed``)
    Spark cannot compute that digest, so such a line's text is withheld instead.
    """
    fields = ", ".join(
        f"'{name}', {_digested() if name == 'value' else name}" for name in snapshot.FIELD_NAMES
    )
    text = f"coalesce({CORRUPT_COLUMN}, to_json(named_struct({fields})))"
    withhold = f"{text} RLIKE {sql.text(_SECRET_HINT)}"
    if keyed:
        withhold = f"{withhold} OR coalesce({_clear_secret()}, false)"
    shown = f"CASE WHEN {withhold} THEN {sql.text(_WITHHELD)} ELSE substring({text}, 1, {_EXAMPLE_CHARS}) END"
    return raw.selectExpr(
        "CASE WHEN _bad IS NULL THEN entity_path ELSE _file END AS path",
        "CASE WHEN _bad IS NULL THEN name END AS name",
        f"CASE WHEN _bad IS NULL THEN {_comparable()} ELSE {shown} END AS value",
        "coalesce(_bad, source) AS source",
        "CASE WHEN _bad IS NULL THEN broker_id END AS broker_id",
        "change_number",
    )


def condense(raw: DataFrame, keyed: bool) -> DataFrame:
    """The one pass: line groups (``line`` = 1) and one row per broker (``line`` = 0).

    Columns: line, path, name, value, source, broker, brokers (sorted ids), n (lines), cn (max
    change number). A malformed line's group has a null name, its file as path, its problem as
    source and its (shown) text as value; it gives no broker a change number. The two groupings
    are a Generate, not GROUPING SETS: Spark plans those as an Expand, which the cache manager
    does not recognise again once a query unions the cached table with itself.
    """
    twice = _lines(raw, keyed).selectExpr("*", "explode(array(1, 0)) AS line")
    keys = [F.expr(f"CASE WHEN line = 1 THEN {c} END AS {c}") for c in ("path", "name", "value", "source")]
    return twice.groupBy(F.col("line"), *keys, F.expr("CASE WHEN line = 0 THEN broker_id END AS broker")).agg(
        F.expr("array_sort(collect_set(broker_id)) AS brokers"),
        F.expr("count(1) AS n"),
        F.expr("max(change_number) AS cn"),
    )


def classify(condensed: DataFrame, keyed: bool) -> DataFrame:
    """The table every finding reads: kind, broker_id, path, name, value, source, brokers, n, cn, clear.

    A ``brokers/<id>`` group is split: broker <id> saying it is its own key, any other broker
    saying it is an entity line (as before condensing, where ``own`` compared the line's path
    with its broker). The owner is the id written as Java writes an int ("brokers/007" is
    nobody's own path). Values of secrets in clear are digested here (``clear`` marks them);
    under a digest key (``keyed``) they are left in clear for :func:`digest_clear_under_key`.
    No higher-order functions: a cached plan with lambdas is not recognised again when a query
    unions the cached table with itself.
    """
    named = f"substring(path, {len('brokers/') + 1})"
    owner = f"CASE WHEN CAST(try_cast({named} AS INT) AS STRING) = {named} THEN try_cast({named} AS INT) END"
    is_owner = f"coalesce(array_contains(brokers, {owner}), false)"
    own_brokers = f"CASE WHEN {is_owner} THEN array({owner}) ELSE CAST(array() AS ARRAY<INT>) END"
    other_brokers = f"CASE WHEN {is_owner} THEN array_remove(brokers, {owner}) ELSE brokers END"

    def row(kind: str, path: str, source: str, brokers: str, broker: str = "CAST(NULL AS INT)") -> str:
        return (
            f"named_struct('kind', '{kind}', 'broker_id', {broker}, 'path', {path}, "
            f"'brokers', {brokers}, 'source', {source})"
        )

    null = "CAST(NULL AS STRING)"
    rows = (
        f"CASE WHEN line = 0 THEN array({row(KIND_CHANGE, null, null, 'brokers', 'broker')}) "
        f"WHEN name IS NULL THEN array({row(KIND_BAD, 'path', null, 'brokers')}) "
        f"WHEN startswith(path, 'brokers/') THEN array({row(KIND_OWN, null, 'source', own_brokers)}, "
        f"{row(KIND_ENTITY, 'path', null, other_brokers)}) "
        f"ELSE array({row(KIND_ENTITY, 'path', null, 'brokers')}) END"
    )
    good_line = "(line = 1 AND name IS NOT NULL)"
    return (
        condensed.selectExpr(
            f"explode({rows}) AS r",
            # a bad group keeps its problem in ``name`` (as the examples list it)
            f"CASE WHEN {good_line} OR line = 0 THEN name ELSE source END AS name",
            f"CASE WHEN {good_line} THEN {'value' if keyed else _digested()} ELSE value END AS value",
            "n",
            "cn",
            f"{good_line} AND {_clear_secret()} AS clear",
        )
        .selectExpr(
            "r.kind", "r.broker_id", "r.path", "name", "value", "r.source", "r.brokers", "n", "cn", "clear"
        )
        .filter(f"kind = '{KIND_CHANGE}' OR kind = '{KIND_BAD}' OR size(brokers) > 0")
    )


_TABLE_SCHEMA = (
    ("kind", "string"),
    ("broker_id", "int"),
    ("path", "string"),
    ("name", "string"),
    ("value", "string"),
    ("source", "string"),
    ("brokers", "array<int>"),
    ("n", "bigint"),
    ("cn", "bigint"),
    ("clear", "boolean"),
)


def digest_clear_under_key(inputs: Inputs, table: DataFrame, key: bytes) -> DataFrame:
    """The table with every secret sent in clear replaced by its HMAC digest under the fleet's key.

    Spark SQL has no HMAC, so the rows holding such secrets (rare: listeners write digests;
    distinct lines, not lines) come to the driver, are digested there with the listener's own
    :func:`configctl.digests.digest`, and go back as a small table. The key never leaves the
    driver, and what goes back into the plan holds digests only, never a secret.
    """
    rows = table.filter("clear").collect()
    digested = [
        tuple(digest(r["value"], key) if name == "value" else r[name] for name, _ in _TABLE_SCHEMA)
        for r in rows
    ]
    return table.filter("NOT clear").unionByName(inputs.rows_table(digested, _TABLE_SCHEMA))


def merge_digested(table: DataFrame) -> DataFrame:
    """Groups that became equal when secrets in clear were digested, merged into one.

    Only needed when some secret arrived in clear (rare: listeners write digests): then a
    broker saying both the clear value and its digest must count once, as one value.
    """
    return table.groupBy("kind", "broker_id", "path", "name", "value", "source").agg(
        F.expr("array_sort(array_distinct(flatten(collect_list(brokers)))) AS brokers"),
        F.expr("sum(n) AS n"),
        F.expr("max(cn) AS cn"),
        F.expr("false AS clear"),
    )
