"""Digests of secrets: what snapshots, the state node and the audit show instead of a secret.

Its own module, standard library only, because the audit's Spark job needs it on a cluster
driver where configctl's other dependencies (``cryptography`` for :mod:`configctl.secrets`)
may be missing: the job digests secrets that arrive in clear under the fleet's digest key, and
reads that key, exactly as the listener does. :mod:`configctl.secrets` re-exports all of it.
"""

from __future__ import annotations

import hashlib
import hmac

from configctl.errors import InvalidInput
from configctl.files import read_bytes

DIGEST_PREFIX = "sha256:"
DIGEST_KEY_ENV = "CONFIGCTL_DIGEST_KEY_FILE"
"""A file holding the fleet's digest key, shared by every listener and the audit (read through
:mod:`configctl.settings`, whose ``digest-key-file`` setting it is)."""
_MIN_DIGEST_KEY_BYTES = 16


def digest(value: str, key: bytes | None = None) -> str:
    """A stable fingerprint of a secret: equal values give equal digests, so drift stays visible.

    Without a key it is Contract 4's ``sha256:<hex>`` of the value, which anyone holding a
    snapshot can test guesses against offline. With the fleet's digest key (the same for every
    listener and the audit) it is HMAC-SHA256 under that key, written the same way: equal values
    still compare equal across the fleet, but a guess cannot be checked without the key.
    """
    data = value.encode("utf-8", "surrogatepass")
    if key is None:
        return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()
    return DIGEST_PREFIX + hmac.new(key, data, hashlib.sha256).hexdigest()


def _configured_file() -> str | None:
    """``$CONFIGCTL_DIGEST_KEY_FILE``, read through :mod:`configctl.settings` (imported here, not at
    the top: the Spark job imports this module for :func:`digest` alone)."""
    from configctl.settings import environment_value

    return environment_value("digest-key-file") or None


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
