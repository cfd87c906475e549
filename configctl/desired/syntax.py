"""The text of desired-state files: YAML (and JSON) to plain values with line numbers, and back.

Operators keep these files in version control, so reading one must be predictable:

* Scalars are read the YAML 1.2 way, not PyYAML's YAML 1.1 way: only ``true``/``false`` are
  booleans and only plain decimal numbers are numbers. ``1:2`` (a throttled-replica pair, which
  YAML 1.1 reads as the base-60 number 62), ``0x10``, ``010``, ``1_000`` and ``yes``/``off`` stay
  the text that was written. Keys are always the text as written.
* Duplicate keys are refused with both lines (YAML parsers usually let the last one win).
* Mappings remember the line of each key, so later checks can name the line of a mistake.

Writing is the inverse: :func:`native_scalar` picks the YAML value that reads back to exactly a
given text, and :func:`dump` / :func:`json_text` are the one place desired-state documents and
saved plans become text. Pure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import yaml

from configctl.errors import InvalidInput

YAML_TAG = "tag:yaml.org,2002:"
MAX_DEPTH = 50
"""Deeper nesting than any desired-state file needs (users/<u>/clients/<c>/key/list is 6)."""

DECIMAL_INT_RE = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
DECIMAL_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INFINITY_RE = re.compile(r"([-+]?)\.(?:inf|Inf|INF)")
_NAN_RE = re.compile(r"\.(?:nan|NaN|NAN)")

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Only used to compose nodes; the conversion to values is ours (see :func:`_value`)."""


class LinedMap(dict):  # type: ignore[type-arg]
    """A mapping that remembers its own line and the line of each key (None for JSON)."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line
        self.lines: dict[str, int | None] = {}


# -- reading ------------------------------------------------------------------------------------


def parse_yaml(text: str, source: str) -> Any:
    """The document in ``text`` as plain values (mappings as :class:`LinedMap`), or :class:`InvalidInput`."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        what = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise InvalidInput(f"{where}: invalid YAML: {' '.join(what.split())}") from None
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source}: invalid YAML: {' '.join(str(exc).split())}") from None
    if node is None:
        return None
    return _value(node, source, depth=0)


def _value(node: yaml.Node, source: str, depth: int) -> Any:
    """A composed YAML node as plain Python values (mappings as :class:`LinedMap`)."""
    line = node.start_mark.line + 1
    if depth > MAX_DEPTH:
        raise InvalidInput(f"{source}:{line}: the document is nested too deeply")
    if isinstance(node, yaml.MappingNode):
        result = LinedMap(line)
        explicit: dict[str, int] = {}
        merged: list[tuple[str, int, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == YAML_TAG + "merge":
                merged.extend(_merge_sources(value_node, source))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise InvalidInput(f"{source}:{key_node.start_mark.line + 1}: a key must be a plain name")
            key, key_line = key_node.value, key_node.start_mark.line + 1
            if key in explicit:
                raise InvalidInput(
                    f"{source}:{key_line}: duplicate key {key!r} (first given at line {explicit[key]})"
                )
            explicit[key] = key_line
        # YAML merge keys (<<: *defaults): merged entries first, explicit ones override them.
        for key, key_line, value_node in merged:
            result[key] = _value(value_node, source, depth + 1)
            result.lines[key] = key_line
        for key_node, value_node in node.value:
            if key_node.tag == YAML_TAG + "merge":
                continue
            result[key_node.value] = _value(value_node, source, depth + 1)
            result.lines[key_node.value] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_value(item, source, depth + 1) for item in node.value]
    return _scalar(node, source)


def _merge_sources(node: yaml.Node, source: str) -> list[tuple[str, int, yaml.Node]]:
    sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
    entries: list[tuple[str, int, yaml.Node]] = []
    seen: set[str] = set()
    for mapping in sources:  # the first mapping listed wins, as YAML's merge key says
        if not isinstance(mapping, yaml.MappingNode):
            raise InvalidInput(
                f"{source}:{mapping.start_mark.line + 1}: '<<' needs a mapping or list of mappings"
            )
        for key_node, value_node in mapping.value:
            is_key = isinstance(key_node, yaml.ScalarNode) and key_node.tag != YAML_TAG + "merge"
            if is_key and key_node.value not in seen:
                seen.add(key_node.value)
                entries.append((key_node.value, key_node.start_mark.line + 1, value_node))
    return entries


def _scalar(node: yaml.Node, source: str) -> Any:
    """YAML 1.2-style scalars: see the module docstring for why."""
    text, tag = node.value, node.tag
    if tag == YAML_TAG + "null":
        return None
    if tag == YAML_TAG + "bool":
        return text.lower() == "true" if text.lower() in ("true", "false") else text
    if tag == YAML_TAG + "int":
        return int(text) if DECIMAL_INT_RE.fullmatch(text) else text
    if tag == YAML_TAG + "float":
        if DECIMAL_FLOAT_RE.fullmatch(text):
            return float(text)
        infinity = _INFINITY_RE.fullmatch(text)
        if infinity:
            return -math.inf if infinity.group(1) == "-" else math.inf
        if _NAN_RE.fullmatch(text):
            return math.nan
        return text
    if tag in (YAML_TAG + "str", YAML_TAG + "timestamp"):
        return text
    raise InvalidInput(f"{source}:{node.start_mark.line + 1}: unsupported YAML tag {tag!r}")


def parse_json(text: str, source: str) -> Any:
    """The JSON document in ``text`` as plain values: integers keep their text, NaN is refused."""

    def pairs(items: list[tuple[str, Any]]) -> LinedMap:
        result = LinedMap()
        for key, value in items:
            if key in result:
                raise InvalidInput(f"{source}: duplicate key {key!r} in a JSON object")
            result[key] = value
            result.lines[key] = None
        return result

    def number(text: str) -> int | str:
        return int(text) if DECIMAL_INT_RE.fullmatch(text) else text

    def constant(name: str) -> Any:
        raise InvalidInput(f"{source}: {name} is not valid JSON")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=number, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{source}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InvalidInput(f"{source}: the document is nested too deeply") from None


# -- writing ------------------------------------------------------------------------------------


def native_scalar(text: str) -> Any:
    """The YAML scalar this reader turns into ``text`` again: a bool, int or float if one reads back so."""
    if text in ("true", "false"):
        return text == "true"
    if DECIMAL_INT_RE.fullmatch(text) and not text.startswith("+") and text != "-0":
        return int(text)
    if DECIMAL_FLOAT_RE.fullmatch(text) and any(c in text for c in ".eE"):
        return float(text)
    return text


def json_text(document: Any) -> str:
    """A JSON document as configctl writes it to files (indented, UTF-8 kept, one final newline)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def dump(document: Mapping[str, Any], *, as_json: bool = False, header: str | None = None) -> str:
    """Render a document as YAML (block style, in document order, ``header`` as comments) or JSON."""
    if as_json:
        return json_text(document)
    body = yaml.dump(
        dict(document),
        Dumper=_Dumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    if header:
        body = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + body
    return body


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe dumper; empty mappings as ``{}``, lists of scalars inline (``[compact, delete]``)."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence(YAML_TAG + "seq", data, flow_style=True)


_Dumper.add_representer(list, _represent_list)
