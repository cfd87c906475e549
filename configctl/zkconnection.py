"""What to connect to and how: the connect string, the timeout and the credentials, checked early.

A connect string is ``host:port[,host:port...][/chroot]``. kazoo accepts nonsense (``host:xx``
raises deep inside a thread, ``host/m/..`` is refused with a traceback), so every string is
checked here first and a bad one is a one-line :class:`~configctl.errors.InvalidInput` before
any socket is opened. The same settings object serves every command, the listener and the
audit, so TLS and SASL work the same way everywhere.

The TLS files are checked too (:meth:`ConnectionSettings.check_local`) before a connection is
tried: kazoo would otherwise retry a missing CA file or a key that does not match its
certificate until the timeout runs out, saying nothing.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import math
import re
import ssl
from dataclasses import dataclass, field
from typing import Any

from configctl.errors import EnvironmentProblem, InvalidInput, shown

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


def parse_connect_string(text: str, *, what: str = "--zookeeper") -> ConnectString:
    """Check ``host:port[,host:port][/chroot]`` the way ZooKeeper would, with one-line errors.

    ``what`` names where the string came from (``--zookeeper``, ``CONFIGCTL_ZOOKEEPER``, a
    profile) so the error points at the place to fix.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{what} is empty: expected HOST:PORT[,HOST:PORT][/chroot]")
    raw = text.strip()
    servers, slash, chroot_text = raw.partition("/")
    chroot = validate_path("/" + chroot_text, what=f"{what} {shown(raw)}: chroot") if slash else None
    if chroot == "/":
        chroot = None
    hosts = []
    for item in servers.split(","):
        hosts.append(_host_port(item.strip(), raw, what))
    return ConnectString(tuple(hosts), chroot)


def _host_port(item: str, whole: str, what: str) -> tuple[str, int]:
    label = f"{what} {shown(whole)}"
    if not item:
        raise InvalidInput(f"{label}: an empty server entry (check the commas)")
    if item.startswith("["):  # [IPv6]:port
        host, _, rest = item[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
        if port_text is None:
            raise InvalidInput(f"{label}: expected [IPv6]:PORT, got {shown(item)}")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidInput(f"{label}: {shown(host)} is not an IPv6 address") from None
    else:
        host, colon, port_text = item.rpartition(":")
        if not colon:
            host, port_text = item, ""
        if not _HOSTNAME_RE.fullmatch(host):
            raise InvalidInput(f"{label}: {shown(host)} is not a host name or address")
    if not port_text:
        return host, DEFAULT_PORT
    if not _DIGITS_RE.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise InvalidInput(f"{label}: port {shown(port_text)} is not a number from 1 to 65535")
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
        raise InvalidInput(
            f"{what} must be between {MIN_TIMEOUT:g} and {MAX_TIMEOUT:g} seconds, not {shown(str(value))}"
        )
    return number


def split_digest(text: str, *, what: str = "--zk-auth") -> tuple[str, str | None]:
    """``digest:USER[:PASSWORD]`` as ``(USER, PASSWORD or None)``; the value is never echoed."""
    scheme, _, credential = text.strip().partition(":")
    user, colon, password = credential.partition(":")
    if scheme != "digest" or not user or (colon and not password):
        raise InvalidInput(
            f"{what} must look like digest:USER:PASSWORD (or digest:USER, the password in a file)"
        )
    return user, (password if colon else None)


@dataclass(frozen=True)
class Digest:
    """``--zk-auth digest:USER:PASSWORD``: ZooKeeper's digest scheme (ACLs name this identity)."""

    user: str
    password: str = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> Digest:
        user, password = split_digest(text)
        if password is None:
            raise InvalidInput("--zk-auth must look like digest:USER:PASSWORD")
        return cls(user, password)


SASL_PASSWORD_HINT = "set CONFIGCTL_ZK_SASL_PASSWORD or give --zk-sasl-password-file FILE"


@dataclass(frozen=True)
class Sasl:
    """``--zk-sasl digest:USER`` (DIGEST-MD5, as Kafka brokers log in) or ``gssapi`` (Kerberos)."""

    mechanism: str  # "DIGEST-MD5" | "GSSAPI"
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, text: str, password: str | None = None, *, what: str = "--zk-sasl") -> Sasl:
        """``digest:USER`` with its password (from a file or the environment), or ``gssapi``."""
        mechanism, colon, user = text.strip().partition(":")
        if mechanism.lower() == "digest":
            if not user or not user.isprintable() or " " in user:
                raise InvalidInput(f"{what} digest:USER needs a user name (no spaces)")
            if ":" in user:  # digest:USER:PASSWORD, as --zk-auth takes it: never on a command line
                raise InvalidInput(
                    f"{what} takes digest:USER only; the password never goes on the command line "
                    f"({SASL_PASSWORD_HINT})"
                )
            if password is None:
                raise InvalidInput(f"{what} digest:{user} needs the user's password: {SASL_PASSWORD_HINT}")
            return cls("DIGEST-MD5", user, password)
        if mechanism.lower() == "gssapi" and not colon:
            return cls("GSSAPI")
        raise InvalidInput(
            f"{what} must be digest:USER or gssapi, not {shown(mechanism)}{':...' if colon else ''}"
        )

    def check_support(self) -> None:
        """GSSAPI needs the ``kerberos`` module pure-sasl drives; without it kazoo's thread just dies."""
        if self.mechanism == "GSSAPI" and importlib.util.find_spec("kerberos") is None:
            raise EnvironmentProblem(
                "--zk-sasl gssapi needs the Python package 'kerberos' (pip install kerberos) "
                "and a Kerberos ticket (kinit)"
            )

    def kazoo_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"mechanism": self.mechanism}
        if self.user is not None:
            options["username"] = self.user
        if self.password is not None:
            options["password"] = self.password
        return options


