"""``--command-config``'s TLS settings as Kafka's tools read them, made into one TLS context at start.

Kafka's clients take ``ssl.truststore.*`` (whom to trust) and ``ssl.keystore.*`` (who we are, for
a broker that asks for client certificates) in three types: PEM, PKCS12 and JKS. An
``admin.properties`` made for ``kafka-configs.sh`` works here as it is for PEM and PKCS12 (read
with ``cryptography``, with ``ssl.truststore.password``, ``ssl.keystore.password`` and
``ssl.key.password`` as Kafka uses them). JKS, Java's own format, is refused at start with the one
``keytool`` command that converts it: no well-kept Python library reads it (pyjks's last release
is from 2020, with five dependencies), and a setting silently dropped could fall back to trusting
the system's CAs or sending no client certificate.

Everything is read and checked here, before any connection: a wrong password, a missing file or
a store with no certificate in it is one line naming the setting (exit 1), not a TLS failure
retried until the client's timeout. The context is what kafka-python would build itself (TLS 1.2
or newer, host names checked unless ``ssl.endpoint.identification.algorithm`` is empty).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    pkcs12,
)
from cryptography.x509 import load_pem_x509_certificates

from configctl.errors import InvalidInput
from configctl.files import read_bytes

_STORE_LIMIT = 4 * 1024 * 1024
_TYPES = ("PEM", "PKCS12", "JKS")
_JKS_MAGIC, _JCEKS_MAGIC = b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce"


def tls_context(props: Mapping[str, str], path: Path) -> ssl.SSLContext:
    """The TLS context ``props`` (a ``--command-config`` file at ``path``) describe."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = props.get("ssl.endpoint.identification.algorithm", "https") != ""
    trusted = _trusted_pem(props, path)
    if trusted is None:
        context.load_default_certs()
    else:
        context.load_verify_locations(cadata=trusted)
    _load_identity(context, props, path)
    return context


def _store_type(props: Mapping[str, str], which: str, path: Path, data: bytes | None = None) -> str:
    """The store's type: as set, else as its bytes say (Kafka's default is JKS, and Java reads a
    PKCS12 store as JKS too, so an unset type is not taken to mean one format)."""
    given = props.get(f"ssl.{which}.type")
    if given is not None:
        kind = given.strip().upper()
    elif data is None or data.lstrip().startswith(b"-----BEGIN"):
        kind = "PEM"
    else:
        kind = "JKS" if data[:4] in (_JKS_MAGIC, _JCEKS_MAGIC) else "PKCS12"
    if kind not in _TYPES:
        raise InvalidInput(f"--command-config {path}: ssl.{which}.type {kind!r} is not PEM, PKCS12 or JKS")
    if kind == "JKS":
        location = props.get(f"ssl.{which}.location", f"{which}.jks")
        raise InvalidInput(
            f"--command-config {path}: a JKS ssl.{which} cannot be read here; convert it once with "
            f"`keytool -importkeystore -srckeystore {location} -destkeystore {which}.p12 -deststoretype PKCS12` "
            f"and set ssl.{which}.type=PKCS12 and ssl.{which}.location to it"
        )
    return kind


def _trusted_pem(props: Mapping[str, str], path: Path) -> str | None:
    """The trusted certificates as PEM text (None: none configured, the system's are used)."""
    if "ssl.truststore.certificates" in props:  # PEM given inline, as Kafka allows
        return _checked_pem(props["ssl.truststore.certificates"], "ssl.truststore.certificates", path)
    location = props.get("ssl.truststore.location")
    if location is None:
        return None
    data = read_bytes(Path(location), "ssl.truststore.location", limit=_STORE_LIMIT)
    kind = _store_type(props, "truststore", path, data)
    if kind == "PEM":
        return _checked_pem(data.decode("utf-8", "replace"), "ssl.truststore.location", path)
    loaded = _pkcs12(data, props.get("ssl.truststore.password"), "ssl.truststore", path)
    certificates = [c.certificate for c in loaded.additional_certs]
    if loaded.cert is not None:
        certificates.insert(0, loaded.cert.certificate)
    if not certificates:
        raise InvalidInput(
            f"--command-config {path}: the PKCS12 ssl.truststore.location {location} holds no certificate"
        )
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certificates)


def _checked_pem(text: str, setting: str, path: Path) -> str:
    try:
        if load_pem_x509_certificates(text.encode("utf-8")):
            return text
    except ValueError:
        pass
    raise InvalidInput(f"--command-config {path}: {setting} holds no PEM certificate")


def _load_identity(context: ssl.SSLContext, props: Mapping[str, str], path: Path) -> None:
    """The client certificate and key (``ssl.keystore.*``), for a broker with ``ssl.client.auth``."""
    if "ssl.keystore.key" in props or "ssl.keystore.certificate.chain" in props:
        raise InvalidInput(
            f"--command-config {path}: an inline ssl.keystore.key is not supported; put the key and its "
            "certificate chain in a file and set ssl.keystore.location and ssl.keystore.type=PEM"
        )
    location = props.get("ssl.keystore.location")
    if location is None:
        return
    data = read_bytes(Path(location), "ssl.keystore.location", limit=_STORE_LIMIT)
    kind = _store_type(props, "keystore", path, data)
    if kind == "PEM":
        try:
            context.load_cert_chain(location, password=props.get("ssl.key.password"))
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise InvalidInput(
                f"--command-config {path}: ssl.keystore.location {location} is not a readable PEM key and "
                f"certificate (or ssl.key.password is wrong): {exc}"
            ) from None
        return
    loaded = _pkcs12(data, props.get("ssl.keystore.password"), "ssl.keystore", path)
    if loaded.key is None or loaded.cert is None:
        raise InvalidInput(
            f"--command-config {path}: the PKCS12 ssl.keystore.location {location} holds no key"
        )
    # ssl loads a key only from a file: a private one, encrypted, removed at once.
    secret = os.urandom(24).hex().encode("ascii")
    pem = loaded.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(secret))
    pem += loaded.cert.certificate.public_bytes(Encoding.PEM)
    pem += b"".join(c.certificate.public_bytes(Encoding.PEM) for c in loaded.additional_certs)
    handle, name = tempfile.mkstemp(prefix="configctl-key-", suffix=".pem")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(pem)
        context.load_cert_chain(name, password=secret)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _pkcs12(data: bytes, password: str | None, setting: str, path: Path) -> pkcs12.PKCS12KeyAndCertificates:
    try:
        return pkcs12.load_pkcs12(data, password.encode("utf-8") if password else None)
    except ValueError:
        said = f"{setting}.password" if password else f"no {setting}.password"
        raise InvalidInput(
            f"--command-config {path}: {setting}.location is not a PKCS12 store that opens with {said}"
        ) from None
