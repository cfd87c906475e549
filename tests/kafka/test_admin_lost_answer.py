"""An Admin API write whose answer is lost is "outcome unknown" (exit 8), never "nothing written".

Issue 36: a broker config written through IncrementalAlterConfigs whose answer never came back
ended in exit 3, "no Kafka broker answered", although the broker had written it; no history was
recorded, so ``blame`` called the value Kafka's default. Here a small TCP proxy on 127.0.0.1
stands between configctl and a real Kafka 3.9 broker: it forwards every byte, names itself in
the broker's metadata (so the client's connection to the broker comes back through it), and
drops either the answers to IncrementalAlterConfigs (API key 44) or the requests themselves.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from conftest import broker_configs_restored, describe_stored
from helpers import free_port

from configctl.adminapi.client import MAX_PROTOCOL_STRING

pytestmark = pytest.mark.kafka

INCREMENTAL_ALTER_CONFIGS = 44
ALTER_CLIENT_QUOTAS = 49
HOST = b"127.0.0.1"
ANSWER_WAIT = "4"  # --zk-timeout: also how long the Admin API client waits for an answer


class DroppingProxy:
    """``127.0.0.1:<port>`` in front of one broker: every frame is forwarded, except, for API
    ``api_key``, the broker's answers (``drop="answers"``) or the client's requests
    (``drop="requests"``). Bounded: it serves until closed, each socket with a timeout."""

    def __init__(self, broker_port: int, api_key: int, drop: str) -> None:
        self.broker_port, self.api_key, self.drop = broker_port, api_key, drop
        self.dropped = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.closed = threading.Event()
        self.sockets: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.closed.set()
        for sock in [self.server, *self.sockets]:
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self.threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            broker = socket.create_connection(("127.0.0.1", self.broker_port), timeout=10)
            for sock in (client, broker):
                sock.settimeout(0.2)
                self.sockets.append(sock)
            asked: dict[int, int] = {}  # correlation id -> api key, per connection
            for pump in (self._requests, self._answers):
                thread = threading.Thread(target=pump, args=(client, broker, asked), daemon=True)
                self.threads.append(thread)
                thread.start()

    def _requests(self, client: socket.socket, broker: socket.socket, asked: dict[int, int]) -> None:
        for frame in self._frames(client):
            api_key, _version, correlation = struct.unpack(">hhi", frame[4:12])
            asked[correlation] = api_key
            if api_key == self.api_key and self.drop == "requests":
                self.dropped += 1
                continue
            broker.sendall(frame)

    def _answers(self, client: socket.socket, broker: socket.socket, asked: dict[int, int]) -> None:
        ours, theirs = struct.pack(">i", self.port), struct.pack(">i", self.broker_port)
        for frame in self._frames(broker):
            (correlation,) = struct.unpack(">i", frame[4:8])
            if asked.pop(correlation, None) == self.api_key and self.drop == "answers":
                self.dropped += 1
                continue
            client.sendall(frame.replace(HOST + theirs, HOST + ours))  # the broker is here now

    def _frames(self, source: socket.socket) -> Iterator[bytes]:
        """Whole frames (a 4-byte size, then that many bytes) read from ``source`` until closed."""
        buffer = b""
        while not self.closed.is_set():
            try:
                chunk = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack(">i", buffer[:4])[0]:
                size = 4 + struct.unpack(">i", buffer[:4])[0]
                yield buffer[:size]
                buffer = buffer[size:]


@contextlib.contextmanager
def proxy(fleet, drop: str, api_key: int = INCREMENTAL_ALTER_CONFIGS) -> Iterator[DroppingProxy]:
    running = DroppingProxy(fleet.cluster.brokers[1].port, api_key, drop)
    try:
        yield running
    finally:
        running.close()


def two_cleaner_threads(fleet, bootstrap: str, *extra: str):
    """``alter --broker 1 --add-config log.cleaner.threads=2`` through ``bootstrap``."""
    return fleet.cli(
        "--bootstrap-server", bootstrap, "--zk-timeout", ANSWER_WAIT,
        "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2", *extra,
    )  # fmt: skip


def history(fleet, *selector: str) -> list[dict]:
    result = fleet.cli("history", *selector, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_write_whose_answer_is_lost_is_exit_8_and_recorded_since_it_landed(kafka_one):
    with broker_configs_restored(kafka_one), proxy(kafka_one, "answers") as lost:
        records = len(history(kafka_one, "--broker", "1"))
        result = two_cleaner_threads(kafka_one, lost.bootstrap, "--reason", "OPS-36")
        assert lost.dropped == 1, result.stderr
        assert result.returncode == 8, result.stdout + result.stderr
        assert len(result.stderr.splitlines()) == 1 and "never answered" in result.stderr
        assert "committed 1 of 1 entities (brokers/1)" in result.stderr and "history" in result.stderr
        assert describe_stored(kafka_one, "--broker", "1")["log.cleaner.threads"] == "2"  # it landed
        recorded = history(kafka_one, "--broker", "1")
        assert len(recorded) == records + 1
        assert (recorded[0]["reason"], recorded[0]["config"]["log.cleaner.threads"]) == ("OPS-36", "2")
        blame = kafka_one.cli("blame", "--broker", "1", "--key", "log.cleaner.threads", "-o", "json")
        assert blame.returncode == 0 and "OPS-36" in blame.stdout, blame.stdout + blame.stderr


def test_a_write_sent_and_not_found_after_is_unknown_not_unwritten(kafka_one):
    with broker_configs_restored(kafka_one), proxy(kafka_one, "requests") as swallowed:
        before = describe_stored(kafka_one, "--broker", "1")
        records = len(history(kafka_one, "--broker", "1"))
        result = two_cleaner_threads(kafka_one, swallowed.bootstrap)
        assert swallowed.dropped == 1, result.stderr
        assert result.returncode == 8, result.stdout + result.stderr
        assert "unknown 1" in result.stderr and "may still write it" in result.stderr
        assert describe_stored(kafka_one, "--broker", "1") == before
        assert len(history(kafka_one, "--broker", "1")) == records


def test_a_broker_that_cannot_be_reached_is_exit_3_and_nothing_written(kafka_one):
    before = describe_stored(kafka_one, "--broker", "1")
    result = two_cleaner_threads(kafka_one, f"127.0.0.1:{free_port()}")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "no Kafka broker" in result.stderr and len(result.stderr.splitlines()) == 1
    assert describe_stored(kafka_one, "--broker", "1") == before


def test_a_value_the_protocol_cannot_carry_is_refused_before_it_is_sent(kafka_one):
    key = "listener.name.plaintext.ssl.key.password"
    with broker_configs_restored(kafka_one):
        before = describe_stored(kafka_one, "--broker", "1")
        value = "x" * (MAX_PROTOCOL_STRING + 1)
        result = kafka_one.cli(
            "--bootstrap-server",
            kafka_one.bootstrap,
            "alter",
            "--broker",
            "1",
            "--add-config",
            f"{key}={value}",
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert len(result.stderr.splitlines()) == 1 and value not in result.stderr
        assert f"{MAX_PROTOCOL_STRING + 1} bytes" in result.stderr and "nothing was written" in result.stderr
        assert describe_stored(kafka_one, "--broker", "1") == before


@pytest.mark.parametrize(
    ("api_key", "selector", "pair", "key"),
    [
        (INCREMENTAL_ALTER_CONFIGS, ("--topic", "T"), "retention.ms=86400000", "retention.ms"),
        (ALTER_CLIENT_QUOTAS, ("--user", "U"), "consumer_byte_rate=2048", "consumer_byte_rate"),
    ],
    ids=["topic", "quota"],
)
def test_a_topic_or_quota_write_whose_answer_is_lost_is_exit_8_and_recorded(
    kafka_one, unique, api_key, selector, pair, key
):
    """Every family keeps the lost-answer account: the broker wrote it, configctl finds it
    (a quota compared as a number: the broker stores ``2048.0``) and records its history."""
    name = unique("lost")
    selector = tuple(name if part in ("T", "U") else part for part in selector)
    if selector[0] == "--topic":
        kafka_one.create_topics(name)
    with proxy(kafka_one, "answers", api_key) as lost:
        result = kafka_one.cli(
            "--bootstrap-server", lost.bootstrap, "--zk-timeout", ANSWER_WAIT,
            "alter", *selector, "--add-config", pair, "--reason", "LOST-32",
        )  # fmt: skip
        assert lost.dropped == 1, result.stderr
    assert result.returncode == 8, result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1 and "never answered" in result.stderr
    assert float(describe_stored(kafka_one, *selector)[key]) == float(pair.partition("=")[2])  # it landed
    recorded = history(kafka_one, *selector)
    assert recorded[0]["reason"] == "LOST-32"
