"""What a desired-state file means (docs/reference/desired-state-files.md): read, check and build the documents of ``plan``/``apply``/``export``.

A desired-state file is keyed by entity type, then by the plain entity name, then config key ->
value; a user entry may nest ``clients:`` for user+client entities::

    topics:
      orders: {retention.ms: 86400000, cleanup.policy: [compact, delete]}
    users:
      alice:
        producer_byte_rate: 1048576
        clients:
          app1: {consumer_byte_rate: 2048}

Every mistake must be reported at once, with the file, line, entity and key. The text itself
(YAML 1.2-style scalars, duplicate keys, lines) is :mod:`configctl.desired.syntax`'s business;
this module gives it meaning:

* A user entry holding only ``clients:`` lists its clients, not the user: the user's own
  overrides (SCRAM credentials, quotas) are left alone unless the entry also names some keys.
* Top-level keys other than the seven entity types are mistakes (Kafka 4's ``groups`` and
  ``client-metrics`` among the seven: a cluster that is not Kafka 4 refuses those when the file
  is planned), except ``x-...`` keys, which are ignored so they can hold YAML anchors that
  entities merge (``<<: *defaults``).
* Values are turned into Kafka's stored strings by :func:`configctl.values.normalize_value`
  (a list is comma-joined, ``true`` becomes ``"true"``), then the whole file is validated with
  :func:`configctl.handlers.validate.validate_config`; every problem in the file is reported together.

Secrets: a SCRAM key may be given as the stored credential (``salt=...``, what ``export``
writes) or as ``[iterations=N,]password=SECRET``; a broker password config may be given as the
stored encrypted value or in plain text. Plain forms stay plain here; :mod:`configctl.desired.plan`
compares them with what is stored (without a spurious diff) and turns them into stored form.

Pure apart from reading the file.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from configctl import catalogue, secrets, values
from configctl.desired import syntax
from configctl.desired.syntax import LinedMap
from configctl.entities import TYPE_ORDER, Entity, EntityType, name_sort_key
from configctl.errors import InvalidInput, ValidationFailed
from configctl.files import read_bytes, read_stdin
from configctl.handlers import validate

CLIENTS_KEY = "clients"
EXTENSION_PREFIX = "x-"
"""Top-level keys starting with this are ignored: they hold YAML anchors (``x-defaults: &d {...}``)."""
SECRETS_MARKER = "x-configctl-secrets"
SECRETS_OMITTED = "omitted"
"""``x-configctl-secrets: omitted`` (written by ``export --no-secrets``): the file leaves sensitive keys
out, so plan and apply keep the stored ones instead of deleting them (see :class:`DesiredState`)."""


@dataclass(frozen=True)
class DesiredState:
    """What a desired-state file asks for.

    ``configs`` maps every listed entity to its complete config in stored-string form (SCRAM
    and broker password values may still be in plain form, see the module docstring), in file
    order. ``types`` are the entity types the file has a section for: ``--prune`` only removes
    overrides of unlisted entities of these types, so a topics-only file never touches users.

    ``secrets_omitted`` (the file says :data:`SECRETS_MARKER`: omitted) makes sensitive keys
    unmanaged unless the file names them: a key the file does not list is kept as stored when it
    is sensitive (SCRAM credentials, broker passwords), for listed and pruned entities alike.
    """

    source: str
    configs: Mapping[Entity, Mapping[str, str]]
    types: frozenset[EntityType]
    secrets_omitted: bool = False

    def __len__(self) -> int:
        return len(self.configs)


# -- reading ------------------------------------------------------------------------------------


def read_source(path: str | Path) -> tuple[bytes, str]:
    """The raw bytes of a desired-state file and the name to use in messages (``-`` is stdin)."""
    name = str(path)
    if name == "-":
        return read_stdin("<stdin>"), "<stdin>"
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
    document = syntax.parse_json(text, source) if is_json else syntax.parse_yaml(text, source)
    problems: list[str] = []
    state = _read_document(document, source, problems, allow_custom=allow_custom)
    if problems:
        # In file order: structural problems are found before validation ones, but read by line.
        prefix = len(source) + 1
        problems.sort(
            key=lambda p: int(p[prefix:].split(":", 1)[0]) if p[prefix : prefix + 1].isdigit() else 0
        )
        raise ValidationFailed(problems)
    return state


# -- checking -----------------------------------------------------------------------------------


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
    secrets_omitted = False
    for type_name, section in document.items():
        line = document.lines.get(type_name)
        if type_name == SECRETS_MARKER:
            secrets_omitted = section == SECRETS_OMITTED
            if not secrets_omitted:
                problems.append(
                    f"{_where(source, line)}: {SECRETS_MARKER}: expected {SECRETS_OMITTED!r} "
                    f"(written by export --no-secrets), not {_kind(section).removeprefix('the value ')}"
                )
            continue
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
    return DesiredState(source, configs, frozenset(types), secrets_omitted)


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
        body = LinedMap(line)
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
        entity.type is EntityType.USERS and key in secrets.SCRAM_MECHANISMS and secrets.scram_in_clear(value)
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
    shown = entity.label
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
        found += validate.validate_config(entity, checked, changed=(), allow_custom=allow_custom)
    else:
        found = validate.validate_config(entity, checked, allow_custom=allow_custom)
    longest = max(map(len, key_lines), default=0)
    for problem in found:
        line = _problem_line(problem, key_lines, longest)
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
    cross = validate.validate_config(_PROBE_TOPIC, alone, changed=(), allow_custom=allow_custom)
    every = validate.validate_config(_PROBE_TOPIC, alone, changed=(key,), allow_custom=allow_custom)
    return tuple(p for p in every if p not in cross)


def _problem_line(problem: str, key_lines: Mapping[str, int | None], longest: int) -> int | None:
    """The line of the key a validation message is about: the longest key it starts with (then
    ``:`` or a space), else the first it quotes (``'key'``; the longest at the first quote).

    The candidates are read off the message and looked up, never every key tried against it:
    an entity with ten thousand bad keys has ten thousand problems (``longest``: the longest key).
    """
    for end in range(min(longest, len(problem) - 1), 0, -1):
        if problem[end] in ": " and problem[:end] in key_lines:
            return key_lines[problem[:end]]
    quotes = [i for i, char in enumerate(problem) if char == "'"]
    for n, start in enumerate(quotes):
        for end in reversed(quotes[n + 1 : bisect_right(quotes, start + 1 + longest)]):
            if end > start + 1 and problem[start + 1 : end] in key_lines:
                return key_lines[problem[start + 1 : end]]
    return key_lines.get("")


# -- writing ------------------------------------------------------------------------------------


def to_document(
    configs: Iterable[tuple[Entity, Mapping[str, str]]],
    types: Iterable[EntityType] = (),
    *,
    include_secrets: bool = True,
) -> dict[str, Any]:
    """The desired-state document for these entity configs (what ``export`` writes).

    Every type in ``types`` gets a section even when empty, so the file states that the type
    has no overrides (and ``plan --prune`` with it removes any that appear later), except the
    families only Kafka 4 has (``groups``, ``client-metrics``: :attr:`EntityType.kraft_only`):
    their sections appear only when they hold entries, so a ZooKeeper cluster's export reads
    exactly as before and can be applied to it (where such a section is refused). Entities with
    no overrides are left out, except users that hold clients. Values are written as YAML-native
    numbers, booleans and lists whenever that reads back to exactly the stored string; anything
    else stays a string, so ``export`` then ``plan`` always shows no changes.

    Without ``include_secrets`` sensitive keys are left out and the document starts with
    :data:`SECRETS_MARKER`, so that plan and apply keep them rather than delete them.
    """
    if not include_secrets:
        configs = [(entity, without_secrets(entity, config)) for entity, config in configs]
    sections: dict[EntityType, dict[str, Any]] = {t: {} for t in types}
    # Sorted so a user's own entry (client None) comes before its clients: own keys, then clients.
    for entity, config in sorted(configs, key=lambda item: item[0].sort_key()):
        body = {key: to_native(entity, key, config[key]) for key in sorted(config)}
        section = sections.setdefault(entity.type, {})
        if not body:
            continue
        if entity.client is None:
            section[entity.name] = body
        else:
            section.setdefault(entity.name, {}).setdefault(CLIENTS_KEY, {})[entity.client] = body
    document: dict[str, Any] = {} if include_secrets else {SECRETS_MARKER: SECRETS_OMITTED}
    document.update(
        {
            t.value: _sorted_section(t, sections[t])
            for t in TYPE_ORDER
            if t in sections and (sections[t] or not t.kraft_only)
        }
    )
    return document


def secret_keys(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    """The sensitive keys of ``config`` (SCRAM credentials, broker passwords), with their values."""
    return {key: value for key, value in config.items() if catalogue.is_sensitive(entity.schema_type, key)}


def without_secrets(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    return {
        key: value for key, value in config.items() if not catalogue.is_sensitive(entity.schema_type, key)
    }


def _sorted_section(etype: EntityType, section: dict[str, Any]) -> dict[str, Any]:
    return {name: section[name] for name in sorted(section, key=lambda n: name_sort_key(etype, n))}


def to_native(entity: Entity, key: str, stored: str) -> Any:
    """The YAML value that reads back to exactly ``stored`` (a list, number or boolean if it can)."""
    facts = catalogue.lookup(entity.schema_type, key)
    candidates: list[Any] = []
    if facts is not None and facts.kafka_type == "list":
        candidates.append([syntax.native_scalar(item) for item in stored.split(",")] if stored else [])
    candidates.append(syntax.native_scalar(stored))
    for candidate in candidates:
        try:
            if values.normalize_value(facts, candidate, name=key) == stored:
                return candidate
        except InvalidInput:
            continue
    return stored
