"""``configctl status -o json``: the fleet, or one broker with the newest change number beside it.

The console's ``/api/status`` is this same document (the whole fleet).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configctl import fleet


@dataclass(frozen=True)
class StatusDocument:
    """The fleet's status as read once; ``broker_id`` narrows the document to that broker."""

    status: fleet.FleetStatus
    broker_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        if self.broker_id is None:
            return self.status.to_json()
        found = self.status.broker(self.broker_id)
        document = {"latest_change_number": self.status.latest_change_number}
        document.update(found.to_json() if found else {})
        return document
