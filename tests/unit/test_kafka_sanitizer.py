"""User principals and client ids as ZooKeeper node names, checked against Kafka 3.9's SanitizerTest.

Kafka's test (clients/src/test/java/org/apache/kafka/common/utils/SanitizerTest.java, tag 3.9.0-rc3)
has two methods; each test below says which one it follows. Its ``jmxSanitize`` half (quoting metric
tags for JMX) has no counterpart here: configctl names no metrics. The known answers were printed by
Kafka's own ``Sanitizer`` class from that tag, compiled and run on OpenJDK 17.
"""

from __future__ import annotations

import hashlib
import re

import pytest

from configctl.entities import desanitize, sanitize

pytestmark = pytest.mark.unit

# Kafka's Sanitizer.MBEAN_PATTERN: what jmxSanitize leaves unquoted (Java's \w is ASCII-only).
KAFKA_MBEAN_PATTERN = re.compile(r"[\w\-%. \t]*", re.ASCII)

PRINCIPAL = "CN=Some characters !@#$%&*()_-+=';:,/~"
# Sanitizer.sanitize(PRINCIPAL), printed by Kafka 3.9.
PRINCIPAL_SANITIZED = "CN%3DSome%20characters%20%21%40%23%24%25%26%2A%28%29_-%2B%3D%27%3B%3A%2C%2F%7E"

# SHA-256 of Sanitizer.sanitize("value" + c) + "\n" in UTF-8, for every Java char c from U+0000 to
# U+FFFF except the lone surrogates U+D800..U+DFFF, in order, as computed by Kafka 3.9 in Java.
KAFKA_JMX_VECTORS_SHA256 = "d7e87beddb07393db2d84804c764b15144578a24b86318fe2eb58f33e5e28284"
SURROGATES = range(0xD800, 0xE000)


def _jmx_vectors() -> list[str]:
    """SanitizerTest.testJmxSanitize's inputs: "value" followed by each char, surrogates left out."""
    return ["value" + chr(code) for code in range(0x10000) if code not in SURROGATES]


def test_sanitize():
    """Kafka 3.9 SanitizerTest.testSanitize: only URL-safe characters and '%' remain; the name comes back."""
    sanitized = sanitize(PRINCIPAL)
    assert re.fullmatch(r"[a-zA-Z0-9._\-]+", sanitized.replace("%", "_"))
    assert desanitize(sanitized) == PRINCIPAL
    assert sanitized == PRINCIPAL_SANITIZED


def test_jmx_sanitize_of_sanitized_values():
    """Kafka 3.9 SanitizerTest.testJmxSanitize, its ``sanitize`` half: for "value" + every char,
    the sanitized form is one jmxSanitize leaves alone (so a valid unquoted ObjectName value).

    Beyond Kafka's assertions: every output equals Kafka's (one digest over all of them) and
    ``desanitize`` gives the input back.
    """
    digest = hashlib.sha256()
    for value in _jmx_vectors():
        sanitized = sanitize(value)
        assert KAFKA_MBEAN_PATTERN.fullmatch(sanitized), (value, sanitized)
        assert desanitize(sanitized) == value, (value, sanitized)
        digest.update((sanitized + "\n").encode("utf-8"))
    assert digest.hexdigest() == KAFKA_JMX_VECTORS_SHA256


def test_jmx_sanitize_of_lone_surrogates():
    """Kafka 3.9 SanitizerTest.testJmxSanitize, the chars U+D800..U+DFFF that the test above leaves out.

    Java's URLEncoder replaces an unpaired surrogate with '?', so Kafka's Sanitizer gives "value%3F"
    (printed by Kafka 3.9 for U+D800 and U+DFFF), which passes Kafka's JMX checks. The CLI already
    refuses such names ("is not valid Unicode text") before sanitizing; the function itself does not.
    """
    for code in SURROGATES:
        sanitized = sanitize("value" + chr(code))
        assert KAFKA_MBEAN_PATTERN.fullmatch(sanitized), (hex(code), sanitized)
