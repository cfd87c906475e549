"""Desired-state files (Contract 6): read, check and write the YAML/JSON that ``plan``/``apply``/``export`` use.

A desired-state file is keyed by entity type, then by the plain entity name, then config key ->
value; a user entry may nest ``clients:`` for user+client entities::

    topics:
      orders: {retention.ms: 86400000, cleanup.policy: [compact, delete]}
    users:
      User:alice:
        producer_byte_rate: 1048576
        clients:
          app1: {consumer_byte_rate: 2048}

Operators keep these files in version control, so reading one must be predictable and every
mistake must be reported at once, with the file, line, entity and key. Two choices follow:

* Scalars are read the YAML 1.2 way, not PyYAML's YAML 1.1 way: only ``true``/``false`` are
  booleans and only plain decimal numbers are numbers. ``1:2`` (a throttled-replica pair, which
  YAML 1.1 reads as the base-60 number 62), ``0x10``, ``010``, ``1_000`` and ``yes``/``off`` stay
  the text that was written. Entity names and config keys are always the text as written.
* A user entry holding only ``clients:`` lists its clients, not the user: the user's own
  overrides (SCRAM credentials, quotas) are left alone unless the entry also names some keys.
* Top-level keys other than the five entity types are mistakes, except ``x-...`` keys, which
  are ignored so they can hold YAML anchors that entities merge (``<<: *defaults``).
* Values are turned into Kafka's stored strings by :func:`configctl.values.normalize_value`
  (a list is comma-joined, ``true`` becomes ``"true"``), then the whole file is validated with
  :func:`configctl.validation.validate_config`; every problem in the file is reported together.

Secrets: a SCRAM key may be given as the stored credential (``salt=...``, what ``export``
writes) or as ``[iterations=N,]password=SECRET``; a broker password config may be given as the
stored encrypted value or in plain text. Plain forms stay plain here; :mod:`configctl.plan`
compares them with what is stored (without a spurious diff) and turns them into stored form.

Pure apart from reading the file.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from configctl import catalogue, secrets, validation, values
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import InvalidInput, ValidationFailed
from configctl.files import read_bytes, read_limited

TYPE_ORDER = (EntityType.TOPICS, EntityType.CLIENTS, EntityType.USERS, EntityType.BROKERS, EntityType.IPS)
CLIENTS_KEY = "clients"
EXTENSION_PREFIX = "x-"
"""Top-level keys starting with this are ignored: they hold YAML anchors (``x-defaults: &d {...}``)."""
MAX_PROBLEMS_SHOWN = 100
"""A file with thousands of mistakes would make an unreadable line; the count is always given."""

_YAML_TAG = "tag:yaml.org,2002:"
_DECIMAL_INT_RE = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_DECIMAL_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INFINITY_RE = re.compile(r"([-+]?)\.(?:inf|Inf|INF)")
_NAN_RE = re.compile(r"\.(?:nan|NaN|NAN)")

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Only used to compose nodes; the conversion to values is ours (see :func:`_value`)."""


@dataclass(frozen=True)
class DesiredState:
    """What a desired-state file asks for.

    ``configs`` maps every listed entity to its complete config in stored-string form (SCRAM
    and broker password values may still be in plain form, see the module docstring), in file
    order. ``types`` are the entity types the file has a section for: ``--prune`` only removes
    overrides of unlisted entities of these types, so a topics-only file never touches users.
    """

    source: str
    configs: Mapping[Entity, Mapping[str, str]]
    types: frozenset[EntityType]

    def __len__(self) -> int:
        return len(self.configs)


# -- reading ------------------------------------------------------------------------------------


class _Map(dict):  # type: ignore[type-arg]
    """A mapping that remembers the line of each key (None for JSON)."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line
        self.lines: dict[str, int | None] = {}


def read_source(path: str | Path) -> tuple[bytes, str]:
    """The raw bytes of a desired-state file and the name to use in messages (``-`` is stdin)."""
    name = str(path)
    if name == "-":
        return read_limited(sys.stdin.buffer, "<stdin>"), "<stdin>"
    return read_bytes(name), name


def load(path: str | Path, *, allow_custom: bool = False) -> DesiredState:
    """Read and check a desired-state file (``-`` reads stdin). Raises :class:`InvalidInput`."""
    raw, source = read_source(path)
    return parse_bytes(raw, source, allow_custom=allow_custom)


def parse_bytes(raw: bytes, source: str, *, allow_custom: bool = False) -> DesiredState:
    """Decode and :func:`parse`: a ``.json`` name, or text starting with ``{``, is read as JSON."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source}: not UTF-8 text (byte {exc.start})") from None
    is_json = source.lower().endswith(".json") or (source == "<stdin>" and text.lstrip().startswith("{"))
    return parse(text, source=source, is_json=is_json, allow_custom=allow_custom)


