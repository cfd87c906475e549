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

from dataclasses import dataclass, field

from configctl import secrets


@dataclass(frozen=True)
class ScramUpsertion:
    """One mechanism's credential for AlterUserScramCredentials (no password: its salted form)."""

    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


def upsertion(mechanism: str, spec: str, *, salt: bytes | None = None) -> ScramUpsertion:
    """``spec`` (``[iterations=N,]password=SECRET``, checked by :func:`configctl.secrets.parse_scram_spec`)
    salted as Kafka's client salts it; ``salt`` is for tests only."""
    password, iterations = secrets.parse_scram_spec(mechanism, spec)
    salt = secrets.scram_salt() if salt is None else salt
    return ScramUpsertion(
        mechanism, iterations, salt, secrets.salted_password(mechanism, password, salt, iterations)
    )
