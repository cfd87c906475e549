"""What to connect to and how: the connect string, the timeout and the credentials, checked early.

A connect string is ``host:port[,host:port...][/chroot]``. kazoo accepts nonsense (``host:xx``
raises deep inside a thread, ``host/m/..`` is refused with a traceback), so every string is
checked here first and a bad one is a one-line :class:`~configctl.errors.InvalidInput` before
any socket is opened. The same settings object serves every command, the listener and the
audit, so TLS and SASL work the same way everywhere.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from typing import Any

from configctl.errors import InvalidInput, shown

DEFAULT_PORT = 2181
MAX_TIMEOUT = 3600.0
MIN_TIMEOUT = 0.1

_HOSTNAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,252})")
_DIGITS_RE = re.compile(r"[0-9]{1,5}")
# ZooKeeper's PathUtils.validatePath refuses these characters in any path.
_BAD_PATH_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\uffff]")


@dataclass(frozen=True)
class ConnectString:
    """A checked connect string: the servers and the chroot (None: the root)."""

    hosts: tuple[tuple[str, int], ...]
    chroot: str | None

    def __str__(self) -> str:
        servers = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)
        return servers + (self.chroot or "")


def parse_connect_string(text: str) -> ConnectString:
    """Check ``host:port[,host:port][/chroot]`` the way ZooKeeper would, with one-line errors."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("--zookeeper is empty: expected HOST:PORT[,HOST:PORT][/chroot]")
    raw = text.strip()
    servers, slash, chroot_text = raw.partition("/")
    chroot = validate_path("/" + chroot_text, what="chroot") if slash else None
    if chroot == "/":
        chroot = None
    hosts = []
    for item in servers.split(","):
        hosts.append(_host_port(item.strip(), raw))
    return ConnectString(tuple(hosts), chroot)


def _host_port(item: str, whole: str) -> tuple[str, int]:
    if not item:
        raise InvalidInput(f"--zookeeper {shown(whole)}: an empty server entry (check the commas)")
    if item.startswith("["):  # [IPv6]:port
        host, _, rest = item[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
        if port_text is None:
            raise InvalidInput(f"--zookeeper {shown(whole)}: expected [IPv6]:PORT, got {shown(item)}")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidInput(f"--zookeeper {shown(whole)}: {shown(host)} is not an IPv6 address") from None
    else:
        host, colon, port_text = item.rpartition(":")
        if not colon:
            host, port_text = item, ""
        if not _HOSTNAME_RE.fullmatch(host):
            raise InvalidInput(f"--zookeeper {shown(whole)}: {shown(host)} is not a host name or address")
    if not port_text:
        return host, DEFAULT_PORT
    if not _DIGITS_RE.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise InvalidInput(
            f"--zookeeper {shown(whole)}: port {shown(port_text)} is not a number from 1 to 65535"
        )
    return host, int(port_text)


def validate_path(path: str, *, what: str = "path") -> str:
    """A ZooKeeper path as ``PathUtils.validatePath`` accepts it: absolute, no empty, ``.`` or ``..``
    segment, no trailing slash, no control or reserved characters. Returns it unchanged."""
    if path == "/":
        return path
    if not path.startswith("/"):
        raise InvalidInput(f"{what} {shown(path)} must start with '/'")
    if path.endswith("/"):
        raise InvalidInput(f"{what} {shown(path)} must not end with '/'")
    for segment in path[1:].split("/"):
        if not segment:
            raise InvalidInput(f"{what} {shown(path)} has an empty segment ('//')")
        if segment in (".", ".."):
            raise InvalidInput(f"{what} {shown(path)} has a relative segment {segment!r}")
    if _BAD_PATH_CHARS.search(path):
        raise InvalidInput(f"{what} {shown(path)} holds a character ZooKeeper refuses in paths")
    return path


def check_timeout(value: float, *, what: str = "--zk-timeout") -> float:
    """A finite number of seconds in a sane range (``nan``, ``inf`` and ``1e308`` are refused)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{what} must be a number of seconds, not {shown(str(value))}") from None
    if not math.isfinite(number) or not MIN_TIMEOUT <= number <= MAX_TIMEOUT:
        raise InvalidInput(f"{what} must be between {MIN_TIMEOUT:g} and {MAX_TIMEOUT:g} seconds, not {value}")
    return number


@dataclass(frozen=True)
class Digest:
    """``--zk-auth digest:USER:PASSWORD``: ZooKeeper's digest scheme (ACLs name this identity)."""

    user: str
    password: str = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> Digest:
        scheme, _, credential = text.partition(":")
        user, _, password = credential.partition(":")
        if scheme != "digest" or not user or not password:
            raise InvalidInput("--zk-auth must look like digest:USER:PASSWORD")
        return cls(user, password)


@dataclass(frozen=True)
class Sasl:
    """``--zk-sasl digest:USER`` (DIGEST-MD5, as Kafka brokers log in) or ``gssapi``."""

    mechanism: str  # "DIGEST-MD5" | "GSSAPI"
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def kazoo_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"mechanism": self.mechanism}
        if self.user is not None:
            options["username"] = self.user
        if self.password is not None:
            options["password"] = self.password
        return options


@dataclass(frozen=True)
class Tls:
    """``--zk-tls`` with the CA to trust and, for mutual TLS, a client certificate and key."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    def kazoo_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"use_ssl": True, "verify_certs": True}
        if self.ca:
            options["ca"] = self.ca
        if self.cert:
            options["certfile"] = self.cert
        if self.key:
            options["keyfile"] = self.key
        return options


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything needed to open a session, already checked."""

    connect: str
    timeout: float = 10.0
    digest: Digest | None = None
    sasl: Sasl | None = None
    tls: Tls | None = None

    def __post_init__(self) -> None:
        parse_connect_string(self.connect)
        object.__setattr__(self, "timeout", check_timeout(self.timeout))

    @classmethod
    def of(cls, connect: str, *, auth: str | None = None, timeout: float = 10.0) -> ConnectionSettings:
        """The plain form most callers need: a connect string and an optional ``digest:U:P``."""
        return cls(connect, timeout, Digest.parse(auth) if auth else None)

    @property
    def identity(self) -> str | None:
        """Who nodes we create belong to (``sasl:alice``, ``digest:admin``), None when anonymous."""
        if self.sasl is not None and self.sasl.user:
            return f"sasl:{self.sasl.user}"
        if self.digest is not None:
            return f"digest:{self.digest.user}"
        return None

    def kazoo_options(self) -> dict[str, Any]:
        """Keyword arguments for ``KazooClient`` (hosts, timeout, auth, TLS, SASL)."""
        options: dict[str, Any] = {"hosts": self.connect.strip(), "timeout": self.timeout}
        if self.digest is not None:
            options["auth_data"] = [("digest", f"{self.digest.user}:{self.digest.password}")]
        if self.sasl is not None:
            options["sasl_options"] = self.sasl.kazoo_options()
        if self.tls is not None:
            options.update(self.tls.kazoo_options())
        return options
