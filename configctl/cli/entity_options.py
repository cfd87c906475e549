"""How commands name an entity: Kafka's ``--entity-type/--entity-name/--entity-default`` and shortcuts.

Kafka pairs each ``--entity-type`` with the ``--entity-name`` or ``--entity-default`` given in
the same position, so ``--entity-type users --entity-default --entity-type clients
--entity-name app1`` means ``users/<default>/clients/app1``. click does not keep the order
of different options, so :class:`EntityCommand` remembers the raw arguments and
:func:`select_entities` reads the order from them.

Kafka 4's ``groups`` and ``client-metrics`` (``--group``, ``--client-metrics``) exist only on a
KRaft cluster: naming one without ``--bootstrap-server`` (so on ZooKeeper, Kafka 3.9) is refused
here, before any store is opened (:func:`refuse_on_zookeeper`). So is a broker's loggers
(``--broker-logger ID``, ``--entity-type broker-loggers``) without ``--bootstrap-server``: their
levels live in that broker's memory, and only the broker can be asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from configctl.cli import completion
from configctl.entities import (
    Entity,
    EntityType,
    parse_entity_type,
    refuse_in_broker_memory,
    refuse_kraft_only,
)
from configctl.errors import InvalidInput


class EntityCommand(click.Command):
    """A command that keeps its raw arguments so option order can be recovered."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["configctl.raw_args"] = list(args)
        return super().parse_args(ctx, args)


_SHORTCUTS = {
    "topic": EntityType.TOPICS,
    "client": EntityType.CLIENTS,
    "user": EntityType.USERS,
    "broker": EntityType.BROKERS,
    "ip": EntityType.IPS,
    "group": EntityType.GROUPS,
    "client_metrics": EntityType.CLIENT_METRICS,
    "broker_logger": EntityType.BROKER_LOGGERS,
}
_NO_DEFAULTS = frozenset({"topic", "group", "client_metrics", "broker_logger"})
"""Shortcuts whose type has no ``<default>`` entity, so no ``--*-defaults`` flag."""


