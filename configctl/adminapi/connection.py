"""``--bootstrap-server``, ``--bootstrap-controller`` and ``--command-config`` as the Kafka client's options.

``--command-config F`` is a Kafka client properties file, as kafka-configs.sh takes it
(``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.truststore.location``
...). The settings configctl can honour are turned into kafka-python options here; one it cannot
honour (a JKS store, GSSAPI without its library) is a one-line error, never silently
dropped: a client that quietly fell back to PLAINTEXT would send credentials in clear. The TLS
settings (PEM and PKCS12 trust and key stores) are :mod:`configctl.adminapi.keystores`'s.
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any

import javaproperties

from configctl.errors import InvalidInput, shown
from configctl.files import read_text
from configctl.zkconnection import ConnectString, parse_connect_string

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
_MECHANISMS = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}


def bootstrap_servers(bootstrap: str, what: str = "--bootstrap-server") -> list[str]:
    """``HOST:PORT[,HOST:PORT...]`` as kafka-python's ``bootstrap_servers``, each checked before a
    socket opens (a port from 1 to 65535, a host name or address) by ZooKeeper's connect-string
    rule (:func:`configctl.zkconnection.parse_connect_string`, the one home of host:port), without
    a chroot and with every port given: Kafka has no default port to fall back on."""
    raw = bootstrap.strip() if isinstance(bootstrap, str) else ""
    items = [item.strip() for item in raw.split(",")]
    if not raw or "/" in raw or any(not _has_port(item) for item in items if item):
        raise InvalidInput(f"{what} must be HOST:PORT[,HOST:PORT...], not {shown(raw)}")
    return [str(ConnectString((host,), None)) for host in parse_connect_string(raw, what=what).hosts]


def _has_port(item: str) -> bool:
    host, colon, port = item.rpartition(":")
    return bool(colon and host and port) and not host.endswith(":")  # ``::1`` needs its brackets


def client_options(
    bootstrap: str, command_config: Path | None, timeout: float, what: str = "--bootstrap-server"
) -> dict[str, Any]:
    """kafka-python ``KafkaAdminClient`` options for ``bootstrap`` and the properties file
    (``what``: the option that named the addresses, as an error names it)."""
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers(bootstrap, what),
        "client_id": "configctl",
        "request_timeout_ms": int(timeout * 1000),
        "bootstrap_timeout_ms": int(min(timeout, 10.0) * 1000),
    }
    if command_config is not None:
        options.update(_from_properties(command_config))
    return options


def _from_properties(path: Path) -> dict[str, Any]:
    props = javaproperties.loads(read_text(path, "--command-config"))
    options: dict[str, Any] = {}
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise InvalidInput(f"--command-config {path}: unknown security.protocol {protocol!r}")
    options["security_protocol"] = protocol
    if protocol.endswith("SSL"):  # every TLS setting read and checked now, in one context
        from configctl.adminapi.keystores import tls_context

        options["ssl_context"] = tls_context(props, path)
    if protocol.startswith("SASL"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
        if mechanism not in _MECHANISMS:
            raise InvalidInput(f"--command-config {path}: sasl.mechanism {mechanism} is not supported")
        jaas = dict(_JAAS_OPTION.findall(props.get("sasl.jaas.config", "")))
        if "username" not in jaas or "password" not in jaas:
            raise InvalidInput(f"--command-config {path}: sasl.jaas.config needs username and password")
        options["sasl_mechanism"] = mechanism
        options["sasl_plain_username"] = jaas["username"]
        options["sasl_plain_password"] = jaas["password"]
    return options


PROBE_TIMEOUT = 1.0
"""How long a first TCP connect may take before the Kafka client is left to wait for it."""


def failing_at_once(bootstrap: str) -> str | None:
    """Why no address of ``bootstrap`` can ever answer, when each fails at once: its name does
    not resolve, or the connection is refused (nothing listens). None when one connects, or one
    is merely slow (a firewall that drops packets): the Kafka client waits for those.

    Kafka's client retries such an address until its bootstrap timeout (10 s); the operator
    learns nothing more from the wait, so the command fails now, naming each address and why.
    """
    reasons = []
    deadline = time.monotonic() + PROBE_TIMEOUT
    for server in bootstrap_servers(bootstrap):
        host, _, port = server.rpartition(":")
        host = host.strip("[]")
        try:
            addresses = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            why = exc.strerror if isinstance(exc, socket.gaierror) and exc.strerror else str(exc)
            reasons.append(f"{server}: the name {host} does not resolve ({why})")
            continue
        for family, kind, proto, _, address in addresses:
            with socket.socket(family, kind, proto) as probe:
                probe.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    probe.connect(address)
                except ConnectionRefusedError:
                    continue
                except OSError:
                    return None  # slow, unreachable for now: the client's own wait decides
            return None  # it connects: whatever follows is the Kafka client's to tell
        reasons.append(f"{server}: connection refused (nothing listens there)")
    return "; ".join(reasons)
