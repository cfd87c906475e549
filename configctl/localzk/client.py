"""What a client needs to reach a local server: the connect string and, when secured, TLS and SASL.

``configctl zk start`` prints these as configctl's own global options (see docs/operations.md: ``--zk-tls``,
``--zk-tls-ca``, ``--zk-sasl digest:USER``) and writes them as ``CONFIGCTL_*`` variables to
``<data-dir>/client.env``, which a shell or a test can source. The SASL password never appears in
either: both name the 0600 file that holds it (``CONFIGCTL_ZK_SASL_PASSWORD_FILE``), because a
password on a command line is visible to every local user in ``ps``. The same settings drive the
readiness probe, so the server is proven to accept exactly what we tell clients to send.
"""

from __future__ import annotations

import shlex
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configctl.files import read_text, replace_atomically
from configctl.localzk.sasl import PASSWORD_FILE_LIMIT

ENV_FILE = "client.env"


@dataclass(frozen=True)
class ClientSettings:
    """How to connect: plain when ``ca`` and ``sasl_user`` are None."""

    connect: str
    ca: Path | None = None  # TLS: the CA certificate to trust
    cert: Path | None = None  # TLS: an optional client certificate the server accepts ...
    key: Path | None = None  # ... and its key
    sasl_user: str | None = None  # SASL DIGEST-MD5 user
    sasl_password_file: Path | None = None

    @property
    def tls(self) -> bool:
        return self.ca is not None

    @property
    def sasl(self) -> bool:
        return self.sasl_user is not None

    def options(self) -> list[str]:
        """configctl's global options for this server (no secrets: the password is in a file)."""
        options = ["--zookeeper", self.connect]
        if self.ca is not None:
            options += ["--zk-tls", "--zk-tls-ca", str(self.ca)]
        if self.sasl_user is not None:
            options += ["--zk-sasl", f"digest:{self.sasl_user}"]
        return options

    def client_cert_options(self) -> list[str]:
        """The optional client-certificate options (empty without TLS)."""
        if self.cert is None or self.key is None:
            return []
        return ["--zk-tls-cert", str(self.cert), "--zk-tls-key", str(self.key)]

    def env(self) -> dict[str, str]:
        """The same settings as ``CONFIGCTL_*`` variables, the password by file."""
        env = {"CONFIGCTL_ZOOKEEPER": self.connect}
        if self.ca is not None:
            env["CONFIGCTL_ZK_TLS"] = "true"
            env["CONFIGCTL_ZK_TLS_CA"] = str(self.ca)
        if self.sasl_user is not None:
            env["CONFIGCTL_ZK_SASL"] = f"digest:{self.sasl_user}"
            if self.sasl_password_file is not None:
                env["CONFIGCTL_ZK_SASL_PASSWORD_FILE"] = str(self.sasl_password_file)
        return env

    def write_env_file(self, path: Path) -> None:
        """Write :meth:`env` as shell assignments (``set -a; . FILE; set +a`` exports them)."""
        lines = ["# configctl zk start: how to reach this server (source with: set -a; . FILE; set +a)"]
        lines += [f"{key}={shlex.quote(value)}" for key, value in self.env().items()]
        replace_atomically(path, "\n".join(lines) + "\n")

    def sasl_password(self) -> str | None:
        if self.sasl_password_file is None:
            return None
        return read_text(self.sasl_password_file, "SASL password file", limit=PASSWORD_FILE_LIMIT).strip()

    def kazoo_options(self, *, client_cert: bool = False) -> dict[str, Any]:
        """Keyword arguments for ``KazooClient`` that satisfy this server (the password read now)."""
        options: dict[str, Any] = {}
        if self.ca is not None:
            options.update(use_ssl=True, ca=str(self.ca))
            if client_cert and self.cert is not None and self.key is not None:
                options.update(certfile=str(self.cert), keyfile=str(self.key))
        if self.sasl_user is not None:
            options["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": self.sasl_user,
                "password": self.sasl_password(),
            }
        return options

    def ssl_context(self) -> ssl.SSLContext | None:
        """A TLS context trusting only our CA (and checking the host name), or None when plain."""
        if self.ca is None:
            return None
        return ssl.create_default_context(cafile=str(self.ca))

    def to_json(self) -> dict[str, Any]:
        return {
            "options": self.options(),
            "client_cert_options": self.client_cert_options(),
            "env": self.env(),
        }
