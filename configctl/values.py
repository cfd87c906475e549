"""Kafka's value grammar: how a stored config string is read, and how a typed value is written.

Every value in ZooKeeper is a string. Kafka's ``ConfigDef.parseType`` reads it (Java's
``String.trim`` first, then ``Integer.parseInt``, ``Double.parseDouble``, ``Boolean`` by name,
lists split on commas), and Java's ``Double.toString`` writes doubles. The write side
(validation, desired-state files), the listener's screening of dynamic broker keys and
``describe --effective`` all read values through :func:`parse`, so a value one of them accepts
is never one another drops. Pure, standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from configctl.errors import InvalidInput, shown

if TYPE_CHECKING:
    from configctl.catalogue import ConfigKey

_JAVA_TRIM_CHARS = "".join(chr(c) for c in range(0x21))
_INT_RE = re.compile(r"[+-]?[0-9]+")
# Double.parseDouble's grammar (decimal and hexadecimal forms, optional float/double suffix).
_DECIMAL_DOUBLE_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_HEX_DOUBLE_RE = re.compile(
    r"([+-]?)(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?"
)
# ConfigDef splits lists on "\\s*,\\s*" (Java's \s: ASCII whitespace only) and keeps empty items.
_LIST_SPLIT_RE = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
INT_BOUNDS = {
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_MAX_INT_DIGITS = 30  # beyond any Java long: out of range without converting the digits


def java_trim(text: str) -> str:
    """``String.trim()``: strip characters <= U+0020 at both ends (and nothing else)."""
    return text.strip(_JAVA_TRIM_CHARS)


def parse(kafka_type: str, raw: str, *, shown: str | None = None) -> tuple[Any, str | None]:
    """Parse ``raw`` as ``kafka_type`` (``ConfigDef.parseType``); ``(value, None)`` or ``(None, reason)``.

    int/short/long -> ``int`` (decimal digits with an optional sign, within the Java type's
    range), double -> ``float`` (:func:`parse_double`), boolean -> ``bool`` (``true``/``false`` in
    any case), list -> ``list[str]`` (split on commas, ``""`` is the empty list), anything else ->
    ``str``. Surrounding whitespace is trimmed first, as ConfigDef does. The reason shows the value
    as ``shown`` (a sensitive value is never put in a message); None shows ``raw`` quoted
    (:func:`configctl.errors.shown`), worked out only when there is a reason: a listener's full
    load parses 100,000 values that nearly all pass.
    """
    text = raw.strip(_JAVA_TRIM_CHARS)  # java_trim, without a call per value
    bounds = INT_BOUNDS.get(kafka_type)
    if bounds is not None:
        if not _INT_RE.fullmatch(text):
            return None, f"{_label(shown, raw)} is not a valid {kafka_type}: expected a whole number"
        # never int() a 5,000-digit string (a short one cannot have too many digits)
        if len(text) > _MAX_INT_DIGITS and len(text.lstrip("+-0")) > _MAX_INT_DIGITS:
            value = (-1 if text.startswith("-") else 1) * 10**_MAX_INT_DIGITS
        else:
            value = int(text)
        low, high = bounds
        if not low <= value <= high:
            article = "an" if kafka_type == "int" else "a"
            return None, f"{_label(shown, raw)} is out of range for {article} {kafka_type} ({low} to {high})"
        return value, None
    if kafka_type == "double":
        return parse_double(text, _label(shown, raw))
    if kafka_type == "boolean":
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true", None
        return None, f"{_label(shown, raw)} is not a valid boolean: expected true or false"
    if kafka_type == "list":
        return ([] if not text else _LIST_SPLIT_RE.split(text)), None
    # string, password, class, scram_credential: strings, trimmed as ConfigDef does.
    return text, None


def _label(shown_as: str | None, raw: str) -> str:
    """How a reason shows the value: as the caller said, else ``raw`` quoted."""
    return shown_as if shown_as is not None else shown(raw)


def parse_double(text: str, shown: str) -> tuple[Any, str | None]:
    """Java's ``Double.parseDouble`` (decimal and hexadecimal forms, ``d``/``f`` suffixes, Infinity).

    One deliberate difference: NaN is refused, on the write side and by every listener alike.
    Kafka parses it, and then every range check lets it through (``NaN < 0`` and ``NaN > 1`` are
    both false), so a NaN ratio or quota would run as a value nobody can reason about.
    """
    body = text.lstrip("+-")
    sign = -1.0 if text.startswith("-") else 1.0
    if body == "Infinity" and len(text) - len(body) <= 1:
        return sign * math.inf, None
    if body == "NaN" and len(text) - len(body) <= 1:
        return None, f"{shown} is not accepted: NaN is not a number"
    if _DECIMAL_DOUBLE_RE.fullmatch(text):
        return float(text.rstrip("fFdD")), None
    hex_match = _HEX_DOUBLE_RE.fullmatch(text)
    if hex_match:
        return sign * float.fromhex(hex_match.group(2)), None
    return None, f"{shown} is not a valid double: expected a number such as 0.5 or 1.0E9"


def java_double(value: float) -> str:
    """``Double.toString`` for finite doubles: plain in [1e-3, 1e7), else ``d.dddE<n>``."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    decimal = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, decimal.digits))
    point = len(digits) + int(decimal.exponent)  # digits before the decimal point
    digits = digits.rstrip("0") or "0"
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            text = "0." + "0" * -point + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{point - 1}"
    return sign + text


