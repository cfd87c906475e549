"""Issue 23: the audit reads both forms of a keyed digest (``sha256:`` in snapshot lines as
published, ``hmac-sha256:`` where a digest says it is keyed) as one value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configctl.audit.expected import ExpectedState, ExpectedValue
from configctl.audit.options import AuditOptions
from configctl.audit.run import audit
from configctl.digests import digest, keyed_digest

pytestmark = pytest.mark.spark

KEY = b"fleet-digest-key-0123456789"
PASSWORD = "hunter2-truststore"


def _line(broker: int, value: str) -> str:
    return json.dumps(
        {
            "broker_id": broker,
            "change_number": 7,
            "entity_path": f"brokers/{broker}",  # the broker's own key
            "name": "ssl.truststore.password",
            "value": value,
            "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
            "captured_at_ms": 1,
        }
    )


def test_both_forms_of_one_keyed_digest_are_one_value_and_never_digested_again(spark, tmp_path: Path) -> None:
    # broker 1 wrote the keyed digest in snapshot form, broker 2 in its keyed form; the desired
    # state holds the keyed form (as copied from a state node)
    for broker, value in ((1, digest(PASSWORD, KEY)), (2, keyed_digest(PASSWORD, KEY))):
        (tmp_path / f"broker-{broker}.jsonl").write_text(_line(broker, value) + "\n", encoding="utf-8")
    expected = ExpectedState(
        7, (ExpectedValue(None, "brokers/<default>", "ssl.truststore.password", keyed_digest(PASSWORD, KEY)),)
    )
    for options in (AuditOptions(), AuditOptions(digest_key=KEY)):
        doc = audit(spark, str(tmp_path), expected, options)
        assert doc["divergent"] == [] and doc["missed_changes"] == [], doc["missed_changes"]
        text = json.dumps(doc)
        assert "hmac-sha256:" not in text or digest(PASSWORD, KEY) in text
        assert digest(keyed_digest(PASSWORD, KEY)) not in text  # never taken for a secret in clear
