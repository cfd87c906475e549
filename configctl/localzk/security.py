"""What ``--tls`` and ``--sasl`` mean for a local server's configuration, and how they are recorded.

TLS: ZooKeeper's Netty connection factory (the NIO one cannot do TLS) with a ``secureClientPort``
and *no* plain ``clientPort``, so a plain-text client finds nothing that speaks to it. Client
certificates are asked for but optional (``ssl.clientAuth=want``); one that is presented must be
signed by our CA, and the x509 provider turns it into an identity (without that provider ZooKeeper
would drop every connection that presents one). The JDK's TLS is used (ZooKeeper's default
``ssl.sslProvider=JDK``): nothing native is needed. TLS 1.3 and 1.2 are accepted: ZooKeeper 3.9
alone would accept 1.3 only, and a Kafka broker's ZooKeeper client offers only 1.2 unless told
otherwise (``zookeeper.ssl.protocol`` defaults to ``TLSv1.2``), so it could not connect.

SASL: the SASL provider, and ``enforce.auth`` (ZooKeeper 3.7+) so a session that has not logged in
with SASL is closed at its first request instead of reading whatever the world may read.

Quorum and election traffic of an ensemble stay plain: it never leaves 127.0.0.1.
Everything except the JAAS file goes into ``zoo.cfg`` (ZooKeeper turns keys it does not know into
``zookeeper.*`` system properties); the JAAS file can only be named by a JVM option.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configctl.localzk.client import ClientSettings
from configctl.localzk.ports import HOST
from configctl.localzk.sasl import SaslFiles, ensure_sasl, sasl_files
from configctl.localzk.tls import TlsFiles, ensure_certificates, tls_files

NETTY_FACTORY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
X509_PROVIDER = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"


@dataclass(frozen=True)
class Security:
    """The secured parts of a server: TLS files, the SASL user, or neither (plain)."""

    tls: TlsFiles | None = None
    sasl: SaslFiles | None = None

    @classmethod
    def prepare(cls, data_dir: Path, *, tls: bool, sasl_user: str | None) -> Security:
        """Make (or keep) the certificates and the SASL user's files that a start needs."""
        return cls(
            ensure_certificates(data_dir) if tls else None,
            ensure_sasl(data_dir, sasl_user) if sasl_user is not None else None,
        )

    def client_port_lines(self, port: int) -> list[str]:
        """zoo.cfg lines for the one port clients use: secure (TLS) or plain, never both."""
        if self.tls is not None:
            return [f"secureClientPort={port}", f"secureClientPortAddress={HOST}"]
        return [f"clientPort={port}", f"clientPortAddress={HOST}"]

    def zoo_cfg_lines(self) -> list[str]:
        lines = []
        if self.tls is not None:
            lines += [
                f"serverCnxnFactory={NETTY_FACTORY}",
                f"ssl.keyStore.location={self.tls.server}",
                "ssl.keyStore.type=PEM",
                f"ssl.trustStore.location={self.tls.ca}",
                "ssl.trustStore.type=PEM",
                "ssl.clientAuth=want",
                "ssl.enabledProtocols=TLSv1.3,TLSv1.2",  # Kafka's ZooKeeper client: TLSv1.2 by default
                f"authProvider.x509={X509_PROVIDER}",
            ]
        if self.sasl is not None:
            lines += [
                f"authProvider.sasl={SASL_PROVIDER}",
                "enforce.auth.enabled=true",
                "enforce.auth.schemes=sasl",
            ]
        return lines

    def jvm_options(self) -> list[str]:
        if self.sasl is None:
            return []
        return [f"-Djava.security.auth.login.config={self.sasl.jaas_file}"]

    def client(self, connect: str) -> ClientSettings:
        """What a client must bring to this server."""
        return ClientSettings(
            connect,
            ca=self.tls.ca if self.tls else None,
            cert=self.tls.client_cert if self.tls else None,
            key=self.tls.client_key if self.tls else None,
            sasl_user=self.sasl.user if self.sasl else None,
            sasl_password_file=self.sasl.password_file if self.sasl else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {"tls": self.tls is not None, "sasl_user": self.sasl.user if self.sasl else None}

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None, data_dir: Path) -> Security:
        """Read back what :meth:`to_json` recorded; a state file from before TLS/SASL means plain."""
        raw = raw or {}
        user = raw.get("sasl_user")
        return cls(
            tls_files(data_dir) if raw.get("tls") else None,
            sasl_files(data_dir, str(user)) if user else None,
        )


PLAIN = Security()
