"""``--bootstrap-server`` and ``--command-config`` as the Kafka client's options.

``--command-config F`` is a Kafka client properties file, as kafka-configs.sh takes it
(``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.truststore.location``
...). The settings configctl can honour are turned into kafka-python options here; one it cannot
honour (a JKS trust store, GSSAPI without its library) is a one-line error, never silently
dropped: a client that quietly fell back to PLAINTEXT would send credentials in clear.
"""

from __future__ import annotations

import re
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


def client_options(bootstrap: str, command_config: Path | None, timeout: float) -> dict[str, Any]:
    """kafka-python ``KafkaAdminClient`` options for ``bootstrap`` and the properties file."""
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers(bootstrap),
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
    if protocol.endswith("SSL"):
        store = props.get("ssl.truststore.location")
        if store is not None:
            if props.get("ssl.truststore.type", "PEM").upper() != "PEM":
                raise InvalidInput(f"--command-config {path}: only a PEM ssl.truststore.type is supported")
            options["ssl_cafile"] = store
        if props.get("ssl.endpoint.identification.algorithm", "https") == "":
            options["ssl_check_hostname"] = False
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
