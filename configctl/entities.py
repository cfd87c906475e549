"""Entities: what a config belongs to, and how its name maps to a ZooKeeper path.

Kafka keeps one config node per entity under ``/config/<type>/<name>``; users nest
clients (``/config/users/<user>/clients/<client-id>``). User principals and client ids
are stored URL-encoded exactly as Kafka's ``Sanitizer`` does, so a broker running real
Kafka finds the same node configctl wrote. Everything here is pure: no I/O.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from configctl import ips
from configctl.errors import InvalidInput, shown

DEFAULT = "<default>"
CONFIG_ROOT = "/config"

DOT_NAMES = (".", "..")
"""Names ZooKeeper refuses for a node (and Kafka for a topic), whatever the entity type."""
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_TOPIC_LIST_RE = re.compile(f"{_TOPIC_RE.pattern}(?:/{_TOPIC_RE.pattern})*")
"""Topic names joined by ``/``, which no topic name holds: one match checks a whole listing."""
_BROKER_RE = re.compile(r"0|[1-9][0-9]{0,9}")
_BROKER_ID_MAX = 2**31 - 1  # broker ids are Java ints
_BAD_ESCAPE_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class EntityType(str, Enum):
    """The entity types of Kafka's dynamic config, spelled as in ZooKeeper (and kafka-configs.sh).

    The first five exist on every cluster. ``groups`` (a consumer, share or streams group's
    configs, ConfigResource GROUP) and ``client-metrics`` (a client-metrics subscription,
    CLIENT_METRICS) exist only on a KRaft cluster (Kafka 4): :attr:`kraft_only`.
    ``broker-loggers`` (a broker's log4j loggers, ConfigResource BROKER_LOGGER, named by broker id)
    exist on both lines but only in each broker's memory: :attr:`in_broker_memory`.
    """

    TOPICS = "topics"
    CLIENTS = "clients"
    USERS = "users"
    BROKERS = "brokers"
    IPS = "ips"
    GROUPS = "groups"
    CLIENT_METRICS = "client-metrics"
    BROKER_LOGGERS = "broker-loggers"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def _missing_(cls, value: object) -> EntityType | None:
        """A type registered at run time (:func:`register_type`), by its value."""
        return _REGISTERED.get(value) if isinstance(value, str) else None

    @property
    def sanitized(self) -> bool:
        """User principals and client ids are URL-encoded in ZooKeeper; the rest are stored as typed.

        Group ids and subscription names are encoded the same way in configctl's own paths (its
        history keys): Kafka allows any text there, ``/`` included, and sends them as typed."""
        return self in _SANITIZED_TYPES  # a set lookup: asked for each of 100,000s of entities

    @property
    def nests_clients(self) -> bool:
        """Users nest their clients: ``users/<user>/clients/<client-id>``."""
        return self is EntityType.USERS

    @property
    def has_default(self) -> bool:
        """Topics, groups and client-metrics subscriptions have no ``<default>`` entity (a group's
        key falls back to the brokers' ``group.*`` keys instead)."""
        return self not in _NO_DEFAULT

    @property
    def kraft_only(self) -> bool:
        """Kafka keeps this type's configs only on a KRaft cluster (Kafka 4): no ZooKeeper node,
        no Kafka 3.9 broker, knows it."""
        return self in _KRAFT_ONLY

    @property
    def in_broker_memory(self) -> bool:
        """The configs live only in one broker's memory (its loggers' levels): no ZooKeeper node
        and no metadata record holds them, only that broker can be asked or told (through the
        Admin API), and a restart of the broker forgets them."""
        return self is EntityType.BROKER_LOGGERS

    @property
    def singular(self) -> str:
        """The type's name for one entity, as messages say it (``topic``, ``client-metrics``)."""
        return "client-metrics" if self is EntityType.CLIENT_METRICS else self.value[:-1]


_SANITIZED_TYPES = frozenset(
    {EntityType.USERS, EntityType.CLIENTS, EntityType.GROUPS, EntityType.CLIENT_METRICS}
)
_KRAFT_ONLY = frozenset({EntityType.GROUPS, EntityType.CLIENT_METRICS})
_NO_DEFAULT = frozenset({EntityType.TOPICS, EntityType.BROKER_LOGGERS, *_KRAFT_ONLY})
_TOPICS = EntityType.TOPICS  # a module constant: compared for each of 100,000s of entities

TYPE_ORDER = (
    EntityType.TOPICS,
    EntityType.CLIENTS,
    EntityType.USERS,
    EntityType.BROKERS,
    EntityType.IPS,
    EntityType.GROUPS,
    EntityType.CLIENT_METRICS,
)
"""The order the types a cluster stores are listed in (as Kafka's documentation lists them; Kafka
4's two last). ``broker-loggers`` is not among them: no cluster stores a logger's level (each
broker keeps its own, in memory), so no listing of stored configs, export or desired-state file
has them; it sorts after them."""
ZOOKEEPER_TYPES = tuple(t for t in TYPE_ORDER if not t.kraft_only)
"""The five types a ZooKeeper-mode cluster (Kafka 3.9) keeps under ``/config/<type>``."""

_RANK = {etype: rank for rank, etype in enumerate((*TYPE_ORDER, EntityType.BROKER_LOGGERS))}
"""sort_key's first field, by type."""
_REGISTERED: dict[str, EntityType] = {}


def register_type(value: str) -> EntityType:
    """A sixth entity type, added at run time: how a test adds a family without editing this table.

    A real new type is one more member above (and in :data:`TYPE_ORDER`); a registered one acts
    like it wherever a type is looked up by value (``EntityType("groups")``, paths, notifications,
    :func:`parse_entity_type`) and sorts after the five. Its names follow the rule of names that
    are neither topics, brokers nor IPs (non-empty, not ``.`` or ``..``, text), are stored as
    typed, and it has a ``<default>``. Iterating :class:`EntityType` still lists the five.
    """
    if not value.endswith("s") or value in EntityType._value2member_map_ or value in _REGISTERED:
        raise InvalidInput(f"cannot register entity type {value!r}")
    member = str.__new__(EntityType, value)
    member._name_ = value.upper()
    member._value_ = value
    _REGISTERED[value] = member
    _RANK[member] = len(_RANK)
    return member


def unregister_type(entity_type: EntityType) -> None:
    """Forget a type :func:`register_type` added."""
    if _REGISTERED.get(entity_type.value) is entity_type:
        del _REGISTERED[entity_type.value]
        del _RANK[entity_type]


def refuse_in_broker_memory(entity_type: EntityType, where: str) -> None:
    """Refuse a family only a running broker holds (its loggers' levels), where configctl would not
    ask a broker (``where`` says why): the one wording of that refusal."""
    if entity_type.in_broker_memory:
        raise InvalidInput(
            f"{entity_type.value} live only in each broker's memory, so only that broker can be asked "
            f"or told (--bootstrap-server); {where}; nothing was written"
        )


def refuse_kraft_only(entity_type: EntityType, where: str = "this cluster runs in ZooKeeper mode") -> None:
    """Refuse a family only a KRaft cluster (Kafka 4) has, where the cluster is not one (``where``
    says how that is known): the one wording of that refusal, for every path that can meet it."""
    if entity_type.kraft_only:
        raise InvalidInput(
            f"{entity_type.value} configs need Kafka 4 (a KRaft cluster, --bootstrap-server); "
            f"{where}; nothing was written"
        )


def name_sort_key(entity_type: EntityType, name: str) -> tuple[int, str]:
    """``<default>`` first, then broker ids by number, then names as text."""
    if name == DEFAULT:
        return (0, "")
    if entity_type is EntityType.BROKERS and name.isdigit():
        return (1, f"{int(name):012d}")
    return (1, name)


def sanitize(name: str) -> str:
    """Encode a user principal or client id as Kafka's ``Sanitizer.sanitize`` does.

    ``URLEncoder.encode`` keeps ``[A-Za-z0-9.*_-]`` and turns a space into ``+``; Kafka then
    rewrites ``*`` to ``%2A`` and ``+`` to ``%20``. The net effect is: keep ``[A-Za-z0-9._-]``,
    percent-encode every other UTF-8 byte with upper-case hex. A lone surrogate (not text) is
    written as ``?``, as Java's encoder does.
    """
    return urllib.parse.quote(name.encode("utf-8", "replace"), safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Decode a stored name as Kafka's ``Sanitizer.desanitize`` (``URLDecoder``) does.

    Like ``URLDecoder``, a ``%`` not followed by two hex digits is an error (``ValueError``).
    """
    if _BAD_ESCAPE_RE.search(name):
        raise ValueError(f"{name!r} has a malformed %-escape")
    return urllib.parse.unquote_plus(name, errors="strict")


def parse_entity_type(value: str) -> EntityType:
    """Accept the plural spellings Kafka uses (and the singular ones operators type)."""
    text = value.strip().lower()
    members = [*EntityType, *_REGISTERED.values()]
    for member in members:
        if text in (member.value, member.value[:-1], member.singular):
            return member
    known = ", ".join(m.value for m in members)
    raise InvalidInput(f"unknown entity type {value!r} (expected one of: {known})")


def validate_topic_name(name: str) -> None:
    if name in DOT_NAMES:
        raise InvalidInput(f"topic name {name!r} is not allowed")
    if not _TOPIC_RE.fullmatch(name):
        if not name:
            raise InvalidInput("topic name must not be empty")
        if len(name) > 249:
            raise InvalidInput(f"topic name is {len(name)} characters long; the limit is 249")
        raise InvalidInput(
            f"topic name {name!r} is invalid: only ASCII letters, digits, '.', '_' and '-' are allowed"
        )


def entities_of(entity_type: EntityType, names: Sequence[str]) -> list[Entity] | None:
    """The entities of plain ``names`` of one type when every name is valid, else None.

    What :meth:`Entity.of` checks one name at a time, checked for a whole listing at once: a
    listener's full load lists 100,000 topics, and one match over the names joined by ``/``
    (which no topic name holds) costs a tenth of a check per name. None (a name is wrong, or
    the type has no such check) tells the caller to build them one by one, which says which
    name is wrong and why.
    """
    if entity_type is not _TOPICS:
        return None
    if not names:
        return []
    joined = "/".join(names)
    if (
        not _TOPIC_LIST_RE.fullmatch(joined)
        or joined.count("/") != len(names) - 1  # a "/" inside a name would split it in two
        or any(dots in names for dots in DOT_NAMES)
    ):
        return None
    return [Entity(_TOPICS, name) for name in names]


def validate_name(entity_type: EntityType, name: str) -> None:
    """Raise :class:`InvalidInput` if plain ``name`` cannot name an entity of ``entity_type``.

    ``<default>`` is the default entity of every type but topics (for users and clients,
    :meth:`Entity.of` with ``literal=True`` names a principal literally called ``<default>``).
    Every name must also make a node ZooKeeper accepts: ``.`` and ``..`` never do, even as
    user or client names (Kafka's sanitizer keeps dots).
    """
    if name == DEFAULT:
        if entity_type is _TOPICS:
            raise InvalidInput(
                "topics have no <default> entity; broker defaults live under brokers/<default>"
            )
        if not entity_type.has_default:
            raise InvalidInput(
                f"{entity_type.value} have no <default> entity"
                + (
                    "; a group's keys fall back to the brokers' group.* keys"
                    if entity_type is EntityType.GROUPS
                    else ""
                )
            )
        return
    if entity_type is _TOPICS:  # first, and nothing else: a full load names 100,000 topics
        validate_topic_name(name)
        return
    if entity_type is EntityType.BROKERS or entity_type is EntityType.BROKER_LOGGERS:
        if not _BROKER_RE.fullmatch(name) or int(name) > _BROKER_ID_MAX:
            raise InvalidInput(
                f"{entity_type.singular} name {shown(name)} must be a non-negative integer broker id"
                + (" or <default>" if entity_type.has_default else "")
            )
        return
    if entity_type is EntityType.IPS:
        if ips.literal(name) is None and not ips.is_host_name(name):
            raise InvalidInput(f"{shown(name)} is not a valid IPv4 or IPv6 address or host name")
        return
    kind = entity_type.singular
    if not name:
        raise InvalidInput(f"{kind} name must not be empty")
    if name in DOT_NAMES:
        raise InvalidInput(
            f"{kind} name {name!r} cannot be stored: ZooKeeper refuses '.' and '..' as node names"
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{kind} name {shown(name)} is not valid Unicode text") from None


@functools.total_ordering
@dataclass(frozen=True, init=False)
class Entity:
    """One config-bearing entity, named in plain (unsanitized) form.

    ``client`` is set only for the nested ``users/<user>/clients/<client>`` entities. ``<default>``
    as a name is the default entity, except that a user or client literally named ``<default>``
    (stored ``%3Cdefault%3E``, as Kafka does) has ``literal`` / ``client_literal`` set.
    Construct through :meth:`of` or :meth:`from_path` to get validation.
    """

    type: EntityType
    name: str
    client: str | None = None
    literal: bool = False
    client_literal: bool = False

    def __init__(
        self,
        type: EntityType,
        name: str,
        client: str | None = None,
        literal: bool = False,
        client_literal: bool = False,
    ) -> None:
        """The dataclass's own frozen ``__init__`` sets each field through ``object.__setattr__``;
        filling the instance dict directly builds an entity in less than half the time, and a
        full load builds one per topic (100,000s)."""
        fields = self.__dict__
        fields["type"] = type
        fields["name"] = name
        fields["client"] = client
        fields["literal"] = literal
        fields["client_literal"] = client_literal

    @classmethod
    def of(
        cls,
        entity_type: EntityType | str,
        name: str,
        client: str | None = None,
        *,
        literal: bool = False,
        client_literal: bool = False,
    ) -> Entity:
        etype = entity_type if isinstance(entity_type, EntityType) else parse_entity_type(entity_type)
        literal = literal and name == DEFAULT
        if literal and not etype.sanitized:
            raise InvalidInput(f"a {etype.singular} cannot be literally named {DEFAULT}")
        if not literal:
            validate_name(etype, name)
        if client is not None:
            if etype is not EntityType.USERS:
                raise InvalidInput("only users nest clients (users/<user>/clients/<client-id>)")
            client_literal = client_literal and client == DEFAULT
            if not client_literal:
                validate_name(EntityType.CLIENTS, client)
        else:
            client_literal = False
        return cls(etype, name, client, literal, client_literal)

    @classmethod
    def named(cls, entity_type: EntityType | str, name: str, client: str | None = None) -> Entity:
        """An entity as kafka-configs.sh reads ``--entity-name`` (and configctl's ``--user``, ...).

        An empty name is the default entity; a user or client name is taken literally, so
        ``<default>`` there is a principal with that name (Kafka sanitizes it to
        ``%3Cdefault%3E``); brokers and IPs take ``<default>`` as their default entity.
        """
        etype = entity_type if isinstance(entity_type, EntityType) else parse_entity_type(entity_type)
        plain = DEFAULT if name == "" else name
        client_plain = DEFAULT if client == "" else client
        return cls.of(
            etype,
            plain,
            client_plain,
            literal=etype.sanitized and name == DEFAULT,
            client_literal=client == DEFAULT,
        )

    @classmethod
    def from_path(cls, path: str) -> Entity:
        """Parse a stored entity path (``users/User%3Aalice/clients/app1``), as notifications carry it.

        Only canonical paths are entities: a name that is not exactly what Kafka's sanitizer
        would store (``users/%2E%2E`` for ``..``) or that ZooKeeper could not hold is refused.
        """
        parts = path.strip("/").split("/")
        if parts and parts[0] == CONFIG_ROOT.strip("/"):
            parts = parts[1:]
        if len(parts) == 2:
            etype = parse_entity_type(parts[0])
            name, literal = _stored_to_plain(etype, parts[1])
            return cls.of(etype, name, literal=literal)
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            name, literal = _stored_to_plain(EntityType.USERS, parts[1])
            client, client_literal = _stored_to_plain(EntityType.CLIENTS, parts[3])
            return cls.of(EntityType.USERS, name, client, literal=literal, client_literal=client_literal)
        raise InvalidInput(
            f"{shown(path)} is not an entity path (expected <type>/<name> or users/<u>/clients/<c>)"
        )

    def sort_key(self) -> tuple[Any, ...]:
        """The one order of entities everywhere (listings, plans, exports, reports).

        Types in :data:`TYPE_ORDER`; within a type ``<default>`` first, broker ids by number,
        other names as text; a user before its user+client entities.
        """
        return (
            _RANK[self.type],
            name_sort_key(self.type, self.stored_name),
            (0, "") if self.client is None else name_sort_key(EntityType.CLIENTS, self.stored_client or ""),
        )

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Entity):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    @property
    def user_is_default(self) -> bool:
        """The entity's own name (the user, for user+client entities) is ``<default>``."""
        return self.name == DEFAULT and not self.literal

    @property
    def client_is_default(self) -> bool:
        return self.client == DEFAULT and not self.client_literal

    @property
    def is_default(self) -> bool:
        """The entity is a default entity: ``<type>/<default>``, or ``users/<u>/clients/<default>``."""
        return self.user_is_default if self.client is None else self.client_is_default

    @property
    def schema_type(self) -> EntityType:
        """The schema that validates this entity's keys (user+client quotas use the user schema)."""
        return self.type

    @property
    def stored_name(self) -> str:
        """The entity's own name as stored in ZooKeeper (sanitized for users and clients)."""
        return _plain_to_stored(self.type, self.name, self.literal)

    @property
    def stored_client(self) -> str | None:
        if self.client is None:
            return None
        return _plain_to_stored(EntityType.CLIENTS, self.client, self.client_literal)

    @property
    def path(self) -> str:
        """The stored path below ``/config`` (sanitized); computed once per entity (the listener
        asks for it several times per entity, for 100,000s of them; ``functools.cached_property``
        takes a lock on every first use before Python 3.12)."""
        cached: str | None = self.__dict__.get("_path")  # not a KeyError per entity: 100,000s of them
        if cached is not None:
            return cached
        base = f"{self.type._value_}/{self.stored_name}"  # _value_: .value is a Python-level property
        if self.client is not None:
            base += f"/clients/{self.stored_client}"
        self.__dict__["_path"] = base  # not a field: equality, hashing and repr ignore it
        return base

    @property
    def znode(self) -> str:
        return f"{CONFIG_ROOT}/{self.path}"

    @property
    def label(self) -> str:
        """The entity path with plain names, as files and messages write it (``users/alice/clients/app 1``).

        A principal literally named ``<default>`` shows its stored form, so it never reads as the default.
        """
        text = f"{self.type.value}/{self.stored_name if self.literal else self.name}"
        if self.client is not None:
            text += f"/clients/{self.stored_client if self.client_literal else self.client}"
        return text

    @property
    def display(self) -> str:
        """A human label: ``user 'alice', client 'app1'``, ``default user``."""
        kind = self.type.singular
        label = f"default {kind}" if self.user_is_default else f"{kind} {self.name!r}"
        if self.client is not None:
            label += ", default client" if self.client_is_default else f", client {self.client!r}"
        return label

    def __str__(self) -> str:
        return self.path


def _plain_to_stored(etype: EntityType, name: str, literal: bool = False) -> str:
    if (name == DEFAULT and not literal) or not etype.sanitized:
        return name
    return sanitize(name)


def _stored_to_plain(etype: EntityType, stored: str) -> tuple[str, bool]:
    """(plain name, literally "<default>") of a stored name; refuses non-canonical forms."""
    if stored == DEFAULT:
        return stored, False
    if stored == "" or stored in DOT_NAMES:
        raise InvalidInput(f"{shown(stored)} is not a valid {etype.singular} node name")
    if not etype.sanitized:
        return stored, False
    try:
        plain = desanitize(stored)
    except ValueError:  # includes UnicodeDecodeError
        raise InvalidInput(f"stored name {shown(stored)} is not valid URL-encoded UTF-8") from None
    if sanitize(plain) != stored:
        raise InvalidInput(
            f"stored name {shown(stored)} is not how Kafka stores {shown(plain)} ({sanitize(plain)!r})"
        )
    return plain, plain == DEFAULT
