"""configctl.digests: a keyed digest can be told from a plain one, and the audit reads both forms.

the ``sha256:<hex>`` in snapshot lines keeps its meaning (plain, or HMAC under the fleet
key, written alike); ``hmac-sha256:<hex>`` says it is keyed, and is the only digest of a secret
configctl may publish where anyone can read it.
"""

from __future__ import annotations

import hashlib
import hmac

import pytest

from configctl.audit.expected import snapshot_form
from configctl.digests import (
    DIGEST_PREFIX,
    KEYED_PREFIX,
    comparable,
    digest,
    is_digest,
    is_keyed,
    keyed_digest,
    published_digest,
)

pytestmark = pytest.mark.unit

KEY = b"fleet-digest-key-0123456789"
SECRET = "password-encoder-secret"


def test_snapshot_digests_keep_their_published_form():
    assert digest(SECRET) == "sha256:" + hashlib.sha256(SECRET.encode()).hexdigest()
    assert digest(SECRET, KEY) == "sha256:" + hmac.new(KEY, SECRET.encode(), hashlib.sha256).hexdigest()


def test_a_keyed_digest_says_it_is_keyed_and_a_plain_one_does_not():
    keyed = keyed_digest(SECRET, KEY)
    assert keyed == KEYED_PREFIX + hmac.new(KEY, SECRET.encode(), hashlib.sha256).hexdigest()
    assert is_keyed(keyed) and is_digest(keyed)
    assert not is_keyed(digest(SECRET)) and is_digest(digest(SECRET))
    assert not is_keyed(digest(SECRET, KEY))  # a sha256: digest may be either: never claimed keyed
    assert not is_digest(SECRET) and not is_keyed(None) and not is_digest(None)


def test_nothing_guessable_is_published_without_a_key():
    """The world-readable state node: a keyed digest under the fleet key, else no digest at all."""
    assert published_digest(SECRET, None) is None
    published = published_digest(SECRET, KEY)
    assert published is not None and is_keyed(published)
    assert hashlib.sha256(SECRET.encode()).hexdigest() not in published


def test_both_forms_of_one_keyed_digest_compare_equal():
    assert comparable(keyed_digest(SECRET, KEY)) == digest(SECRET, KEY)
    assert comparable(digest(SECRET)) == digest(SECRET)  # a snapshot's digest is left as it is
    assert comparable(digest(SECRET, KEY)) == digest(SECRET, KEY)
    assert comparable("plain text") == "plain text" and comparable(None) is None


def test_the_audit_reads_a_desired_state_holding_either_form():
    name = "ssl.keystore.password"
    assert snapshot_form(name, keyed_digest(SECRET, KEY)) == digest(SECRET, KEY)
    assert snapshot_form(name, digest(SECRET, KEY)) == digest(SECRET, KEY)  # an older export
    assert snapshot_form(name, digest(SECRET)) == digest(SECRET)
    assert snapshot_form(name, SECRET, KEY) == digest(SECRET, KEY)  # in clear: digested under the key
    assert snapshot_form("retention.ms", KEYED_PREFIX + "not-a-secret") == KEYED_PREFIX + "not-a-secret"
    assert DIGEST_PREFIX == "sha256:"