@lru_cache(maxsize=4096)  # values repeat across a fleet's entities; a bigger cache is RSS held for ever
def kafka_text(kafka_type: str | None, raw: str) -> str:
    """The text a Kafka broker reports for a stored value: ``ConfigDef.convertToString(parse(raw))``.

    DescribeConfigs shows a key's parsed value written back: ``1048576`` for a double is
    ``1048576.0``, ``compact, delete`` is ``compact,delete``, ``+05`` for an int is ``5``, ``TRUE``
    is ``true``; strings and classes are trimmed. Synonyms are reported raw, as stored. A value
    that does not parse (Kafka would have dropped it) is returned as it is.
    """
    if kafka_type is None:
        return raw
    value, problem = parse(kafka_type, raw, shown="value")
    if problem is not None:
        return raw
    if isinstance(value, list):
        return ",".join(value)
    return _scalar_text(None, value, "value")  # parse refuses NaN: nothing here raises


def _scalar_text(key: ConfigKey | None, value: Any, label: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise InvalidInput(f"{label}: NaN is not a valid value")
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if key is not None and key.kafka_type in INT_BOUNDS and value.is_integer():
            return str(int(value))
        return java_double(value)
    if value is None:
        raise InvalidInput(f"{label}: has no value (write '' for an empty value)")
    raise InvalidInput(
        f"{label}: a {type(value).__name__} is not a config value (use a string, number, boolean or list)"
    )


def normalize_value(key: ConfigKey | None, value: Any, *, name: str | None = None) -> str:
    """The stored string form of a desired-state (YAML/JSON) value.

    Booleans become ``true``/``false``, integers decimal digits, floats Java's ``Double.toString``
    form (a whole float for an integer-typed key becomes plain digits, never ``1.0E9``), lists
    are comma-joined, strings are kept as they are. Anything else (a mapping, a nested list,
    a date, null) raises :class:`InvalidInput` naming the key.
    """
    label = name or (key.name if key is not None else "config value")
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if isinstance(item, (list, tuple, dict)):
                raise InvalidInput(
                    f"{label}: a list value may hold only plain values, not nested lists or mappings"
                )
            text = _scalar_text(None, item, label)
            if "," in text:
                raise InvalidInput(f"{label}: list item {shown(text)} must not contain a comma")
            items.append(text)
        return ",".join(items)
    if isinstance(value, Mapping):
        raise InvalidInput(
            f"{label}: a mapping is not a config value (use a string, number, boolean or list)"
        )
    return _scalar_text(key, value, label)
