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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import yaml

from configctl.errors import InvalidInput

YAML_TAG = "tag:yaml.org,2002:"
MAX_DEPTH = 50
"""Deeper nesting than any desired-state file needs (users/<u>/clients/<c>/key/list is 6)."""
ALIAS_BUDGET = 10_000
ALIAS_NODES_PER_NODE = 20
"""Aliases may stand for at most ``ALIAS_BUDGET`` nodes plus this many per node written so far.

A YAML alias stands for a whole subtree, and an anchored subtree may itself hold aliases: nine
levels of nine aliases each make 387 million nodes from 400 bytes. Every node an alias stands
for is counted (including under ignored ``x-`` keys), without expanding anything, and a file
that crosses the budget is refused at the alias that crosses it. Real files stay far below:
5,000 topics each merging a 10-key anchor reach about 100,000 nodes through aliases, and are
written with 20,000 nodes of their own, which allows 410,000."""
BIG_NUMBER_DIGITS = 100
"""A bare integer longer than this is kept as its decimal text rather than made a Python int.

Kafka's widest number is a 19-digit long, so nothing is lost, and Python refuses (4,300 digits)
or takes quadratic time to convert longer digit strings. The text is what the int would have
been written as (``+`` dropped), so the value reads the same either way; validation then
judges it like any other number (out of range for a long, say)."""

DECIMAL_INT_RE = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
DECIMAL_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INFINITY_RE = re.compile(r"([-+]?)\.(?:inf|Inf|INF)")
_NAN_RE = re.compile(r"\.(?:nan|NaN|NAN)")
_MERGE_TAG = YAML_TAG + "merge"

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = yaml.resolver.Resolver()
"""PyYAML's (YAML 1.1) implicit tags, which :func:`_scalar` then narrows to YAML 1.2's."""


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Only its parser is used (events); building values is ours (see :class:`_YamlReader`)."""


class LinedMap(dict):  # type: ignore[type-arg]
    """A mapping that remembers its own line and the line of each key (None for JSON)."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line
        self.lines: dict[str, int | None] = {}


# -- reading YAML -------------------------------------------------------------------------------