def entity_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the entity-selection options (values reach the command as ``**selection``)."""
    options = [
        click.option(
            "--entity-type",
            "entity_types",
            multiple=True,
            metavar="TYPE",
            help="topics, clients, users, brokers or ips (or, on Kafka 4, groups or client-metrics), "
            "or broker-loggers (with --bootstrap-server); give users then clients for user+client entities.",
            shell_complete=completion.complete_entity_type,
        ),
        click.option(
            "--entity-name",
            "entity_names",
            multiple=True,
            metavar="NAME",
            help="Name of the entity.",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--entity-default",
            "entity_default",
            count=True,
            help="The <default> entity of the type in the same position.",
        ),
        click.option(
            "--topic",
            metavar="NAME",
            help="Shortcut for --entity-type topics --entity-name NAME.",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--client",
            metavar="ID",
            help="A client id (with --user: that user's client).",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--user",
            metavar="NAME",
            help="A user, by the principal's name (principal User:alice is the user alice).",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--broker", metavar="ID", help="A broker id.", shell_complete=completion.complete_entity_name
        ),
        click.option(
            "--ip",
            metavar="ADDRESS",
            help="An IPv4 or IPv6 address.",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--group",
            metavar="NAME",
            help="A consumer, share or streams group (Kafka 4, KRaft).",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--client-metrics",
            "client_metrics",
            metavar="NAME",
            help="A client-metrics subscription (Kafka 4, KRaft).",
            shell_complete=completion.complete_entity_name,
        ),
        click.option(
            "--broker-logger",
            "broker_logger",
            metavar="ID",
            help="Broker ID's loggers and their levels (asked of that broker, --bootstrap-server; "
            "kept in its memory only: a restart forgets them).",
        ),
        click.option(
            "--client-defaults", is_flag=True, help="The <default> client (with --user: that user's)."
        ),
        click.option("--user-defaults", is_flag=True, help="The <default> user."),
        click.option(
            "--broker-defaults", is_flag=True, help="The <default> broker (cluster-wide dynamic defaults)."
        ),
        click.option("--ip-defaults", is_flag=True, help="The <default> IP."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@dataclass(frozen=True)
class Selection:
    """What the options name: one entity, or every entity of a type (``entity`` is None)."""

    entity_type: EntityType
    entity: Entity | None


def select(ctx: click.Context, params: dict[str, Any], *, allow_all: bool = False) -> Selection:
    """Resolve the entity options into one entity (or, with ``allow_all``, a whole type)."""
    shortcut_given = any(params.get(k) for k in _SHORTCUTS) or any(
        params.get(f"{k}_defaults") for k in _SHORTCUTS if k not in _NO_DEFAULTS
    )
    generic_given = bool(
        params.get("entity_types") or params.get("entity_names") or params.get("entity_default")
    )
    if shortcut_given and generic_given:
        raise InvalidInput(
            "use either --entity-type/--entity-name/--entity-default or the shortcuts, not both"
        )
    if shortcut_given or generic_given:
        chosen = (
            _from_shortcuts(params) if shortcut_given else _from_generic(ctx, params, allow_all=allow_all)
        )
        refuse_on_zookeeper(ctx, chosen.entity_type)
        return chosen
    raise InvalidInput(
        "name an entity: --entity-type with --entity-name/--entity-default, or --topic/--broker/..."
    )


def _from_shortcuts(params: dict[str, Any]) -> Selection:
    """``--topic/--client/--user/--broker/--ip`` and their ``-defaults``: names are taken literally
    (a user named ``<default>`` is that principal, as Kafka sanitizes it); ``''`` or ``--*-defaults``
    is the default entity."""
    named: dict[EntityType, str] = {}
    for key, etype in _SHORTCUTS.items():
        value = params.get(key)
        is_default = bool(params.get(f"{key}_defaults")) if key not in _NO_DEFAULTS else False
        if value is not None and is_default:
            raise InvalidInput(f"--{key} and --{key}-defaults cannot be combined")
        if value is not None:
            named[etype] = value
        elif is_default:
            named[etype] = ""
    if EntityType.USERS in named and EntityType.CLIENTS in named and len(named) == 2:
        return Selection(
            EntityType.USERS,
            Entity.named(EntityType.USERS, named[EntityType.USERS], named[EntityType.CLIENTS]),
        )
    if len(named) != 1:
        flags = ", ".join(f"--{_flag(t)}" for t in named)
        raise InvalidInput(f"name one entity (only --user and --client combine); got {flags}")
    ((etype, name),) = named.items()
    if etype is EntityType.TOPICS and name == "":
        raise InvalidInput("topic name must not be empty")
    return Selection(etype, Entity.named(etype, name))


def _flag(entity_type: EntityType) -> str:
    """The shortcut option naming one entity of ``entity_type`` (``topic``, ``client-metrics``)."""
    key = next(k for k, t in _SHORTCUTS.items() if t is entity_type)
    return key.replace("_", "-")


def refuse_on_zookeeper(ctx: click.Context, entity_type: EntityType) -> None:
    """A family only Kafka 4 has (groups, client-metrics), named without ``--bootstrap-server``:
    the store would be ZooKeeper, whose Kafka (3.9) has no such configs. Refused in one line, in
    the words of :func:`configctl.entities.refuse_kraft_only` (the Admin API edge refuses it again
    on a ZooKeeper-mode cluster reached through ``--bootstrap-server``). A broker's loggers, too:
    only the broker knows them (:func:`configctl.entities.refuse_in_broker_memory`)."""
    if not (entity_type.kraft_only or entity_type.in_broker_memory):
        return
    from configctl.cli.options import settings

    if settings(ctx).bootstrap_server is None:
        refuse_in_broker_memory(entity_type, "without --bootstrap-server configctl reads ZooKeeper")
        refuse_kraft_only(entity_type, "without --bootstrap-server configctl reads ZooKeeper (Kafka 3.9)")


def _from_generic(ctx: click.Context, params: dict[str, Any], *, allow_all: bool) -> Selection:
    """Kafka's ``--entity-type``/``--entity-name``/``--entity-default``, paired by position;
    ``--entity-default`` (or an empty ``--entity-name``) is the default entity."""
    types = [parse_entity_type(t) for t in params.get("entity_types") or ()]
    if not types:
        raise InvalidInput("--entity-name/--entity-default need --entity-type")
    names = _ordered_names(ctx.meta.get("configctl.raw_args", []), params)
    if types == [EntityType.USERS, EntityType.CLIENTS] or types == [EntityType.CLIENTS, EntityType.USERS]:
        if len(names) != 2:
            raise InvalidInput(
                "a user+client entity needs a name (or --entity-default) for both the user and the client"
            )
        if types[0] is EntityType.CLIENTS:
            names.reverse()
        return Selection(EntityType.USERS, Entity.named(EntityType.USERS, names[0], names[1]))
    if len(types) != 1:
        raise InvalidInput("give one --entity-type (or users and clients for a user+client entity)")
    if not names:
        if allow_all and not types[0].in_broker_memory:  # each broker keeps its own: name one
            return Selection(types[0], None)
        raise InvalidInput(f"name the {types[0].value[:-1]}: --entity-name NAME or --entity-default")
    if len(names) > 1:
        raise InvalidInput("one --entity-name (or --entity-default) per --entity-type")
    if types[0] is EntityType.TOPICS and names[0] == "":
        raise InvalidInput(
            "topics have no default entity: --entity-default (or an empty name) is not a topic"
        )
    return Selection(types[0], Entity.named(types[0], names[0]))


def _ordered_names(raw_args: list[str], params: dict[str, Any]) -> list[str]:
    """Names and defaults in the order they appeared on the command line."""
    explicit = list(params.get("entity_names") or ())
    ordered: list[str] = []
    index = 0
    tokens = iter(raw_args)
    for token in tokens:
        if token == "--entity-default":
            ordered.append("")
        elif token == "--entity-name":
            next(tokens, None)
            ordered.append(explicit[index] if index < len(explicit) else "")
            index += 1
        elif token.startswith("--entity-name="):
            ordered.append(explicit[index] if index < len(explicit) else "")
            index += 1
    if len(ordered) != len(explicit) + int(params.get("entity_default") or 0):
        # Could not recover the order (unusual spelling): explicit names first, then defaults.
        ordered = explicit + [""] * int(params.get("entity_default") or 0)
    return ordered


ENTITY_PARAM_NAMES = (
    "entity_types",
    "entity_names",
    "entity_default",
    "topic",
    "client",
    "user",
    "broker",
    "ip",
    "group",
    "client_metrics",
    "broker_logger",
    "client_defaults",
    "user_defaults",
    "broker_defaults",
    "ip_defaults",
)


def pop_selection(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Split the entity-selection params out of a command's kwargs."""
    return {name: kwargs.pop(name) for name in ENTITY_PARAM_NAMES if name in kwargs}
