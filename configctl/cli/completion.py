"""Shell completion (click's): entity types, config keys of the type at hand, names from ZooKeeper.

Enable it once per shell (docs/operations.md)::

    eval "$(_CONFIGCTL_COMPLETE=bash_source configctl)"       # bash, in ~/.bashrc
    eval "$(_CONFIGCTL_COMPLETE=zsh_source configctl)"        # zsh, in ~/.zshrc
    _CONFIGCTL_COMPLETE=fish_source configctl | source         # fish

Entity names are read from ``/config/<type>`` of the ZooKeeper the command line (flags,
environment, profile) points at, only if it answers within :data:`NAME_TIMEOUT`; otherwise
nothing is offered. A completion function never prints and never raises: a half-typed command
line is not an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import click
from click.shell_completion import CompletionItem

from configctl.entities import (
    DEFAULT,
    TYPE_ORDER,
    EntityType,
    desanitize,
    parse_entity_type,
    sanitize,
)
from configctl.errors import InvalidInput

NAME_TIMEOUT = 1.0
"""Seconds to wait for ZooKeeper while completing: a shell must not hang on a Tab."""

# option name (click's) -> the entity type it names
_SHORTCUT_TYPES = {
    "topic": EntityType.TOPICS,
    "client": EntityType.CLIENTS,
    "user": EntityType.USERS,
    "broker": EntityType.BROKERS,
    "ip": EntityType.IPS,
}


def _items(candidates: Iterable[str], incomplete: str, *, prefix: str = "") -> list[CompletionItem]:
    return [CompletionItem(prefix + c) for c in candidates if c.startswith(incomplete)]


def complete_entity_type(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``--entity-type``: topics, clients, users, brokers, ips."""
    return _items((t.value for t in TYPE_ORDER), incomplete)


def _types(params: dict[str, Any]) -> list[EntityType] | None:
    """The ``--entity-type`` values typed so far (None when one is not a type)."""
    try:
        return [parse_entity_type(t) for t in params.get("entity_types") or () if t]
    except InvalidInput:
        return None


def entity_type_of(params: dict[str, Any]) -> EntityType | None:
    """The entity type the options typed so far name (the schema's type for user+client)."""
    types = _types(params)
    if types is None:
        return None
    if types:
        return EntityType.CLIENTS if EntityType.CLIENTS in types else types[-1]
    given = [
        etype
        for name, etype in _SHORTCUT_TYPES.items()
        if params.get(name) is not None or params.get(f"{name}_defaults")
    ]
    if EntityType.CLIENTS in given:
        return EntityType.CLIENTS
    return given[0] if given else None


def _config_keys(params: dict[str, Any]) -> list[str]:
    from configctl import catalogue

    etype = entity_type_of(params)
    types = [etype] if etype is not None else list(TYPE_ORDER)
    names: set[str] = set()
    for each in types:
        names.update(catalogue.known_names(each))
    return sorted(names)


def _split_last(incomplete: str) -> tuple[str, str] | None:
    """``"a=1,b=[x,y],ret"`` -> ``("a=1,b=[x,y],", "ret")``; None inside an open ``[...]``."""
    depth, cut = 0, 0
    for index, char in enumerate(incomplete):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            cut = index + 1
    if depth:
        return None
    return incomplete[:cut], incomplete[cut:]


def complete_add_config(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``--add-config K=V,...``: the keys of the entity type named so far, each with its ``=``."""
    return _complete_keys(ctx, incomplete, suffix="=")


def complete_delete_config(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """``--delete-config K1,K2``: the keys of the entity type named so far."""
    return _complete_keys(ctx, incomplete, suffix="")


def _complete_keys(ctx: click.Context, incomplete: str, *, suffix: str) -> list[CompletionItem]:
    split = _split_last(incomplete)
    if split is None:
        return []
    done, current = split
    if "=" in current:
        return []  # a value is being typed
    return _items((key + suffix for key in _config_keys(ctx.params)), current, prefix=done)


def complete_entity_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``--topic``, ``--user``, ``--client``, ``--broker``, ``--ip``, ``--entity-name``: the names
    stored under ``/config/<type>`` (a user's clients with ``--user``)."""
    with contextlib.suppress(Exception):
        etype, user, sanitized = _names_where(param.name or "", ctx.params)
        if etype is None:
            return []
        names = [_plain(n) if sanitized else n for n in _stored_names(ctx, etype, user) if n != DEFAULT]
        return _items(sorted(n for n in names if n is not None), incomplete)
    return []


def _plain(stored: str) -> str | None:
    try:
        return desanitize(stored)
    except ValueError:
        return None  # not a name Kafka would have written


def _names_where(option: str, params: dict[str, Any]) -> tuple[EntityType | None, str | None, bool]:
    """Whose names to offer: the entity type, the user whose clients they are (stored name), and
    whether the names are stored sanitized."""
    if option == "entity_names":
        types = _types(params)
        if not types:
            return None, None, False
        etype = types[-1]
        if etype is EntityType.CLIENTS and EntityType.USERS in types[:-1]:
            return None, None, False  # whose clients: the user's name is not known in this spelling
    else:
        etype = _SHORTCUT_TYPES[option]
    if etype is EntityType.CLIENTS and params.get("user") is not None:
        return etype, sanitize(params["user"]), True
    return etype, None, etype.sanitized


def _stored_names(ctx: click.Context, etype: EntityType, user: str | None) -> list[str]:
    """The names the configured store holds, [] unless it answers at once."""
    from configctl.cli.context import new_store, quiet_libraries

    quiet_libraries()
    with new_store(ctx, timeout=NAME_TIMEOUT) as store:
        return store.entity_names(etype, user=user)
