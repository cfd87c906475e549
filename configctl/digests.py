"""Digests of secrets: what snapshots, the state node and the audit show instead of a secret.

Two forms. ``sha256:<hex>`` (:func:`digest`) is the snapshot lines' (docs/reference/snapshots.md): plain SHA-256,
or HMAC-SHA256 under the fleet's digest key, written alike (as published; existing snapshots keep
their meaning). ``hmac-sha256:<hex>`` (:func:`keyed_digest`) says it is keyed: it is the only
digest of a secret published where anyone can read it (:func:`published_digest`), and the audit
reads both (:func:`comparable`).

Its own module, standard library only, because the audit's Spark job needs it on a cluster
driver where configctl's other dependencies (``cryptography`` for :mod:`configctl.secrets`)
may be missing: the job digests secrets that arrive in clear under the fleet's digest key, and
reads that key, exactly as the listener does. :mod:`configctl.secrets` re-exports all of it.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from configctl.errors import InvalidInput
from configctl.files import read_bytes

DIGEST_PREFIX = "sha256:"
"""The digest in a snapshot line: plain SHA-256, or (from a listener given the fleet's
digest key) HMAC-SHA256 under it. The two look alike; a snapshot's meaning is left as published."""
KEYED_PREFIX = "hmac-sha256:"
"""A digest that says it is keyed: HMAC-SHA256 under the fleet's digest key, the same hex as
:func:`digest` with that key. What configctl publishes where anyone can read it (the listener's
state node), so a reader can tell a digest no guess can be tested against from a plain one."""
DIGEST_KEY_ENV = "CONFIGCTL_DIGEST_KEY_FILE"
"""A file holding the fleet's digest key, shared by every listener and the audit (read through
:mod:`configctl.settings`, whose ``digest-key-file`` setting it is)."""
_MIN_DIGEST_KEY_BYTES = 16


def digest(value: str, key: bytes | None = None) -> str:
    """A stable fingerprint of a secret: equal values give equal digests, so drift stays visible.

    Without a key it is the ``sha256:<hex>`` of the value, which anyone holding a
    snapshot can test guesses against offline. With the fleet's digest key (the same for every
    listener and the audit) it is HMAC-SHA256 under that key, written the same way: equal values
    still compare equal across the fleet, but a guess cannot be checked without the key.
    """
    data = value.encode("utf-8", "surrogatepass")
    if key is None:
        return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()
    return DIGEST_PREFIX + hmac.new(key, data, hashlib.sha256).hexdigest()


def keyed_digest(value: str, key: bytes) -> str:
    """``hmac-sha256:<hex>``: :func:`digest` under ``key``, marked as keyed (see :data:`KEYED_PREFIX`)."""
    return KEYED_PREFIX + digest(value, key)[len(DIGEST_PREFIX) :]


def published_digest(value: str, key: bytes | None) -> str | None:
    """The digest of a secret that may be shown where anyone can read it, or None: none at all.

    A plain SHA-256 of a secret (``password.encoder.secret``, a keystore password) can be tested
    offline against guesses by everyone who reads it, so a world-readable place gets a keyed
    digest (``hmac-sha256:<hex>``) under the fleet's digest key, or nothing without one.
    """
    return None if key is None else keyed_digest(value, key)


def is_digest(text: str | None) -> bool:
    """True for a digest in either form (``sha256:<hex>`` or ``hmac-sha256:<hex>``), not a secret in clear."""
    return text is not None and text.startswith((DIGEST_PREFIX, KEYED_PREFIX))


def is_keyed(text: str | None) -> bool:
    """True for a digest marked keyed (``hmac-sha256:``); a ``sha256:`` digest may be either, so False."""
    return text is not None and text.startswith(KEYED_PREFIX)


def comparable(text: str | None) -> str | None:
    """A digest in snapshot form (``sha256:<hex>``), so both forms of one keyed digest compare equal.

    The audit compares snapshot lines (``sha256:``) with desired states that may hold digests
    copied from a state node (``hmac-sha256:``): the hex is the same HMAC, so the keyed prefix is
    read and dropped. Anything else is returned unchanged.
    """
    if text is not None and text.startswith(KEYED_PREFIX):
        return DIGEST_PREFIX + text[len(KEYED_PREFIX) :]
    return text


def _configured_file() -> str | None:
    """``$CONFIGCTL_DIGEST_KEY_FILE`` when set and not empty (the ``digest-key-file`` setting of
    :mod:`configctl.settings`, an environment-only one with no default, which names its variable
    from :data:`DIGEST_KEY_ENV`: this module stays below the settings)."""
    return os.environ.get(DIGEST_KEY_ENV) or None


def read_digest_key(path: str | None = None) -> bytes | None:
    """The fleet digest key from ``path`` (else ``$CONFIGCTL_DIGEST_KEY_FILE``); None when not configured.

    The file holds the key itself (trailing whitespace ignored); at least 16 bytes, so it is a
    key and not a guessable word.
    """
    chosen = path or _configured_file()
    if chosen is None:
        return None
    key = read_bytes(chosen, "digest key file", limit=4096).strip()
    if len(key) < _MIN_DIGEST_KEY_BYTES:
        raise InvalidInput(
            f"digest key file {chosen}: the key must be at least {_MIN_DIGEST_KEY_BYTES} bytes"
        )
    return key