class _KeyNeedsPassword(Exception):
    """Raised by the password callback instead of letting OpenSSL prompt on the terminal."""


@dataclass(frozen=True)
class Tls:
    """``--zk-tls`` with the CA to trust and, for mutual TLS, a client certificate and key.

    The server's certificate is verified against the CA (the system's trust store when no CA is
    given) and must name the host of the connect string, as ZooKeeper's own client checks it.
    """

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    key_password: str | None = field(default=None, repr=False)
    verify_hostname: bool = True

    def __post_init__(self) -> None:
        if bool(self.cert) != bool(self.key):
            raise InvalidInput("--zk-tls-cert and --zk-tls-key go together: give both or neither")

    def check_files(self) -> None:
        """Load the CA, certificate and key as the handshake will, so a bad file is one line now."""
        if self.ca:
            _load_certificates(self.ca, "TLS CA file")
        if self.cert and self.key:
            _load_certificates(self.cert, "TLS client certificate")
            _read_checked(self.key, "TLS client key")
            self._load_key_pair()

    def _load_key_pair(self) -> None:
        def password() -> bytes:
            if self.key_password is None:
                raise _KeyNeedsPassword
            return self.key_password.encode()

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_cert_chain(self.cert or "", self.key, password=password)
        except _KeyNeedsPassword:
            raise InvalidInput(
                f"TLS client key {self.key} is encrypted: give its password in CONFIGCTL_ZK_TLS_KEY_PASSWORD "
                "or --zk-tls-key-password-file FILE"
            ) from None
        except ssl.SSLError as exc:
            if exc.reason == "KEY_VALUES_MISMATCH":
                raise InvalidInput(
                    f"TLS client key {self.key} does not belong to the certificate {self.cert}"
                ) from None
            problem = (
                "a wrong key password, or not a PEM private key"
                if self.key_password
                else "not a PEM private key"
            )
            raise InvalidInput(f"cannot load TLS client key {self.key}: {problem}") from None

    def kazoo_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "use_ssl": True,
            "verify_certs": True,
            "check_hostname": self.verify_hostname,
        }
        if self.ca:
            options["ca"] = self.ca
        if self.cert:
            options["certfile"] = self.cert
        if self.key:
            options["keyfile"] = self.key
        if self.key_password is not None:
            options["keyfile_password"] = self.key_password
        return options


_PEM_LIMIT = 1024 * 1024


def _read_checked(path: str, what: str) -> bytes:
    from configctl.files import read_bytes

    return read_bytes(path, what, limit=_PEM_LIMIT)


def _load_certificates(path: str, what: str) -> None:
    _read_checked(path, what)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        if exc.reason == "NO_CERTIFICATE_OR_CRL_FOUND":
            raise InvalidInput(f"{what} {path} holds no PEM certificate") from None
        raise InvalidInput(f"{what} {path}: cannot load it ({exc.reason or 'not PEM'})") from None


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
    def hosts(self) -> tuple[tuple[str, int], ...]:
        return parse_connect_string(self.connect).hosts

    @property
    def identity(self) -> str | None:
        """Who nodes we create belong to (``sasl:alice``, ``digest:admin``), None when anonymous
        (or Kerberos, whose principal only the server knows)."""
        if self.sasl is not None and self.sasl.user:
            return f"sasl:{self.sasl.user}"
        if self.digest is not None:
            return f"digest:{self.digest.user}"
        return None

    def check_local(self) -> None:
        """What can be checked without a server: the TLS files load, GSSAPI support is there."""
        if self.tls is not None:
            self.tls.check_files()
        if self.sasl is not None:
            self.sasl.check_support()

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
