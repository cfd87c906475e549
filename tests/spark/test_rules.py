"""The audit's rules come from their one home: snapshot fields, sensitive names, digests, drift classes."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from configctl import catalogue, secrets, snapshot
from configctl.audit.drift import REGISTRY
from configctl.audit.expected import snapshot_form
from configctl.audit.schema import CORRUPT_COLUMN, DIGEST_PREFIX, is_sensitive, snapshot_schema
from configctl.audit.verdict import drift_findings

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[2] / "docs" / "audit.md"


def test_the_read_schema_is_the_snapshot_line() -> None:
    fields = snapshot_schema().fields
    assert tuple(f.name for f in fields) == (*snapshot.FIELD_NAMES, CORRUPT_COLUMN)


def test_sensitive_names_are_the_catalogues() -> None:
    names, suffixes = catalogue.sensitive_names()
    assert names and suffixes
    for name in names:
        assert is_sensitive(name), name
    for suffix in suffixes:
        assert is_sensitive(f"listener.name.internal.{suffix}"), suffix
        assert not is_sensitive(f"listener.name.internal.{suffix}.not")
    for plain in ("retention.ms", "num.io.threads", "ssl.keystore.location", "producer_byte_rate"):
        assert not is_sensitive(plain)


def test_digests_are_the_listeners() -> None:
    for secret in ("hunter2", "", "ünïcode"):
        assert secrets.digest(secret).startswith(DIGEST_PREFIX)
        # The Spark job digests a clear secret as sha2(value, 256) after the same prefix.
        assert secrets.digest(secret) == DIGEST_PREFIX + hashlib.sha256(secret.encode()).hexdigest()
        assert snapshot_form("ssl.truststore.password", secret) == secrets.digest(secret)
    already = secrets.digest("x")
    assert snapshot_form("ssl.truststore.password", already) == already
    assert snapshot_form("retention.ms", "100") == "100"


def test_drift_classes_are_registered_once_and_documented() -> None:
    names = [d.name for d in REGISTRY]
    assert len(set(names)) == len(names)
    assert set(drift_findings()) == {"stale_brokers", "divergent", "static_skew", "missed_changes"}
    heats = [d.heat for d in REGISTRY if d.heat is not None]
    assert len({h.priority for h in heats}) == len(heats) and len({h.kind for h in heats}) == len(heats)
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Adding a drift class", 1)[1]
    for drift in REGISTRY:
        assert f"`{drift.name}`" in text
        module = drift.compute.__module__.rsplit(".", 1)[1]
        assert re.search(rf"drift/{module}\.py", section), module
