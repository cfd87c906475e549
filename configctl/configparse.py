"""What an operator types: ``--add-config``, ``--delete-config`` and ``--add-config-file``.

Scripts written for ``kafka-configs.sh`` must keep working, so :func:`parse_add_config` follows
Kafka 3.9's ``ConfigCommand.parseConfigsToBeAdded`` step for step (the same split patterns, Java's
``String.split`` and ``String.trim`` semantics, every bracket removed from values, the same key
character rule). Where Kafka silently does something surprising (a key given twice, brackets that
do not pair up, an empty key) we stop with a one-line error instead, because guessing would write
a config the operator did not mean. The only I/O is reading a properties file.
"""

from __future__ import annotations

import os
import re

import javaproperties

from configctl.errors import InvalidInput, shown
from configctl.files import read_bytes
from configctl.values import java_trim

# Kafka's lookahead: "not inside [...]" = no ']' before the next '[' or the end of the text.
# It is only correct for balanced, unnested brackets, which _check_brackets guarantees first.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
# Java's \s is ASCII-only; Python's would also match Unicode spaces.
_JAVA_SPACE = r"[ \t\n\x0b\f\r]"
_ENTRY_SPLIT = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE_SPLIT = re.compile(_JAVA_SPACE + "*=" + _JAVA_SPACE + "*" + _OUTSIDE_BRACKETS)
_KEY_RE = re.compile(r"[a-zA-Z0-9._-]+")


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``String.split(regex)`` with limit 0: trailing empty strings are dropped."""
    parts = pattern.split(text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _key_before(text: str, position: int) -> str:
    """The config name whose value holds ``position`` (for messages: a value may be a secret)."""
    start = text.rfind(",", 0, text.rfind("=", 0, position) + 1) + 1
    name, equals, _ = text[start:position].partition("=")
    return shown(java_trim(name)) if equals and java_trim(name) else "an entry"


def _check_brackets(text: str) -> None:
    """Brackets pair up, unnested. Messages name the key and the position, never the value: the
    value may be a password (``SCRAM-SHA-256=[password=x]y]``)."""
    depth = 0
    opened = 0
    for position, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise InvalidInput(
                    f"nested brackets in --add-config at character {position + 1} (in the value of "
                    f"{_key_before(text, position)}): a [...] list cannot contain '['"
                )
            depth, opened = 1, position
        elif ch == "]":
            if not depth:
                raise InvalidInput(
                    f"unbalanced brackets in --add-config: ']' without '[' at character {position + 1} "
                    f"(in the value of {_key_before(text, position)})"
                )
            depth = 0
    if depth:
        raise InvalidInput(
            f"unbalanced brackets in --add-config: the '[' at character {opened + 1} (in the value of "
            f"{_key_before(text, opened)}) is never closed"
        )


def validate_config_key(key: str) -> None:
    """Kafka's ``validatePropsKey``: a config name is ``[a-zA-Z0-9._-]``, and (our rule) not empty."""
    if not key:
        raise InvalidInput("empty config name: every entry must be key=value")
    if not _KEY_RE.fullmatch(key):
        raise InvalidInput(
            f"invalid character in config name {shown(key)}: only ASCII letters, digits, '.', '_' and '-' are allowed"
        )


def parse_add_config(text: str) -> dict[str, str]:
    """Parse ``--add-config 'k=v,k2=[a,b],k3='`` into ``{"k": "v", "k2": "a,b", "k3": ""}``.

    Entries are split on commas outside ``[...]``; each entry on the first-level ``=`` (spaces
    around it dropped, an empty value allowed); keys and values are trimmed; and, as in Kafka,
    *every* ``[`` and ``]`` is removed from the value, so brackets only group, they never survive.
    A trailing comma is ignored, as Java's ``split`` ignores it.
    """
    if not text or not java_trim(text):
        raise InvalidInput("--add-config is empty: expected key=value[,key=value...]")
    _check_brackets(text)
    entries = _java_split(_ENTRY_SPLIT, text)
    if not entries:
        raise InvalidInput("--add-config holds no key=value entries")
    result: dict[str, str] = {}
    for number, entry in enumerate(entries, start=1):
        pair = _KEY_VALUE_SPLIT.split(entry)  # limit -1: the trailing empty value is kept
        if len(pair) != 2:
            # Never echo the entry: a password with a ',' outside [...] splits into such pieces.
            after = (
                f" (after {shown(java_trim(_KEY_VALUE_SPLIT.split(entries[number - 2])[0]))})"
                if number > 1
                else ""
            )
            raise InvalidInput(
                f"entry {number} of --add-config{after} is not key=value; "
                "a value holding ',' or '=' must be written in [...]"
            )
        key = java_trim(pair[0])
        value = java_trim(pair[1].replace("[", "").replace("]", ""))
        if not key:
            raise InvalidInput(f"entry {number} of --add-config has an empty config name")
        validate_config_key(key)
        if key in result:
            raise InvalidInput(f"--add-config sets {shown(key)} more than once")
        result[key] = value
    return result


def parse_delete_config(text: str) -> list[str]:
    """Parse ``--delete-config k1,k2``: names in order, trimmed; empty pieces are skipped as Kafka does."""
    names = [name for name in (java_trim(part) for part in (text or "").split(",")) if name]
    if not names:
        raise InvalidInput("--delete-config is empty: expected name[,name...]")
    seen: set[str] = set()
    for name in names:
        validate_config_key(name)
        if name in seen:
            raise InvalidInput(f"--delete-config names {name} more than once")
        seen.add(name)
    return names


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a Java ``.properties`` file (``=``, ``:`` or space separators, ``#``/``!`` comments,
    line continuations, ``\\uXXXX`` escapes); a key given twice keeps the last value, as in Java.

    The file is read as UTF-8 (a leading BOM is skipped). Kafka's ``Utils.loadProps`` reads
    ISO-8859-1, so the two agree on every ASCII file (non-ASCII written as ``\\uXXXX``), and a
    UTF-8 file with accents means what its author saw instead of turning into mojibake.
    """
    name = os.fspath(path)
    raw = read_bytes(name, "properties file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"properties file {name} is not UTF-8 (byte {exc.start}); write non-ASCII characters as \\uXXXX"
        ) from None
    try:
        return dict(javaproperties.loads(text))
    except ValueError as exc:  # InvalidUEscapeError and friends
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInput(f"properties file {name} is malformed: {reason}") from None


def added_configs(add_config: str | None, add_config_file: str | None) -> dict[str, str]:
    """The configs to set, from ``--add-config`` or ``--add-config-file`` (Kafka refuses both at once).

    Every key must pass :func:`validate_config_key`, which Kafka applies to both sources.
    """
    if add_config is not None and add_config_file is not None:
        raise InvalidInput(
            "give --add-config or --add-config-file, not both (kafka-configs.sh refuses both too)"
        )
    if add_config_file is not None:
        props = load_properties_file(add_config_file)
        for key in props:
            validate_config_key(key)
        return props
    return parse_add_config(add_config) if add_config is not None else {}
