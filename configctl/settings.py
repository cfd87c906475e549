"""The global settings of every command, where each one came from, and the one precedence rule.

Every setting can come from four places; the first that has it wins:

1. a flag on the command line (``--zookeeper``), wherever it stands: before the subcommand or
   after it (given in both places, the one after the subcommand wins);
2. the environment (``CONFIGCTL_ZOOKEEPER``; an empty variable counts as unset);
3. the profile named by ``--profile`` / ``CONFIGCTL_PROFILE`` (:mod:`configctl.profiles`);
4. the built-in default.

One rule for every setting, so ``CONFIGCTL_ZOOKEEPER=prod configctl --zookeeper test alter ...``
writes to test: an explicit flag is never overridden by something the operator did not type.
Passwords come from the environment or a file, never from a flag alone (argv is visible to every
local user in ``ps``); ``--zk-auth digest:USER:PASSWORD`` still works for compatibility.

Values are checked when they are used, so a bad ``CONFIGCTL_ZK_TIMEOUT`` does not stop
``configctl zk start``; every error names the flag, variable or profile to fix.

Some settings exist only as a variable (:data:`ENVIRONMENT_SETTINGS`: the reason a write records,
how much history is kept, the policy plugins, the digest key file and the password encoder secret
behind their command options, the audit's Spark memory): environment, else default; no profile
sets them. They are read here too (:func:`environment_entry`, also for library code with no
command line: the listener, the policies, the audit's Spark session), so every ``CONFIGCTL_*``
variable configctl reads is in this module's tables and ``configctl config show`` lists it.
(The profile file and the profile's name, ``CONFIGCTL_CONFIG`` and ``CONFIGCTL_PROFILE``, are
:mod:`configctl.profiles`'.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from configctl import profiles
from configctl.digests import DIGEST_KEY_ENV
from configctl.errors import ConfigctlError, InvalidInput, shown
from configctl.files import check_readable, read_text
from configctl.zkconnection import (
    ConnectionSettings,
    Digest,
    Sasl,
    Tls,
    check_timeout,
    parse_connect_string,
    split_digest,
)

DEFAULT_ZOOKEEPER = "127.0.0.1:2181"
DEFAULT_TIMEOUT = 10.0
DEFAULT_HISTORY_LIMIT = 50
DEFAULT_SPARK_DRIVER_MEMORY = "4g"
PREFIX = "CONFIGCTL_"
OUTPUTS = ("table", "json")
PASSWORD_FILE_LIMIT = 64 * 1024

FLAG, ENVIRONMENT, PROFILE, DEFAULT = 3, 2, 1, 0

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Setting:
    """One global setting: its flag (``--`` + name, unless environment-only), variable and kind."""

    name: str
    env: str
    kind: str  # "text" | "brokers" | "seconds" | "switch" | "choice" | "file" | "directory" | "secret" | "count"
    default: Any = None
    metavar: str = ""
    help: str = ""
    short: str | None = None
    environment_only: bool = False

    @property
    def flag(self) -> str | None:
        """``--name``; None for a secret, which never goes on a command line, and for an
        environment-only setting."""
        return None if self.kind == "secret" or self.environment_only else f"--{self.name}"

    @property
    def param(self) -> str:
        return self.name.replace("-", "_")


SETTINGS: tuple[Setting, ...] = (
    Setting("zookeeper", "CONFIGCTL_ZOOKEEPER", "text", DEFAULT_ZOOKEEPER, "HOST:PORT[,HOST:PORT][/chroot]",
            "ZooKeeper connect string."),
    Setting("zk-timeout", "CONFIGCTL_ZK_TIMEOUT", "seconds", DEFAULT_TIMEOUT, "SECONDS",
            "How long to wait for ZooKeeper before giving up."),
    Setting("output", "CONFIGCTL_OUTPUT", "choice", "table", "", "A rich table, or one JSON document on stdout.",
            short="-o"),
    Setting("zk-auth", "CONFIGCTL_ZK_AUTH", "text", None, "digest:USER[:PASSWORD]",
            "ZooKeeper digest authentication; nodes created are then the identity's."),
    Setting("zk-auth-password-file", "CONFIGCTL_ZK_AUTH_PASSWORD_FILE", "file", None, "FILE",
            "The --zk-auth password, read from FILE (or give it in CONFIGCTL_ZK_AUTH_PASSWORD)."),
    Setting("zk-auth-password", "CONFIGCTL_ZK_AUTH_PASSWORD", "secret"),
    Setting("zk-tls", "CONFIGCTL_ZK_TLS", "switch", False, "",
            "Connect with TLS (on by itself when a CA or client certificate is given)."),
    Setting("zk-tls-ca", "CONFIGCTL_ZK_TLS_CA", "file", None, "FILE",
            "PEM CA certificate(s) to verify the server with (default: the system's)."),
    Setting("zk-tls-cert", "CONFIGCTL_ZK_TLS_CERT", "file", None, "FILE", "PEM client certificate (mutual TLS)."),
    Setting("zk-tls-key", "CONFIGCTL_ZK_TLS_KEY", "file", None, "FILE", "PEM key of the client certificate."),
    Setting("zk-tls-key-password-file", "CONFIGCTL_ZK_TLS_KEY_PASSWORD_FILE", "file", None, "FILE",
            "The password of an encrypted --zk-tls-key, read from FILE (or CONFIGCTL_ZK_TLS_KEY_PASSWORD)."),
    Setting("zk-tls-key-password", "CONFIGCTL_ZK_TLS_KEY_PASSWORD", "secret"),
    Setting("zk-sasl", "CONFIGCTL_ZK_SASL", "text", None, "digest:USER|gssapi",
            "Log in with SASL: DIGEST-MD5 as USER (as Kafka brokers do), or Kerberos."),
    Setting("zk-sasl-password-file", "CONFIGCTL_ZK_SASL_PASSWORD_FILE", "file", None, "FILE",
            "The SASL user's password, read from FILE (or give it in CONFIGCTL_ZK_SASL_PASSWORD)."),
    Setting("zk-sasl-password", "CONFIGCTL_ZK_SASL_PASSWORD", "secret"),
    Setting("bootstrap-server", "CONFIGCTL_BOOTSTRAP_SERVER", "brokers", None, "HOST:PORT[,HOST:PORT]",
            "Kafka brokers to ask through the Admin API (as kafka-configs.sh --bootstrap-server)."),
    Setting("command-config", "CONFIGCTL_COMMAND_CONFIG", "file", None, "FILE",
            "Kafka client properties for --bootstrap-server (security.protocol, sasl.*, ssl.truststore.*)."),
    Setting("history-archive", "CONFIGCTL_HISTORY_ARCHIVE", "directory", None, "DIR",
            "A history archive (written by history archive): history, --at, blame and diff read it too."),
)  # fmt: skip
ENVIRONMENT_SETTINGS: tuple[Setting, ...] = (
    Setting("reason", "CONFIGCTL_REASON", "text", "", "TEXT",
            "Why, recorded in history by alter, apply and rollback when --reason is not given.",
            environment_only=True),
    Setting("history-limit", "CONFIGCTL_HISTORY_LIMIT", "count", DEFAULT_HISTORY_LIMIT, "N",
            "History records kept per entity (0: none).", environment_only=True),
    Setting("password-encoder-secret", "CONFIGCTL_PASSWORD_ENCODER_SECRET", "secret", None, "SECRET",
            "The brokers' password.encoder.secret when alter or apply is not given --password-encoder-secret.",
            environment_only=True),
    Setting("digest-key-file", DIGEST_KEY_ENV, "file", None, "FILE",
            "The fleet's digest key when the listener or the audit is not given --digest-key-file.",
            environment_only=True),
    Setting("policies", "CONFIGCTL_POLICIES", "text", None, "MODULE:ATTR[,MODULE:ATTR]",
            "Policy plugins every write runs, besides the configctl.policies entry points.",
            environment_only=True),
    Setting("spark-driver-memory", "CONFIGCTL_SPARK_DRIVER_MEMORY", "text", DEFAULT_SPARK_DRIVER_MEMORY, "SIZE",
            "The audit's Spark driver memory (local mode).", environment_only=True),
    Setting("serve-token", "CONFIGCTL_SERVE_TOKEN", "secret", None, "TOKEN",
            "The bearer token configctl serve requires when not given --token-file (never on argv).",
            environment_only=True),
)  # fmt: skip
"""Settings with a variable and no global option (nor profile key); :func:`environment_entry` reads them."""
BY_NAME: Mapping[str, Setting] = {s.name: s for s in (*SETTINGS, *ENVIRONMENT_SETTINGS)}
PROFILE_KEYS: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.flag is not None)
"""What a profile may set: every global option (passwords only by file)."""

PROFILE_FLAG = "--profile"


@dataclass(frozen=True)
class Source:
    """Where a value came from."""

    level: int  # FLAG > ENVIRONMENT > PROFILE > DEFAULT
    origin: str = ""  # the flag, the variable, the profile's name

    @property
    def kind(self) -> str:
        return {FLAG: "flag", ENVIRONMENT: "environment", PROFILE: "profile", DEFAULT: "default"}[self.level]

    def __str__(self) -> str:
        return f"{self.kind} {self.origin}".strip()

    def label(self, setting: Setting) -> str:
        """How an error names the place to fix."""
        if self.level == PROFILE:
            return f"{setting.name} in profile {self.origin}"
        return self.origin or f"the default {setting.name}"


@dataclass(frozen=True)
class Entry:
    value: Any
    source: Source


def configctl_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every ``CONFIGCTL_*`` variable of ``environ`` (default: this process's), what :func:`resolve` reads."""
    source = os.environ if environ is None else environ
    return {key: value for key, value in source.items() if key.startswith(PREFIX)}


