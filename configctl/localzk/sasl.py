"""SASL for the secured local server: one DIGEST-MD5 user, the way Kafka brokers log in to ZooKeeper.

ZooKeeper's server reads its SASL users from a JAAS file (``DigestLoginModule``, one
``user_NAME="password"`` option per user) named by the JVM option
``-Djava.security.auth.login.config``. We keep one user; its password is random, made once and kept
in a 0600 file so a client reads it from there (never from a command line, which every local user
can see in ``ps``) and so it stays the same across restarts. Files live in ``<data-dir>/sasl/``::

    password     the user's password, alone on one line (0600)
    jaas.conf    the server's JAAS configuration (0600: it holds the password too)
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from configctl.errors import InvalidInput
from configctl.files import read_text, replace_atomically

DEFAULT_USER = "configctl"
# Safe inside a JAAS option name and in ``digest:USER`` on a command line: no quotes, spaces, ``=``, ``:``.
_USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A password must fit between JAAS double quotes: printable ASCII without ``"`` or ``\``.
_PASSWORD = re.compile(r"[!#-\[\]-~]{8,256}")
_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
PASSWORD_FILE_LIMIT = 64 * 1024
"""A password file holds one line; more than this is not one (read through :mod:`configctl.files`)."""


@dataclass(frozen=True)
class SaslFiles:
    """The SASL user of one data directory and where its password and JAAS file are."""

    dir: Path
    user: str

    @property
    def password_file(self) -> Path:
        return self.dir / "password"

    @property
    def jaas_file(self) -> Path:
        return self.dir / "jaas.conf"

    def password(self) -> str:
        return read_text(self.password_file, "SASL password file", limit=PASSWORD_FILE_LIMIT).strip()


def check_user(user: str) -> str:
    """The user name if it is usable; :class:`InvalidInput` (one line) otherwise."""
    if not _USER_NAME.fullmatch(user):
        raise InvalidInput(
            f"SASL user {user!r} is not usable: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return user


def sasl_files(data_dir: Path, user: str) -> SaslFiles:
    return SaslFiles(data_dir / "sasl", user)


def ensure_sasl(data_dir: Path, user: str) -> SaslFiles:
    """Keep (or make) the password and write the JAAS file for ``user``."""
    files = sasl_files(data_dir, check_user(user))
    files.dir.mkdir(parents=True, exist_ok=True)
    files.dir.chmod(0o700)
    try:
        password = files.password()
    except InvalidInput:  # missing (a first start), or unusable: a new one
        password = ""
    if not password:
        password = secrets.token_urlsafe(24)  # URL-safe alphabet: nothing to escape in JAAS syntax
        replace_atomically(files.password_file, password + "\n", private=True)
    elif not _PASSWORD.fullmatch(password):
        raise InvalidInput(
            f"the SASL password in {files.password_file} cannot be used: it must be 8-256 printable "
            "ASCII characters without quotes or backslashes (delete the file to get a new one)"
        )
    jaas = f'Server {{\n    {_LOGIN_MODULE} required\n    user_{files.user}="{password}";\n}};\n'
    replace_atomically(files.jaas_file, jaas, private=True)
    return files
