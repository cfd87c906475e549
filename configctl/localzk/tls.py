"""TLS material for the secured local server: a private CA, a server and a client certificate.

Production ZooKeepers run TLS, so the demo and the tests must too; but a local server has no one to
sign its certificate, so it makes its own CA. Everything is PEM, which ZooKeeper 3.9 reads directly
(``ssl.keyStore.type=PEM``) and Python's ``ssl`` (hence kazoo) reads too: no keytool, no Java
key store passwords. Files live in ``<data-dir>/tls/``::

    ca.pem           the CA certificate: clients trust this (``--zk-tls-ca``)
    server.pem       the server's private key and certificate chain (0600; ZooKeeper's key store)
    client.pem       an optional client certificate (``--zk-tls-cert``) ...
    client-key.pem   ... and its key (0600; ``--zk-tls-key``)

The CA's private key is never written: once both certificates are signed nothing else can be, so
a stolen data directory cannot mint certificates this CA vouches for. The files are kept across
restarts (a client's ``ca.pem`` stays valid) and made anew only when one is missing or about to
expire. Certificates name ``127.0.0.1`` and ``localhost``, the only addresses the server listens on,
so clients can verify the host name too. Keys are EC P-256: fast to make, and every TLS 1.3 stack
(the JDK's, OpenSSL's) speaks it.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from configctl.errors import InvalidInput
from configctl.files import read_bytes, replace_atomically
from configctl.localzk.ports import HOST

CA_DAYS = 3650
LEAF_DAYS = 825  # the longest validity TLS clients commonly still accept for a leaf certificate
_RENEW_BEFORE = datetime.timedelta(days=1)
_PEM_LIMIT = 1024 * 1024  # a certificate chain is a few KB; more is not one of ours


@dataclass(frozen=True)
class TlsFiles:
    """Where the TLS material of one data directory lives."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def server(self) -> Path:
        return self.dir / "server.pem"

    @property
    def client_cert(self) -> Path:
        return self.dir / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.dir / "client-key.pem"

    def all(self) -> tuple[Path, ...]:
        return (self.ca, self.server, self.client_cert, self.client_key)


def tls_files(data_dir: Path) -> TlsFiles:
    return TlsFiles(data_dir / "tls")


def ensure_certificates(data_dir: Path, now: datetime.datetime | None = None) -> TlsFiles:
    """The data directory's TLS files, made (or made anew) when missing, unreadable or expiring."""
    files = tls_files(data_dir)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if not _still_good(files, now):
        _make(files, now)
    return files


def _still_good(files: TlsFiles, now: datetime.datetime) -> bool:
    try:
        for path in (files.ca, files.server, files.client_cert):
            for cert in x509.load_pem_x509_certificates(read_bytes(path, "certificate", limit=_PEM_LIMIT)):
                if cert.not_valid_after_utc - _RENEW_BEFORE < now:
                    return False
        return files.client_key.is_file()
    except (InvalidInput, ValueError):  # missing, unreadable, not a file: made anew
        return False


def _make(files: TlsFiles, now: datetime.datetime) -> None:
    files.dir.mkdir(parents=True, exist_ok=True)
    files.dir.chmod(0o700)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "configctl"),
            x509.NameAttribute(NameOID.COMMON_NAME, "configctl local ZooKeeper CA"),
        ]
    )
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now, CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaves = {
        "server": (files.server, None, ExtendedKeyUsageOID.SERVER_AUTH),
        "client": (files.client_cert, files.client_key, ExtendedKeyUsageOID.CLIENT_AUTH),
    }
    for role, (cert_path, key_path, usage) in leaves.items():
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "configctl"),
                x509.NameAttribute(NameOID.COMMON_NAME, f"configctl local ZooKeeper {role}"),
            ]
        )
        cert = (
            _builder(subject, ca_name, key.public_key(), now, LEAF_DAYS)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(HOST))]
                ),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        key_pem = _pem_key(key)
        chain_pem = _pem_cert(cert) + _pem_cert(ca_cert)
        if key_path is None:  # ZooKeeper's PEM key store: the key and the chain in one file
            replace_atomically(cert_path, key_pem + chain_pem, private=True)
        else:
            replace_atomically(key_path, key_pem, private=True)
            replace_atomically(cert_path, chain_pem)
    replace_atomically(files.ca, _pem_cert(ca_cert))  # last: its presence means the set is complete


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
    days: int,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # a little slack for clock skew
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def _pem_cert(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