def parse_yaml(text: str, source: str) -> Any:
    """The document in ``text`` as plain values (mappings as :class:`LinedMap`), or :class:`InvalidInput`.

    Read from the parser's event stream, never composed as a tree: nesting is refused past
    :data:`MAX_DEPTH` as soon as it is reached (a recursive composer crashes on 30,000 brackets),
    and an alias shares the value its anchor was read as instead of copying it, with every node
    it stands for counted against :data:`ALIAS_BUDGET`.
    """
    try:
        return _YamlReader(source).read(yaml.parse(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        what = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise InvalidInput(f"{where}: invalid YAML: {' '.join(what.split())}") from None
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source}: invalid YAML: {' '.join(str(exc).split())}") from None


@dataclass(frozen=True, slots=True)
class _Node:
    """A node read in full; an anchor keeps it so each alias to it costs nothing to read."""

    value: Any
    line: int
    size: int = 1
    """Nodes it stands for, aliases inside it counted in full."""
    height: int = 0
    """Levels of nesting below it."""
    text: str | None = None
    """A scalar's text as written (what a key is); None for collections."""
    tag: str | None = None


@dataclass(slots=True)
class _Collection:
    """A mapping or sequence whose end has not been read yet."""

    is_mapping: bool
    line: int
    anchor: str | None
    size: int = 1
    height: int = 0
    items: list[Any] = field(default_factory=list)
    # mappings: the key waiting for its value, explicit keys (for duplicates), entries, merges
    key: _Node | None = None
    first_lines: dict[str, int] = field(default_factory=dict)
    entries: list[tuple[str, Any, int]] = field(default_factory=list)
    merged: list[tuple[str, Any, int | None]] = field(default_factory=list)


class _YamlReader:
    """Builds plain values from YAML events, with bounded depth and alias expansion."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.stack: list[_Collection] = []
        self.anchors: dict[str, _Node] = {}
        self.open_anchors: dict[str, int] = {}
        self.written = 0
        self.reached = 0
        self.root: _Node | None = None
        self.documents = 0

    def read(self, events: Iterable[yaml.Event]) -> Any:
        scalar, node, end = self._scalar_event, self._node, self._end
        for event in events:
            kind = type(event)
            if kind is yaml.ScalarEvent:
                scalar(event)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent or kind is yaml.AliasEvent:
                node(event)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                end()
            elif kind is yaml.DocumentStartEvent:
                self.documents += 1
                if self.documents > 1:
                    self._fail(
                        event.start_mark.line + 1,
                        "invalid YAML: expected a single document in the stream but found another document",
                    )
        return self.root.value if self.root is not None else None

    def _scalar_event(self, event: yaml.ScalarEvent) -> None:
        """:meth:`_node` for the commonest event, a plain scalar inside a collection, done inline.

        Nine events in ten of a desired-state file; this path skips the general one's checks that
        cannot apply (no anchor, not the root, not too deep, not a merge key) and builds no node
        for a value. Anything else goes the general way, so the two cannot disagree on the rest.
        """
        stack = self.stack
        if event.anchor is not None or not stack or len(stack) > MAX_DEPTH:
            self._node(event)
            return
        tag = event.tag
        if tag is None or tag == "!":
            tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
        top = stack[-1]
        if tag == _MERGE_TAG or (top.key is not None and top.key.tag == _MERGE_TAG):
            self._node(event)
            return
        self.written += 1
        line = event.start_mark.line + 1
        text = event.value
        top.size += 1
        if top.height < 1:
            top.height = 1
        if not top.is_mapping:
            top.items.append(self._scalar_value(tag, text, line, False))
        elif top.key is None:
            first = top.first_lines.get(text)
            if first is not None:
                self._fail(line, f"duplicate key {text!r} (first given at line {first})")
            top.first_lines[text] = line
            top.key = _Node(None, line, text=text, tag=tag)
        else:
            key, top.key = top.key, None
            top.entries.append((key.text, self._scalar_value(tag, text, line, False), key.line))  # type: ignore[arg-type]

    def _fail(self, line: int, message: str) -> NoReturn:
        raise InvalidInput(f"{self.source}:{line}: {message}")

    def _node(self, event: yaml.NodeEvent) -> None:
        line = event.start_mark.line + 1
        depth = len(self.stack)
        self.written += 1
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is None:
                if event.anchor in self.open_anchors:
                    self._fail(line, f"invalid YAML: alias *{event.anchor} is used inside its own anchor")
                self._fail(line, f"invalid YAML: found undefined alias {event.anchor!r}")
            if depth + target.height > MAX_DEPTH:
                self._too_deep(line)
            self.reached += target.size
            allowed = ALIAS_BUDGET + ALIAS_NODES_PER_NODE * self.written
            if self.reached > allowed:
                self._fail(
                    line,
                    f"aliases reach more than {allowed:,} nodes; refusing a file that expands this much "
                    f"(at most {ALIAS_BUDGET:,} plus {ALIAS_NODES_PER_NODE} per node written)",
                )
            self._add(_Node(target.value, line, target.size, target.height, target.text, target.tag))
            return
        if depth > MAX_DEPTH:
            self._too_deep(line)
        anchor = event.anchor
        if anchor is not None and (anchor in self.anchors or anchor in self.open_anchors):
            first = self.anchors[anchor].line if anchor in self.anchors else self.open_anchors[anchor]
            self._fail(line, f"invalid YAML: found duplicate anchor {anchor!r} (first at line {first})")
        top = self.stack[-1] if self.stack else None
        is_key = top is not None and top.is_mapping and top.key is None
        if isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
            # A key is its text; its value is only needed if an alias may use it as a value.
            value = None if is_key and anchor is None else self._scalar_value(tag, event.value, line, is_key)
            node = _Node(value, line, text=event.value, tag=tag)
            if anchor is not None:
                self.anchors[anchor] = node
            self._add(node)
            return
        if is_key:
            self._fail(line, "a key must be a plain name")
        self.stack.append(_Collection(isinstance(event, yaml.MappingStartEvent), line, anchor))
        if anchor is not None:
            self.open_anchors[anchor] = line

    def _too_deep(self, line: int) -> NoReturn:
        self._fail(line, f"the document is nested too deeply (more than {MAX_DEPTH} levels)")

    def _end(self) -> None:
        done = self.stack.pop()
        if done.is_mapping:
            # YAML merge keys (<<: *defaults): merged entries first, explicit ones override them.
            value: Any = LinedMap(done.line)
            for key, item, key_line in [*done.merged, *done.entries]:
                value[key] = item
                value.lines[key] = key_line
        else:
            value = done.items
        node = _Node(value, done.line, done.size, done.height)
        if done.anchor is not None:
            del self.open_anchors[done.anchor]
            self.anchors[done.anchor] = node
        self._add(node)

    def _add(self, node: _Node) -> None:
        if not self.stack:
            self.root = node
            return
        top = self.stack[-1]
        top.size += node.size
        top.height = max(top.height, node.height + 1)
        if not top.is_mapping:
            top.items.append(node.value)
        elif top.key is None:
            if node.text is None:
                self._fail(node.line, "a key must be a plain name")
            if node.tag != _MERGE_TAG:
                first = top.first_lines.get(node.text)  # type: ignore[arg-type]
                if first is not None:
                    self._fail(node.line, f"duplicate key {node.text!r} (first given at line {first})")
                top.first_lines[node.text] = node.line  # type: ignore[index]
            top.key = node
        else:
            key, top.key = top.key, None
            if key.tag == _MERGE_TAG:
                top.merged.extend(self._merge_entries(node))
            else:
                top.entries.append((key.text, node.value, key.line))  # type: ignore[arg-type]

    def _merge_entries(self, node: _Node) -> list[tuple[str, Any, int | None]]:
        """What ``<<: source`` brings: each key once, the first mapping listed winning (as YAML says)."""
        sources = node.value if isinstance(node.value, list) else [node.value]
        entries: list[tuple[str, Any, int | None]] = []
        seen: set[str] = set()
        for mapping in sources:
            if not isinstance(mapping, LinedMap):
                self._fail(node.line, "'<<' needs a mapping or list of mappings")
            for key, item in mapping.items():
                if key not in seen:
                    seen.add(key)
                    entries.append((key, item, mapping.lines.get(key)))
        return entries

    def _scalar_value(self, tag: str, text: str, line: int, is_key: bool) -> Any:
        try:
            return _scalar(tag, text)
        except ValueError:
            if is_key:  # an anchored key with a tag no value may have (`<<`): only ever used as a key
                return text
        self._fail(line, f"unsupported YAML tag {tag!r}")


_NULL, _BOOL, _INT, _FLOAT, _STR, _TIMESTAMP = (
    YAML_TAG + name for name in ("null", "bool", "int", "float", "str", "timestamp")
)


def _scalar(tag: str, text: str) -> Any:
    """YAML 1.2-style scalars: see the module docstring for why. ``ValueError`` for other tags."""
    if tag == _STR:
        return text
    if tag == _INT:
        return _decimal_int(text) if DECIMAL_INT_RE.fullmatch(text) else text
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return text.lower() == "true" if text.lower() in ("true", "false") else text
    if tag == _FLOAT:
        if DECIMAL_FLOAT_RE.fullmatch(text):
            return float(text)
        infinity = _INFINITY_RE.fullmatch(text)
        if infinity:
            return -math.inf if infinity.group(1) == "-" else math.inf
        if _NAN_RE.fullmatch(text):
            return math.nan
        return text
    if tag == _TIMESTAMP:
        return text
    raise ValueError(tag)


def _decimal_int(text: str) -> int | str:
    """A decimal integer's value, or past :data:`BIG_NUMBER_DIGITS` the text ``str(int(text))`` would give."""
    if len(text) <= BIG_NUMBER_DIGITS:
        return int(text)
    return text.lstrip("+")


# -- reading JSON -------------------------------------------------------------------------------


def parse_json(text: str, source: str) -> Any:
    """The JSON document in ``text`` as plain values: integers as in YAML, NaN refused, depth limited."""

    def pairs(items: list[tuple[str, Any]]) -> LinedMap:
        result = LinedMap()
        for key, value in items:
            if key in result:
                raise InvalidInput(f"{source}: duplicate key {key!r} in a JSON object")
            result[key] = value
            result.lines[key] = None
        return result

    def number(text: str) -> int | str:
        return _decimal_int(text) if DECIMAL_INT_RE.fullmatch(text) else text

    def constant(name: str) -> Any:
        raise InvalidInput(f"{source}: {name} is not valid JSON")

    too_deep = f"{source}: the document is nested too deeply (more than {MAX_DEPTH} levels)"
    try:
        document = json.loads(text, object_pairs_hook=pairs, parse_int=number, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{source}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InvalidInput(too_deep) from None
    if _depth(document) > MAX_DEPTH:
        raise InvalidInput(too_deep)
    return document


def _depth(value: Any) -> int:
    """Levels of nesting below ``value`` (iteratively: JSON allows about a thousand)."""
    deepest = 0
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        pending.extend((child, depth + 1) for child in children)
    return deepest


# -- writing ------------------------------------------------------------------------------------


def native_scalar(text: str) -> Any:
    """The YAML scalar this reader turns into ``text`` again: a bool, int or float if one reads back so."""
    if text in ("true", "false"):
        return text == "true"
    if DECIMAL_INT_RE.fullmatch(text) and not text.startswith("+") and text != "-0":
        return _decimal_int(text)
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
