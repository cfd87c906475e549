"""``configctl snapshot``: what every broker of a running cluster reports, as snapshot lines.

No sidecar needed: each broker is asked through the Admin API (a :class:`Reporter`, which
:class:`configctl.adminapi.client.KafkaAdmin` is; the command hands it in) for its
own configs (every key, with the source it reports), every topic's overrides, and every quota and
IP entity, and its answer is written as snapshot lines (:mod:`configctl.snapshot`, docs/reference/snapshots.md), one file per
broker, so ``configctl audit`` reports drift on a fleet that runs no configctl listener.

What the broker cannot tell is written as such, never guessed: Kafka never sends a secret's
value (the line's value is null), keeps no record of which change notification it processed (the
change number is 0), and reports SCRAM credentials only by mechanism (they are left out).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from configctl import snapshot
from configctl.entities import Entity
from configctl.errors import EnvironmentProblem
from configctl.files import write_atomically
from configctl.reported import ReportedConfig
from configctl.sources import DYNAMIC_TOPIC_CONFIG


class Reporter(Protocol):
    """What the snapshot asks of the cluster: its brokers and topics, and what each broker reports."""

    def broker_ids(self) -> list[int]: ...

    def topic_names(self) -> list[str]: ...

    def describe_broker(self, broker_id: int) -> dict[str, ReportedConfig]: ...

    def describe_topics(
        self, topics: list[str], *, node_id: int | None = None
    ) -> dict[str, dict[str, ReportedConfig]]: ...

    def all_client_quotas(self, *, node_id: int | None = None) -> dict[Entity, dict[str, str]]: ...


UNKNOWN_CHANGE = 0
"""The change number of a line read from a broker: Kafka does not say which change it processed."""


@dataclass(frozen=True)
class BrokerSnapshot:
    broker_id: int
    path: Path
    lines: int

    def to_json(self) -> dict[str, Any]:
        return {"broker_id": self.broker_id, "file": str(self.path), "lines": self.lines}


@dataclass(frozen=True)
class FleetSnapshot:
    """What ``configctl snapshot`` wrote: one file per broker that answered."""

    out: Path
    captured_at_ms: int
    brokers: tuple[BrokerSnapshot, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "captured_at_ms": self.captured_at_ms,
            "brokers": [broker.to_json() for broker in self.brokers],
            "lines": sum(broker.lines for broker in self.brokers),
        }


def broker_lines(admin: Reporter, broker_id: int, topics: list[str], captured_at_ms: int) -> list[str]:
    """Broker ``broker_id``'s answer as snapshot lines: its own keys, topic overrides, quotas."""
    head = snapshot.head(broker_id, UNKNOWN_CHANGE)
    tail = snapshot.tail(captured_at_ms)
    lines = [
        head + snapshot.body(f"brokers/{broker_id}", name, entry.value, entry.source) + tail
        for name, entry in sorted(admin.describe_broker(broker_id).items())
    ]
    for topic, configs in sorted(admin.describe_topics(topics, node_id=broker_id).items()):
        for name, entry in sorted(configs.items()):
            if entry.source == DYNAMIC_TOPIC_CONFIG:
                lines.append(head + snapshot.body(f"topics/{topic}", name, entry.value, entry.source) + tail)
    for entity, config in sorted(admin.all_client_quotas(node_id=broker_id).items()):
        for name, value in sorted(config.items()):
            lines.append(head + snapshot.body(entity.path, name, value, entity.path) + tail)
    return lines


def capture(admin: Reporter, out: Path, now_ms: int | None = None) -> FleetSnapshot:
    """Ask every live broker and write ``out/broker-<id>.jsonl`` for each (atomically replaced)."""
    captured_at_ms = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {out}: {exc.strerror}") from None
    topics = admin.topic_names()
    written = []
    for broker_id in admin.broker_ids():
        lines = broker_lines(admin, broker_id, topics, captured_at_ms)
        path = out / snapshot.file_name(broker_id)
        write_atomically(path, lines, private=True)
        written.append(BrokerSnapshot(broker_id, path, len(lines)))
    return FleetSnapshot(out, captured_at_ms, tuple(written))
