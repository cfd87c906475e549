"""Named profiles: a TOML file of global settings, so ``--profile prod`` replaces a line of flags.

The file is ``$CONFIGCTL_CONFIG``, else ``~/.config/configctl/config.toml``; it is read only when
a profile is asked for (``--profile NAME`` or ``CONFIGCTL_PROFILE``), so a broken file never gets
in the way of a command that does not use it. Each profile is a table of global settings, named
as the options are without their dashes::

    [profiles.prod]
    zookeeper = "zk1:2181,zk2:2181,zk3:2181/kafka"
    zk-tls = true
    zk-tls-ca = "/etc/configctl/zk-ca.pem"
    zk-sasl = "digest:configctl"
    zk-sasl-password-file = "/etc/configctl/zk-password"

Relative file names are taken relative to the profile file. Anything unknown (a top-level key,
a setting, a profile) is a one-line error naming the file: a typo must not quietly fall back to
the default cluster.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configctl.errors import InvalidInput, one_line, shown
from configctl.files import read_text

CONFIG_ENV = "CONFIGCTL_CONFIG"
PROFILE_ENV = "CONFIGCTL_PROFILE"
DEFAULT_FILE = Path("~") / ".config" / "configctl" / "config.toml"
FILE_LIMIT = 1024 * 1024
"""A profile file is a few lines; anything past a megabyte is not one."""


@dataclass(frozen=True)
class Profile:
    """One ``[profiles.NAME]`` table: setting name -> value as TOML typed it."""

    name: str
    path: Path
    values: Mapping[str, Any] = field(default_factory=dict)

    def resolve_path(self, value: str) -> str:
        """A file name from this profile: ``~`` expanded, relative to the profile file's directory."""
        expanded = Path(value).expanduser()
        return str(expanded if expanded.is_absolute() else self.path.parent / expanded)


def config_file(environ: Mapping[str, str] = os.environ) -> Path:
    """Where profiles live: ``$CONFIGCTL_CONFIG``, else ``~/.config/configctl/config.toml``."""
    named = environ.get(CONFIG_ENV)
    return (Path(named).expanduser() if named else DEFAULT_FILE.expanduser()).absolute()


def read_profiles(path: Path) -> dict[str, Any]:
    """The ``profiles`` table of the file (checked: valid TOML, nothing else at the top level)."""
    tomllib = _toml()
    text = read_text(path, "profile file", limit=FILE_LIMIT)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"profile file {path}: not valid TOML ({one_line(exc)})") from None
    except RecursionError:  # the parser recurses per level: [[[[...]]]] or a.b.c... deep enough
        raise InvalidInput(f"profile file {path}: not valid TOML (nesting too deep)") from None
    unknown = sorted(set(document) - {"profiles"})
    if unknown:
        raise InvalidInput(
            f"profile file {path}: unknown top-level key {shown(unknown[0])} (profiles go in [profiles.NAME] tables)"
        )
    profiles = document.get("profiles", {})
    if not isinstance(profiles, dict):
        raise InvalidInput(f"profile file {path}: 'profiles' must be a table of [profiles.NAME] tables")
    for name, table in profiles.items():
        if not isinstance(table, dict):
            raise InvalidInput(f"profile file {path}: profiles.{name} must be a table ([profiles.{name}])")
    return profiles


def _toml() -> Any:
    """The TOML parser, imported only when a profile file is read: :mod:`configctl.settings` (and
    so this module) is imported where no profile is ever read, down to the audit's Spark driver."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def load_profile(path: Path, name: str, known: Collection[str]) -> Profile:
    """The profile ``name`` from ``path``; every key must be one of ``known`` (``_`` may stand for ``-``)."""
    if not path.exists():
        raise InvalidInput(
            f"profile {shown(name)}: there is no profile file {path} (create it, or set {CONFIG_ENV})"
        )
    profiles = read_profiles(path)
    if name not in profiles:
        have = ", ".join(sorted(profiles)) or "none"
        raise InvalidInput(f"profile {shown(name)} is not in {path} (profiles there: {have})")
    values: dict[str, Any] = {}
    for key, value in profiles[name].items():
        canonical = key.replace("_", "-")
        if canonical not in known:
            close = difflib.get_close_matches(canonical, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
            raise InvalidInput(f"profile {shown(name)} in {path}: unknown setting {shown(key)}{hint}")
        if canonical in values:
            raise InvalidInput(f"profile {shown(name)} in {path}: {canonical!r} is set twice")
        values[canonical] = value
    return Profile(name, path, values)


def profile_names(path: Path) -> list[str]:
    """The profiles a file defines ([] when it is missing or broken): for shell completion."""
    try:
        return sorted(read_profiles(path)) if path.is_file() else []
    except InvalidInput:
        return []
