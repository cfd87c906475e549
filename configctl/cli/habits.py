"""Hints for kafka-configs.sh habits: ``--alter``, ``--describe``, ``--bootstrap-server``, ...

configctl names what to do with a subcommand (``configctl alter``) where kafka-configs.sh takes
an option (``--alter``), and it speaks to ZooKeeper only. Someone who types Kafka's spelling gets
"No such option" from click; this says what to type instead. No part of the command line is
echoed back but the option itself: it may hold a password (``--add-config 'password=...'``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

_ACTIONS = {"--alter": "alter", "--describe": "describe"}
_ENTITY_OPTIONS = {
    "--entity-type",
    "--entity-name",
    "--entity-default",
    "--topic",
    "--client",
    "--user",
    "--broker",
    "--ip",
    "--broker-defaults",
    "--user-defaults",
    "--client-defaults",
    "--ip-defaults",
}
_ALTER_OPTIONS = {"--add-config", "--add-config-file", "--delete-config"}
_NOT_ZOOKEEPER = {
    "--zk-tls-config-file": "configctl takes --zk-tls, --zk-tls-ca, --zk-tls-cert, --zk-tls-key (or a --profile) "
    "instead of a ZooKeeper client properties file",
}


SIMILAR = 0.6
"""How alike a mistyped option and a known one must be, compared without their dashes."""
MARGIN = 0.1
"""A suggestion must be about as close as the closest one: '--add-confg' means '--add-config',
not '--command-config' as well."""


def close_options(typed: str, known: Iterable[str]) -> list[str]:
    """The known options (or commands) a mistyped one most likely meant, closest first (often none).

    click compares the raw spellings, so every long option shares the two leading dashes with the
    typo and unrelated ones pass its threshold (``--watch`` -> ``--zk-auth``). Comparing the names
    without their dashes, and keeping only those about as close as the best, leaves the near
    misses: ``--watch`` -> ``--wait``.
    """
    name = typed.split("=", 1)[0].lstrip("-")
    scored: dict[str, float] = {}
    for option in known:
        score = SequenceMatcher(None, name, option.lstrip("-")).ratio()
        if score >= SIMILAR and option != typed:
            scored[option] = score
    if not scored:
        return []
    best = max(scored.values())
    near = [option for option, score in scored.items() if score >= best - MARGIN]
    return sorted(near, key=lambda option: (-scored[option], option))


def no_such_option(typed: str, known: Iterable[str]) -> str:
    """click's "No such option" line, with :func:`close_options` as its suggestions."""
    return _no_such("option", typed, known)


def no_such_command(typed: str, known: Iterable[str]) -> str:
    """click's "No such command" line, with the same close matches (``statsu`` -> ``status``)."""
    return _no_such("command", typed, known)


def _no_such(what: str, typed: str, known: Iterable[str]) -> str:
    message = f"No such {what} {typed!r}."
    matches = close_options(typed, known)
    if len(matches) == 1:
        return f"{message} Did you mean {matches[0]!r}?"
    if matches:
        return f"{message} (Did you mean one of: {', '.join(repr(m) for m in matches)}?)"
    return message


_DESCRIBE_ALL = (
    "No such option: --all. kafka-configs.sh's `--describe --all` is `configctl describe --effective "
    "--broker ID` here: every key that broker runs, with its value and where it comes from"
)


def _given(argv: Sequence[str], option: str) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in argv)


def hint(option: str, argv: Sequence[str], subcommand: str | None) -> str | None:
    """What to say instead of "No such option: OPTION" (None: nothing kafka-configs.sh-shaped).

    ``subcommand`` is the command that refused the option (None at the top level).
    """
    negative = _negative_value(option, argv)
    if negative is not None:
        return negative
    option = option.split("=", 1)[0]
    for kafka_option, advice in _NOT_ZOOKEEPER.items():
        if _given(argv, kafka_option):
            return f"{kafka_option} is not supported: {advice}"
    if option == "--all":
        return _DESCRIBE_ALL
    action = next((name for flag, name in _ACTIONS.items() if _given(argv, flag)), None)
    if option in _ACTIONS:
        if subcommand in _ACTIONS.values():
            return (
                f"No such option: {option}. configctl uses subcommands, and `configctl {subcommand}` "
                f"already says what to do: drop {option}"
            )
        return f"No such option: {option}. configctl uses subcommands: try `configctl {_ACTIONS[option]} ...`"
    if subcommand is None and (option in _ENTITY_OPTIONS or option in _ALTER_OPTIONS):
        if action is None:
            action = "alter" if any(_given(argv, o) for o in _ALTER_OPTIONS) else None
        suggestion = (
            f"try `configctl {action} {option} ...`"
            if action
            else f"try `configctl describe {option} ...` or `configctl alter {option} ...`"
        )
        return f"No such option: {option}. configctl uses subcommands: {suggestion}"
    return None


def _negative_value(option: str, argv: Sequence[str]) -> str | None:
    """``--wait -1`` (or ``--wait=-1``): click takes a negative number after an option whose value
    may be omitted for an option of its own (or its first characters, ``-2`` of ``-2.5``). It is a
    value, and not one any such option takes."""
    if not (len(option) > 1 and option[0] == "-" and (option[1:2].isdigit() or option[1:2] == ".")):
        return None
    for before, arg in itertools.pairwise(argv):
        if arg.startswith(option) and before.startswith("--") and "=" not in before:
            return f"Invalid value for {before!r}: {arg!r} is negative"
    for arg in argv:
        name, _, value = arg.partition("=")
        if name.startswith("--") and value.startswith(option):
            return f"Invalid value for {name!r}: {value!r} is negative"
    return None
