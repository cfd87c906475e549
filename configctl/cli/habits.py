"""Hints for kafka-configs.sh habits: ``--alter``, ``--describe``, ``--bootstrap-server``, ...

configctl names what to do with a subcommand (``configctl alter``) where kafka-configs.sh takes
an option (``--alter``), and it speaks to ZooKeeper only. Someone who types Kafka's spelling gets
"No such option" from click; this says what to type instead. No part of the command line is
echoed back but the option itself: it may hold a password (``--add-config 'password=...'``).
"""

from __future__ import annotations

from collections.abc import Sequence

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
    "--bootstrap-controller": "configctl works on ZooKeeper-mode clusters through ZooKeeper: use --zookeeper HOST:PORT",
    "--zk-tls-config-file": "configctl takes --zk-tls, --zk-tls-ca, --zk-tls-cert, --zk-tls-key (or a --profile) "
    "instead of a ZooKeeper client properties file",
}


def _given(argv: Sequence[str], option: str) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in argv)


def hint(option: str, argv: Sequence[str], subcommand: str | None) -> str | None:
    """What to say instead of "No such option: OPTION" (None: nothing kafka-configs.sh-shaped).

    ``subcommand`` is the command that refused the option (None at the top level).
    """
    option = option.split("=", 1)[0]
    for kafka_option, advice in _NOT_ZOOKEEPER.items():
        if _given(argv, kafka_option):
            return f"{kafka_option} is not supported: {advice}"
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