def environment_entry(name: str, environ: Mapping[str, str] | None = None) -> Entry:
    """The environment-only setting ``name`` (:data:`ENVIRONMENT_SETTINGS`) from ``environ``
    (default: this process's): its variable when set and not empty, else its default."""
    setting = BY_NAME[name]
    if not setting.environment_only:
        raise ValueError(f"{name!r} is not an environment-only setting")
    value = (os.environ if environ is None else environ).get(setting.env)
    if value:
        return Entry(value, Source(ENVIRONMENT, setting.env))
    return Entry(setting.default, Source(DEFAULT))


def environment_value(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The value of the environment-only setting ``name``: its variable, else its default."""
    return environment_entry(name, environ).value


def resolve(flags: Mapping[str, Any], environ: Mapping[str, str]) -> GlobalSettings:
    """Merge flags (by setting name), the environment and the selected profile, by precedence."""
    profile_name, profile_source = None, None
    if flags.get("profile"):
        profile_name, profile_source = str(flags["profile"]), Source(FLAG, PROFILE_FLAG)
    elif environ.get(profiles.PROFILE_ENV):
        profile_name, profile_source = (
            environ[profiles.PROFILE_ENV],
            Source(ENVIRONMENT, profiles.PROFILE_ENV),
        )
    path = profiles.config_file(environ)
    profile = profiles.load_profile(path, profile_name, PROFILE_KEYS) if profile_name is not None else None

    entries: dict[str, Entry] = {}
    for setting in SETTINGS:
        if setting.flag is not None and flags.get(setting.name) is not None:
            entries[setting.name] = Entry(flags[setting.name], Source(FLAG, setting.flag))
        elif environ.get(setting.env):
            entries[setting.name] = Entry(environ[setting.env], Source(ENVIRONMENT, setting.env))
        elif profile is not None and setting.name in profile.values:
            value = _profile_value(setting, profile)
            entries[setting.name] = Entry(value, Source(PROFILE, profile.name))
        else:
            entries[setting.name] = Entry(setting.default, Source(DEFAULT))
    for setting in ENVIRONMENT_SETTINGS:
        entries[setting.name] = environment_entry(setting.name, environ)
    return GlobalSettings(entries, profile, profile_source, path)


def _profile_value(setting: Setting, profile: profiles.Profile) -> Any:
    """A profile value of the right TOML type (strings, ``true``/``false``, a number of seconds)."""
    value = profile.values[setting.name]
    where = f"{setting.name} in profile {profile.name} ({profile.path})"
    if setting.kind == "switch":
        if not isinstance(value, bool):
            raise InvalidInput(f"{where} must be true or false")
    elif setting.kind == "seconds":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInput(f"{where} must be a number of seconds")
    elif not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string")
    if setting.kind in ("file", "directory"):
        return profile.resolve_path(value)
    return value


@dataclass(frozen=True)
class GlobalSettings:
    """The resolved settings of one command: values with their sources, checked on use."""

    entries: Mapping[str, Entry]
    profile: profiles.Profile | None = None
    profile_source: Source | None = None
    config_file: Path = field(default_factory=lambda: profiles.config_file({}))

    def entry(self, name: str) -> Entry:
        return self.entries[name]

    def _given(self, name: str) -> bool:
        return self.entries[name].source.level > DEFAULT

    def _label(self, name: str) -> str:
        return self.entries[name].source.label(BY_NAME[name])

    # -- the values commands read -------------------------------------------------------------

    @property
    def zookeeper(self) -> str:
        """The connect string as given (checked by :meth:`connection`)."""
        return str(self.entries["zookeeper"].value)

    @property
    def zookeeper_explicit(self) -> bool:
        """True when a flag, the environment or a profile named a ZooKeeper (not the default):
        the audit consults ZooKeeper only then."""
        return self._given("zookeeper")

    @property
    def bootstrap_server(self) -> str | None:
        """The Kafka brokers to ask through the Admin API, or None (checked by the Admin API edge)."""
        value = self.entries["bootstrap-server"].value
        return str(value).strip() or None if value else None

    @property
    def command_config(self) -> Path | None:
        """The Kafka client properties file for ``--bootstrap-server``, or None.

        Looked at here (:func:`configctl.files.check_readable`), before the Admin API edge opens
        it: a named pipe given as the file would block that open for ever.
        """
        path = self._file("command-config")
        if not path:
            return None
        check_readable(path, f"{self._label('command-config')} {path}")
        return Path(path)

    @property
    def history_archive(self) -> Path | None:
        """The history archive directory read beside ZooKeeper's history records, or None."""
        path = self._file("history-archive")
        return Path(path) if path else None

    def kafka_admin_target(self) -> tuple[str, Path | None]:
        """``(bootstrap, command_config)`` for a command that must ask the brokers; a one-line error without."""
        bootstrap = self.bootstrap_server
        if bootstrap is None:
            raise InvalidInput(
                "this needs Kafka brokers to ask: give --bootstrap-server HOST:PORT (or CONFIGCTL_BOOTSTRAP_SERVER)"
            )
        return bootstrap, self.command_config

    @property
    def output(self) -> str:
        value = str(self.entries["output"].value)
        if value not in OUTPUTS:
            raise InvalidInput(f"{self._label('output')} must be table or json, not {shown(value)}")
        return value

    @property
    def reason(self) -> str:
        """The reason a write records when its command is not given ``--reason`` ('' when none)."""
        return str(self.entries["reason"].value or "")

    @property
    def history_limit(self) -> int:
        """History records kept per entity (a write trims older ones)."""
        raw = str(self.entries["history-limit"].value)
        if not raw.isdigit():
            raise InvalidInput(f"CONFIGCTL_HISTORY_LIMIT must be a non-negative integer, not {raw!r}")
        return int(raw)

    @property
    def zk_timeout(self) -> float:
        return check_timeout(self.entries["zk-timeout"].value, what=self._label("zk-timeout"))

    @property
    def zk_tls(self) -> bool:
        """TLS on: said so, or implied by a CA or client certificate (unless said off)."""
        if self._given("zk-tls"):
            return self._switch("zk-tls")
        return any(self._given(name) for name in ("zk-tls-ca", "zk-tls-cert", "zk-tls-key"))

    @property
    def zk_auth(self) -> str | None:
        """``digest:USER:PASSWORD`` with the password from wherever it was given, or None."""
        digest = self.digest()
        return f"digest:{digest.user}:{digest.password}" if digest else None

    def _switch(self, name: str) -> bool:
        value = self.entries[name].value
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise InvalidInput(f"{self._label(name)} must be true or false, not {shown(str(value))}")

    def _file(self, name: str) -> str | None:
        value = self.entries[name].value
        return str(Path(value).expanduser()) if value else None

    # -- secrets --------------------------------------------------------------------------------

    def _secret(self, what: str, env_name: str, file_name: str, inline: Entry | None = None) -> str | None:
        """A password from the highest-precedence place that gives one; two at the same level is an
        error (which one was meant?)."""
        candidates: list[tuple[int, str, Callable[[], str]]] = []
        if inline is not None:
            label = inline.source.label(BY_NAME["zk-auth"])
            candidates.append((inline.source.level, label, lambda: str(inline.value)))
        env_entry = self.entries[env_name]
        if env_entry.source.level > DEFAULT:
            candidates.append((ENVIRONMENT, env_entry.source.origin, lambda: str(env_entry.value)))
        file_entry = self.entries[file_name]
        if file_entry.source.level > DEFAULT:
            label = file_entry.source.label(BY_NAME[file_name])
            candidates.append(
                (file_entry.source.level, label, lambda: read_password_file(str(file_entry.value), what))
            )
        if not candidates:
            return None
        best = max(level for level, _label, _read in candidates)
        chosen = [(label, read) for level, label, read in candidates if level == best]
        if len(chosen) > 1:
            raise InvalidInput(f"the {what} is given twice ({' and '.join(c[0] for c in chosen)}): keep one")
        return chosen[0][1]()

    def digest(self) -> Digest | None:
        entry = self.entries["zk-auth"]
        if not entry.value:
            return None
        user, inline = split_digest(str(entry.value), what=self._label("zk-auth"))
        inline_entry = Entry(inline, entry.source) if inline is not None else None
        password = self._secret(
            "--zk-auth password", "zk-auth-password", "zk-auth-password-file", inline=inline_entry
        )
        if password is None:
            raise InvalidInput(
                f"{self._label('zk-auth')} digest:{user} needs the password: digest:USER:PASSWORD, "
                "CONFIGCTL_ZK_AUTH_PASSWORD or --zk-auth-password-file FILE"
            )
        return Digest(user, password)

    def sasl(self) -> Sasl | None:
        entry = self.entries["zk-sasl"]
        if not entry.value:
            return None
        text = str(entry.value)
        password = None
        if text.strip().lower().startswith("digest:"):
            password = self._secret("SASL password", "zk-sasl-password", "zk-sasl-password-file")
        return Sasl.parse(text, password, what=self._label("zk-sasl"))

    def tls(self) -> Tls | None:
        if not self.zk_tls:
            return None
        key_password = self._secret("TLS key password", "zk-tls-key-password", "zk-tls-key-password-file")
        return Tls(self._file("zk-tls-ca"), self._file("zk-tls-cert"), self._file("zk-tls-key"), key_password)

    def connection(self, *, timeout: float | None = None) -> ConnectionSettings:
        """The checked :class:`ConnectionSettings` these settings describe (one-line errors)."""
        connect = self.zookeeper
        parse_connect_string(connect, what=self._label("zookeeper"))
        return ConnectionSettings(
            connect,
            self.zk_timeout if timeout is None else timeout,
            digest=self.digest(),
            sasl=self.sasl(),
            tls=self.tls(),
        )

    # -- for `configctl config show` --------------------------------------------------------------

    def problem(self) -> str | None:
        """The first thing a command would refuse in these settings (None when all is well): the
        output and the connection, checked as a command checks them, nothing connected."""
        try:
            _ = self.output
            self.connection().check_local()
        except ConfigctlError as exc:
            return exc.message
        return None

    def shown_rows(self) -> list[dict[str, Any]]:
        """Every setting with its value (secrets masked) and where it came from."""
        rows = []
        for setting in (*SETTINGS, *ENVIRONMENT_SETTINGS):
            entry = self.entries[setting.name]
            value, source = entry.value, str(entry.source)
            if setting.name == "zk-tls" and not self._given("zk-tls") and self.zk_tls:
                value, source = True, "implied by a TLS file setting"
            else:
                value = self._typed(setting, value)
            rows.append(
                {
                    "setting": setting.name,
                    "value": mask(setting, value),
                    "source": source,
                    "flag": setting.flag,
                    "env": setting.env,
                }
            )
        return rows

    def _typed(self, setting: Setting, value: Any) -> Any:
        """A number of seconds as a number, a switch as true/false (as given when it is neither)."""
        try:
            if setting.kind == "seconds":
                return check_timeout(value)
            if setting.kind == "switch":
                return self._switch(setting.name)
            if setting.kind == "count" and str(value).isdecimal():
                return int(value)
        except InvalidInput:
            pass
        return value


def mask(setting: Setting, value: Any) -> Any:
    """What ``config show`` may print: passwords never, the rest as given."""
    from configctl.secrets import MASK

    if value is None or value == "":
        return None
    if setting.kind == "secret":
        return MASK
    if setting.name == "zk-auth":
        scheme, _, rest = str(value).partition(":")
        user, colon, _password = rest.partition(":")
        return f"{scheme}:{user}:{MASK}" if colon else str(value)
    return value


def read_password_file(path: str, what: str) -> str:
    """A password file's first line (a trailing newline is not part of the password)."""
    text = read_text(Path(path).expanduser(), f"{what} file", limit=PASSWORD_FILE_LIMIT)
    password = text.rstrip("\r\n")
    if not password:
        raise InvalidInput(f"{what} file {path} is empty")
    if "\n" in password:
        raise InvalidInput(f"{what} file {path} holds more than one line")
    return password
