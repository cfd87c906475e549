"""Entities: what a config belongs to, and how its name maps to a ZooKeeper path.

Kafka keeps one config node per entity under ``/config/<type>/<name>``; users nest
clients (``/config/users/<user>/clients/<client-id>``). User principals and client ids
are stored URL-encoded exactly as Kafka's ``Sanitizer`` does, so a broker running real
Kafka finds the same node configctl wrote. Everything here is pure: no I/O.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import urllib.parse
from dataclasses import dataclass
from enum import Enum
from typing import Any

from configctl.errors import InvalidInput

DEFAULT = "<default>"
CONFIG_ROOT = "/config"

_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_BROKER_RE = re.compile(r"0|[1-9][0-9]{0,9}")
_BROKER_ID_MAX = 2**31 - 1  # broker ids are Java ints
_BAD_ESCAPE_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class EntityType(str, Enum):
    """The five entity types of Kafka's dynamic config, spelled as in ZooKeeper."""

    TOPICS = "topics"
    CLIENTS = "clients"
    USERS = "users"
    BROKERS = "brokers"
    IPS = "ips"

    def __str__(self) -> str:
        return self.value

    @property
    def sanitized(self) -> bool:
        """User principals and client ids are URL-encoded in ZooKeeper; the rest are stored as typed."""
        return self in (EntityType.USERS, EntityType.CLIENTS)

    @property
    def has_default(self) -> bool:
        return self is not EntityType.TOPICS


