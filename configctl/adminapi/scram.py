"""A SCRAM credential as AlterUserScramCredentials takes it: salted here, the password never sent.

Kafka's own tool (``kafka-configs.sh --bootstrap-server``) salts on the client: a random salt
(``ScramFormatter.secureRandomBytes``) and ``Hi(password, salt, iterations)`` of RFC 5802 with the
mechanism's HMAC; the broker derives the stored and server keys from them. The salt and the
spec's rules are :mod:`configctl.secrets`'s, the home of SCRAM credentials for ZooKeeper, so a
credential written either way is the same credential.

A credential already in its stored form (``salt=...,stored_key=...``) cannot be sent: the broker
needs the salted password, which the stored keys do not give back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from configctl import secrets


@dataclass(frozen=True)
class ScramUpsertion:
    """One mechanism's credential for AlterUserScramCredentials (no password: its salted form)."""

    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


def in_clear(value: str) -> bool:
    """Whether a SCRAM key's value is an operator's ``[iterations=N,]password=...`` (not a stored credential)."""
    return not value.startswith("salt=")


def upsertion(mechanism: str, spec: str, *, salt: bytes | None = None) -> ScramUpsertion:
    """``spec`` (``[iterations=N,]password=SECRET``, checked by :func:`configctl.secrets.parse_scram_spec`)
    salted as Kafka's client salts it; ``salt`` is for tests only."""
    password, iterations = secrets.parse_scram_spec(mechanism, spec)
    salt = secrets._scram_salt() if salt is None else salt
    hash_name = secrets.SCRAM_MECHANISMS[mechanism]
    salted = hashlib.pbkdf2_hmac(
        hash_name, secrets._password_bytes(password, f"{mechanism} password"), salt, iterations
    )
    return ScramUpsertion(mechanism, iterations, salt, salted)
