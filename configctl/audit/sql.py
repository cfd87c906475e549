"""Spark SQL text for the audit's expressions.

The job writes its column logic as SQL expressions (``F.expr``, ``selectExpr``) rather than by
chaining PySpark Column calls: every Column call is a round trip to the JVM, and building the
audit's plans that way took some 8,600 of them (about a second of driver time, several under
load). An expression string is one round trip, parsed by Spark itself. Values from outside
the code (key names, regexes, prefixes) enter the text only through :func:`text`.
"""

from __future__ import annotations

from collections.abc import Iterable

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def text(value: str) -> str:
    """A Spark SQL string literal holding exactly ``value``."""
    return "'" + "".join(_ESCAPES.get(c, c) for c in value) + "'"


def one_of(column: str, values: Iterable[str]) -> str:
    """``column IN (...)`` for a list of strings (``false`` for none)."""
    listed = ", ".join(text(v) for v in values)
    return f"{column} IN ({listed})" if listed else "false"
