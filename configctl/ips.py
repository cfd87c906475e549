"""IP entities: the ways one address is spelled, and host names Kafka resolves.

Kafka stores an IP entity under the name it was given (``ips/0:0:0:0:0:0:0:1``, ``ips/::1`` and
``ips/broker-lb.internal`` are all valid) and its brokers match connections by *address*
(``InetAddress`` equality): a host name is resolved when its config is applied. Every reader
(the listener, ``describe --effective``, the write side's checks) asks this module which
address a name stands for, so ``::1`` finds a config stored as ``0:0:0:0:0:0:0:1``.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from functools import lru_cache

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_LABEL_RE = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def literal(name: str) -> Address | None:
    """The address an IP literal names (None for anything else, host names included)."""
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def is_host_name(name: str) -> bool:
    """A syntactically valid DNS host name (RFC 1123): what Kafka could hand to ``InetAddress``."""
    text = name[:-1] if name.endswith(".") else name
    labels = text.split(".")
    # An all-digit last label is a malformed IPv4 literal (1.2.3, 256.1.1.1), never a host name.
    return (
        0 < len(text) <= 253
        and all(_LABEL_RE.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()
    )


def java_form(address: Address) -> str:
    """Java's ``InetAddress.getHostAddress()``: IPv6 as eight unpadded hex groups (``0:0:0:0:0:0:0:1``)."""
    if address.version == 4:
        return str(address)
    return ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))


def spellings(address: Address) -> tuple[str, ...]:
    """The usual ways an address is written: compressed, Java's form, exploded (no repeats)."""
    forms = (address.compressed, java_form(address), address.exploded)
    return tuple(dict.fromkeys(forms))


@lru_cache(maxsize=4096)
def _lookup(name: str) -> Address | None:
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return None
    for family, _, _, _, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            found = literal(str(sockaddr[0]).split("%", 1)[0])
            if found is not None:
                return found
    return None


def resolve(name: str) -> Address | None:
    """The address a stored IP entity name stands for: a literal, or a host name resolved once
    (as a broker resolves it when the config is applied); None when it does not resolve."""
    found = literal(name)
    if found is not None:
        return found
    if not is_host_name(name):
        return None
    return _lookup(name)