def parse(
    text: str, *, source: str = "<desired>", is_json: bool = False, allow_custom: bool = False
) -> DesiredState:
    """Parse and check desired-state text; every problem in it is reported in one error."""
    document = _parse_json(text, source) if is_json else _parse_yaml(text, source)
    problems: list[str] = []
    state = _read_document(document, source, problems, allow_custom=allow_custom)
    if problems:
        # In file order: structural problems are found before validation ones, but read by line.
        prefix = len(source) + 1
        problems.sort(
            key=lambda p: int(p[prefix:].split(":", 1)[0]) if p[prefix : prefix + 1].isdigit() else 0
        )
        raise _failure(problems)
    return state


def _failure(problems: list[str]) -> ValidationFailed:
    shown = problems[:MAX_PROBLEMS_SHOWN]
    if len(problems) > MAX_PROBLEMS_SHOWN:
        shown.append(f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more")
    error = ValidationFailed(shown)
    error.problems = list(problems)
    return error


def _parse_yaml(text: str, source: str) -> Any:
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
    """A composed YAML node as plain Python values (mappings as :class:`_Map`)."""
    line = node.start_mark.line + 1
    if depth > 50:
        raise InvalidInput(f"{source}:{line}: the document is nested too deeply")
    if isinstance(node, yaml.MappingNode):
        result = _Map(line)
        explicit: dict[str, int] = {}
        merged: list[tuple[str, int, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _YAML_TAG + "merge":
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
            if key_node.tag == _YAML_TAG + "merge":
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
            is_key = isinstance(key_node, yaml.ScalarNode) and key_node.tag != _YAML_TAG + "merge"
            if is_key and key_node.value not in seen:
                seen.add(key_node.value)
                entries.append((key_node.value, key_node.start_mark.line + 1, value_node))
    return entries


def _scalar(node: yaml.Node, source: str) -> Any:
    """YAML 1.2-style scalars: see the module docstring for why."""
    text, tag = node.value, node.tag
    if tag == _YAML_TAG + "null":
        return None
    if tag == _YAML_TAG + "bool":
        return text.lower() == "true" if text.lower() in ("true", "false") else text
    if tag == _YAML_TAG + "int":
        return int(text) if _DECIMAL_INT_RE.fullmatch(text) else text
    if tag == _YAML_TAG + "float":
        if _DECIMAL_FLOAT_RE.fullmatch(text):
            return float(text)
        infinity = _INFINITY_RE.fullmatch(text)
        if infinity:
            return -math.inf if infinity.group(1) == "-" else math.inf
        if _NAN_RE.fullmatch(text):
            return math.nan
        return text
    if tag in (_YAML_TAG + "str", _YAML_TAG + "timestamp"):
        return text
    raise InvalidInput(f"{source}:{node.start_mark.line + 1}: unsupported YAML tag {tag!r}")


def _parse_json(text: str, source: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> _Map:
        result = _Map()
        for key, value in items:
            if key in result:
                raise InvalidInput(f"{source}: duplicate key {key!r} in a JSON object")
            result[key] = value
            result.lines[key] = None
        return result

    def number(text: str) -> int | str:
        return int(text) if _DECIMAL_INT_RE.fullmatch(text) else text

    def constant(name: str) -> Any:
        raise InvalidInput(f"{source}: {name} is not valid JSON")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=number, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{source}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InvalidInput(f"{source}: the document is nested too deeply") from None


# -- checking -----------------------------------------------------------------------------------


def label(entity: Entity) -> str:
    """The entity path with plain names, as it is written in files and messages."""
    text = f"{entity.type.value}/{entity.name}"
    if entity.client is not None:
        text += f"/clients/{entity.client}"
    return text


def _where(source: str, line: int | None) -> str:
    return f"{source}:{line}" if line is not None else source


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"the value {value!r}"


def _read_document(document: Any, source: str, problems: list[str], *, allow_custom: bool) -> DesiredState:
    if document is None:
        return DesiredState(source, {}, frozenset())
    if not isinstance(document, Mapping):
        raise InvalidInput(
            f"{source}: a desired-state file is a mapping of entity types "
            f"({', '.join(t.value for t in TYPE_ORDER)}), not {_kind(document)}"
        )
    configs: dict[Entity, dict[str, str]] = {}
    lines: dict[Entity, dict[str, int | None]] = {}
    types: set[EntityType] = set()
    for type_name, section in document.items():
        line = document.lines.get(type_name)
        if str(type_name).startswith(EXTENSION_PREFIX):
            continue  # a place for YAML anchors shared by entities, as in docker-compose files
        etype = next((t for t in TYPE_ORDER if t.value == type_name), None)
        if etype is None:
            hint = next((t.value for t in TYPE_ORDER if type_name == t.value[:-1]), None)
            expected = ", ".join(t.value for t in TYPE_ORDER)
            problems.append(
                f"{_where(source, line)}: unknown entity type {type_name!r} "
                + (f"(did you mean {hint!r}?)" if hint else f"(expected one of: {expected})")
            )
            continue
        types.add(etype)
        if section is None:
            continue
        if not isinstance(section, Mapping):
            problems.append(
                f"{_where(source, line)}: {type_name}: expected a mapping of names, not {_kind(section)}"
            )
            continue
        for name, body in section.items():
            _read_entity(
                etype, str(name), None, body, section.lines.get(name), source, configs, lines, problems
            )
    for entity, config in configs.items():
        _validate(entity, config, lines[entity], source, problems, allow_custom=allow_custom)
    return DesiredState(source, configs, frozenset(types))


def _read_entity(
    etype: EntityType,
    name: str,
    client: str | None,
    body: Any,
    line: int | None,
    source: str,
    configs: dict[Entity, dict[str, str]],
    lines: dict[Entity, dict[str, int | None]],
    problems: list[str],
) -> None:
    shown = f"{etype.value}/{name}" + (f"/clients/{client}" if client is not None else "")
    try:
        entity = Entity.of(etype, name, client)
    except InvalidInput as exc:
        problems.append(f"{_where(source, line)}: {shown}: {exc.message}")
        return
    if body is None:
        body = _Map(line)
    if not isinstance(body, Mapping):
        problems.append(
            f"{_where(source, line)}: {shown}: expected a mapping of config keys to values, not {_kind(body)}"
        )
        return
    config: dict[str, str] = {}
    key_lines: dict[str, int | None] = {"": line}
    # A user entry holding nothing but `clients:` lists those clients, not the user itself: a
    # file that only manages client quotas must never wipe the user's SCRAM credentials.
    only_clients = etype is EntityType.USERS and client is None and list(body) == [CLIENTS_KEY]
    if not only_clients:
        configs[entity] = config  # before its clients, so file order is kept
        lines[entity] = key_lines
    for key, value in body.items():
        key_line = body.lines.get(key, line)
        if etype is EntityType.USERS and client is None and key == CLIENTS_KEY:
            _read_clients(name, value, key_line, source, configs, lines, problems)
            continue
        facts = catalogue.lookup(entity.schema_type, key)
        try:
            config[key] = values.normalize_value(facts, value, name=key)
        except InvalidInput as exc:
            problems.append(f"{_where(source, key_line)}: {shown}: {exc.message}")
            continue
        key_lines[key] = key_line


def _read_clients(
    user: str,
    value: Any,
    line: int | None,
    source: str,
    configs: dict[Entity, dict[str, str]],
    lines: dict[Entity, dict[str, int | None]],
    problems: list[str],
) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        problems.append(
            f"{_where(source, line)}: users/{user}: {CLIENTS_KEY} must map client ids to configs, not {_kind(value)}"
        )
        return
    for client, body in value.items():
        _read_entity(
            EntityType.USERS,
            user,
            str(client),
            body,
            value.lines.get(client),
            source,
            configs,
            lines,
            problems,
        )


def is_scram_spec(entity: Entity, key: str, value: str) -> bool:
    """A SCRAM key given as ``[iterations=N,]password=...`` rather than as a stored credential."""
    return (
        entity.type is EntityType.USERS and key in secrets.SCRAM_MECHANISMS and not value.startswith("salt=")
    )


def _validate(
    entity: Entity,
    config: Mapping[str, str],
    key_lines: Mapping[str, int | None],
    source: str,
    problems: list[str],
    *,
    allow_custom: bool,
) -> None:
    shown = label(entity)
    checked = dict(config)
    for key, value in config.items():
        if is_scram_spec(entity, key, value):
            # Check the spec here; give the schema a stand-in credential with the same iterations,
            # so placement rules (named users only) still apply.
            try:
                _password, iterations = secrets.parse_scram_spec(key, value)
            except InvalidInput as exc:
                problems.append(f"{_where(source, key_lines.get(key))}: {shown}: {exc.message}")
                checked.pop(key)
                continue
            stand_in = secrets.ScramCredential(b"s", b"k" * 32, b"k" * 32, iterations)
            checked[key] = stand_in.to_config_value()
            if key == "SCRAM-SHA-512":
                checked[key] = secrets.ScramCredential(
                    b"s", b"k" * 64, b"k" * 64, iterations
                ).to_config_value()
    if entity.type is EntityType.TOPICS:
        found = [p for key, value in checked.items() for p in _topic_key_problems(key, value, allow_custom)]
        found += validation.validate_config(entity, checked, changed=(), allow_custom=allow_custom)
    else:
        found = validation.validate_config(entity, checked, allow_custom=allow_custom)
    for problem in found:
        line = _problem_line(problem, key_lines)
        problems.append(f"{_where(source, line)}: {shown}: {problem}")


_PROBE_TOPIC = Entity(EntityType.TOPICS, "configctl-probe")


@lru_cache(maxsize=65536)
def _topic_key_problems(key: str, value: str, allow_custom: bool) -> tuple[str, ...]:
    """The per-key problems of one topic key and value (cross-field rules excluded).

    They depend on nothing but the key and the value, and a file with thousands of topics
    repeats the same few pairs, so each pair is checked once (a third of a bulk plan's time
    otherwise). Cross-field rules still run per topic, on its whole config.
    """
    alone = {key: value}
    cross = validation.validate_config(_PROBE_TOPIC, alone, changed=(), allow_custom=allow_custom)
    every = validation.validate_config(_PROBE_TOPIC, alone, changed=(key,), allow_custom=allow_custom)
    return tuple(p for p in every if p not in cross)


def _problem_line(problem: str, key_lines: Mapping[str, int | None]) -> int | None:
    """The line of the key a validation message is about: the key it starts with, else the first it quotes."""
    best: tuple[int, int] | None = None
    chosen = ""
    for key in key_lines:
        if not key:
            continue
        if problem.startswith((f"{key}:", f"{key} ")):
            rank = (0, -len(key))
        elif f"'{key}'" in problem:
            rank = (1 + problem.index(f"'{key}'"), -len(key))
        else:
            continue
        if best is None or rank < best:
            best, chosen = rank, key
    return key_lines.get(chosen, key_lines.get(""))


# -- writing ------------------------------------------------------------------------------------


def to_document(
    configs: Iterable[tuple[Entity, Mapping[str, str]]], types: Iterable[EntityType] = ()
) -> dict[str, Any]:
    """The desired-state document for these entity configs (what ``export`` writes).

    Every type in ``types`` gets a section even when empty, so the file states that the type
    has no overrides (and ``plan --prune`` with it removes any that appear later). Entities with
    no overrides are left out, except users that hold clients. Values are written as YAML-native
    numbers, booleans and lists whenever that reads back to exactly the stored string; anything
    else stays a string, so ``export`` then ``plan`` always shows no changes.
    """
    sections: dict[EntityType, dict[str, Any]] = {t: {} for t in types}
    # Sorted so a user's own entry (client None) comes before its clients: own keys, then clients.
    for entity, config in sorted(configs, key=lambda item: sort_key(item[0])):
        values = {key: to_native(entity, key, config[key]) for key in sorted(config)}
        section = sections.setdefault(entity.type, {})
        if not values:
            continue
        if entity.client is None:
            section[entity.name] = values
        else:
            section.setdefault(entity.name, {}).setdefault(CLIENTS_KEY, {})[entity.client] = values
    return {t.value: _sorted_section(t, sections[t]) for t in TYPE_ORDER if t in sections}


def _sorted_section(etype: EntityType, section: dict[str, Any]) -> dict[str, Any]:
    return {name: section[name] for name in sorted(section, key=lambda n: _name_key(etype, n))}


def _name_key(etype: EntityType, name: str) -> tuple[int, str]:
    if name == DEFAULT:
        return (0, "")
    if etype is EntityType.BROKERS and name.isdigit():
        return (1, f"{int(name):012d}")
    return (1, name)


def sort_key(entity: Entity) -> tuple[Any, ...]:
    return (
        TYPE_ORDER.index(entity.type),
        _name_key(entity.type, entity.name),
        (0, "") if entity.client is None else _name_key(EntityType.CLIENTS, entity.client),
    )


def to_native(entity: Entity, key: str, stored: str) -> Any:
    """The YAML value that reads back to exactly ``stored`` (a list, number or boolean if it can)."""
    facts = catalogue.lookup(entity.schema_type, key)
    candidates: list[Any] = []
    if facts is not None and facts.kafka_type == "list":
        candidates.append([_native_scalar(item) for item in stored.split(",")] if stored else [])
    candidates.append(_native_scalar(stored))
    for candidate in candidates:
        try:
            if values.normalize_value(facts, candidate, name=key) == stored:
                return candidate
        except InvalidInput:
            continue
    return stored


def _native_scalar(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if _DECIMAL_INT_RE.fullmatch(text) and not text.startswith("+") and text != "-0":
        return int(text)
    if _DECIMAL_FLOAT_RE.fullmatch(text) and any(c in text for c in ".eE"):
        return float(text)
    return text


def dump(document: Mapping[str, Any], *, as_json: bool = False, header: str | None = None) -> str:
    """Render a desired-state document as YAML (block style, in document order) or JSON."""
    if as_json:
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
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
    return dumper.represent_sequence(_YAML_TAG + "seq", data, flow_style=True)


_Dumper.add_representer(list, _represent_list)
