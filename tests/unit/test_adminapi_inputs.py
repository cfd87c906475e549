"""What the Admin API cannot carry is refused before anything is sent (issue 36).

A value over the protocol's 32,767-byte string limit went out corrupt and came back as "no Kafka
broker answered"; ``--bootstrap-server 127.0.0.1:99999`` was accepted (and, with no broker
running, the write silently went to ZooKeeper). Both are one line, exit 1, before any socket.
"""

from __future__ import annotations

import pytest

from configctl.adminapi.client import MAX_PROTOCOL_STRING, refuse_unsendable
from configctl.adminapi.connection import bootstrap_servers, client_options
from configctl.adminapi.store import BrokersThroughAdmin
from configctl.errors import InvalidInput

pytestmark = pytest.mark.unit


def test_the_longest_string_the_protocol_carries_is_sent():
    refuse_unsendable({"k": "x" * MAX_PROTOCOL_STRING}, ["d"], "change broker 1's config")


@pytest.mark.parametrize(
    ("set_keys", "delete_keys", "named"),
    [
        ({"ssl.key.password": "x" * (MAX_PROTOCOL_STRING + 1)}, [], "the value of 'ssl.key.password'"),
        ({"k": "é" * (MAX_PROTOCOL_STRING // 2 + 1)}, [], "the value of 'k'"),  # bytes, not characters
        ({"k" * (MAX_PROTOCOL_STRING + 1): "1"}, [], "the key 'kkkk"),
        ({}, ["k" * (MAX_PROTOCOL_STRING + 1)], "the key 'kkkk"),
    ],
)
def test_a_longer_key_or_value_is_refused_in_one_line_without_echoing_it(set_keys, delete_keys, named):
    with pytest.raises(InvalidInput) as caught:
        refuse_unsendable(set_keys, delete_keys, "change broker 1's config")
    message = str(caught.value)
    assert (
        message.startswith(f"cannot change broker 1's config: {named}") and "nothing was written" in message
    )
    assert len(message) < 300 and caught.value.exit_code == 1


@pytest.mark.parametrize(
    ("given", "servers"),
    [
        ("127.0.0.1:9092", ["127.0.0.1:9092"]),
        (" a:1, b:2 ", ["a:1", "b:2"]),
        ("[::1]:9093", ["[::1]:9093"]),
    ],
)
def test_a_bootstrap_server_list(given, servers):
    assert bootstrap_servers(given) == servers
    assert client_options(given, None, 5.0)["bootstrap_servers"] == servers


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("127.0.0.1:99999", "port '99999' is not a number from 1 to 65535"),
        ("127.0.0.1:0", "port '0' is not a number from 1 to 65535"),
        ("h:x", "port 'x' is not a number"),
        ("127.0.0.1", "must be HOST:PORT"),
        ("::1", "must be HOST:PORT"),
        ("h:1/chroot", "must be HOST:PORT"),
        ("h:1,,h:2", "an empty server entry"),
        ("", "must be HOST:PORT"),
    ],
)
def test_a_bad_bootstrap_server_is_one_line_before_any_socket(given, why):
    for check in (bootstrap_servers, lambda text: BrokersThroughAdmin(None, text)):  # type: ignore[arg-type]
        with pytest.raises(InvalidInput) as caught:
            check(given)
        assert str(caught.value).startswith("--bootstrap-server") and why in str(caught.value)
        assert "\n" not in str(caught.value)