TYPE_ORDER = (EntityType.TOPICS, EntityType.CLIENTS, EntityType.USERS, EntityType.BROKERS, EntityType.IPS)
"""The order types are listed in (as Kafka's documentation lists them)."""


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
    percent-encode every other UTF-8 byte with upper-case hex.
    """
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


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
    for member in EntityType:
        if text in (member.value, member.value[:-1]):
            return member
    known = ", ".join(m.value for m in EntityType)
    raise InvalidInput(f"unknown entity type {value!r} (expected one of: {known})")


def validate_topic_name(name: str) -> None:
    if name in (".", ".."):
        raise InvalidInput(f"topic name {name!r} is not allowed")
    if not _TOPIC_RE.fullmatch(name):
        if not name:
            raise InvalidInput("topic name must not be empty")
        if len(name) > 249:
            raise InvalidInput(f"topic name is {len(name)} characters long; the limit is 249")
        raise InvalidInput(
            f"topic name {name!r} is invalid: only ASCII letters, digits, '.', '_' and '-' are allowed"
        )


def validate_name(entity_type: EntityType, name: str) -> None:
    """Raise :class:`InvalidInput` if ``name`` cannot name an entity of ``entity_type``."""
    if name == DEFAULT:
        if not entity_type.has_default:
            raise InvalidInput(
                "topics have no <default> entity; broker defaults live under brokers/<default>"
            )
        return
    if entity_type is EntityType.TOPICS:
        validate_topic_name(name)
    elif entity_type is EntityType.BROKERS:
        if not _BROKER_RE.fullmatch(name) or int(name) > _BROKER_ID_MAX:
            raise InvalidInput(f"broker name {name!r} must be a non-negative integer broker id or <default>")
    elif entity_type is EntityType.IPS:
        try:
            ipaddress.ip_address(name)
        except ValueError:
            raise InvalidInput(f"{name!r} is not a valid IPv4 or IPv6 address") from None
    elif not name:
        raise InvalidInput(f"{entity_type.value[:-1]} name must not be empty")
    else:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{entity_type.value[:-1]} name {name!r} is not valid Unicode text") from None


@functools.total_ordering
@dataclass(frozen=True)
class Entity:
    """One config-bearing entity, named in plain (unsanitized) form.

    ``client`` is set only for the nested ``users/<user>/clients/<client>`` entities.
    Construct through :meth:`of` or :meth:`from_path` to get validation.
    """

    type: EntityType
    name: str
    client: str | None = None

    @classmethod
    def of(cls, entity_type: EntityType | str, name: str, client: str | None = None) -> Entity:
        etype = entity_type if isinstance(entity_type, EntityType) else parse_entity_type(entity_type)
        validate_name(etype, name)
        if client is not None:
            if etype is not EntityType.USERS:
                raise InvalidInput("only users nest clients (users/<user>/clients/<client-id>)")
            validate_name(EntityType.CLIENTS, client)
        return cls(etype, name, client)

    @classmethod
    def from_path(cls, path: str) -> Entity:
        """Parse an entity path as found in a v2 notification (``users/User%3Aalice/clients/app1``)."""
        parts = path.strip("/").split("/")
        if parts and parts[0] == CONFIG_ROOT.strip("/"):
            parts = parts[1:]
        if len(parts) == 2:
            etype = parse_entity_type(parts[0])
            return cls.of(etype, _stored_to_plain(etype, parts[1]))
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return cls.of(
                EntityType.USERS,
                _stored_to_plain(EntityType.USERS, parts[1]),
                _stored_to_plain(EntityType.CLIENTS, parts[3]),
            )
        raise InvalidInput(
            f"{path!r} is not an entity path (expected <type>/<name> or users/<u>/clients/<c>)"
        )

    def sort_key(self) -> tuple[Any, ...]:
        """The one order of entities everywhere (listings, plans, exports, reports).

        Types in :data:`TYPE_ORDER`; within a type ``<default>`` first, broker ids by number,
        other names as text; a user before its user+client entities.
        """
        return (
            TYPE_ORDER.index(self.type),
            name_sort_key(self.type, self.name),
            (0, "") if self.client is None else name_sort_key(EntityType.CLIENTS, self.client),
        )

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Entity):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT if self.client is None else self.client == DEFAULT

    @property
    def schema_type(self) -> EntityType:
        """The schema that validates this entity's keys (user+client quotas use the user schema)."""
        return self.type

    @property
    def path(self) -> str:
        """The stored path below ``/config`` (sanitized)."""
        base = f"{self.type.value}/{_plain_to_stored(self.type, self.name)}"
        if self.client is not None:
            base += f"/clients/{_plain_to_stored(EntityType.CLIENTS, self.client)}"
        return base

    @property
    def znode(self) -> str:
        return f"{CONFIG_ROOT}/{self.path}"

    @property
    def label(self) -> str:
        """The entity path with plain names, as files and messages write it (``users/alice/clients/app 1``)."""
        text = f"{self.type.value}/{self.name}"
        if self.client is not None:
            text += f"/clients/{self.client}"
        return text

    @property
    def display(self) -> str:
        """A human label: ``user 'User:alice' client 'app1'``."""
        label = (
            f"{self.type.value[:-1]} {self.name!r}"
            if self.name != DEFAULT
            else f"default {self.type.value[:-1]}"
        )
        if self.client is not None:
            label += f", client {self.client!r}" if self.client != DEFAULT else ", default client"
        return label

    def __str__(self) -> str:
        return self.path


def _plain_to_stored(etype: EntityType, name: str) -> str:
    if name == DEFAULT or not etype.sanitized:
        return name
    return sanitize(name)


def _stored_to_plain(etype: EntityType, stored: str) -> str:
    if stored == DEFAULT or not etype.sanitized:
        return stored
    try:
        plain = desanitize(stored)
    except ValueError:  # includes UnicodeDecodeError
        raise InvalidInput(f"stored name {stored!r} is not valid URL-encoded UTF-8") from None
    if plain == DEFAULT:
        # A principal literally named "<default>" (stored "%3Cdefault%3E") has no plain name
        # distinct from the default entity; refuse it rather than silently alias the default.
        raise InvalidInput(
            f"stored name {stored!r} is a {etype.value[:-1]} literally named {DEFAULT}, "
            "which cannot be told apart from the default entity"
        )
    return plain
