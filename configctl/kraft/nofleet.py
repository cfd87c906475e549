"""What a KRaft cluster has no place for, answered once for every KRaft store: notifications and fleet state.

No configctl listener runs beside a KRaft broker and no write gets a change notification, so
both the brokers' store (:class:`configctl.kraft.store.KRaftStore`) and the controllers'
(:class:`configctl.kraft.controllerstore.ControllerStore`) answer these roles' reads with
nothing; each refuses retiring and watching in its own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from configctl.store import Notification

if TYPE_CHECKING:
    from configctl import applied


class NoFleetState:
    """The :class:`~configctl.store.roles.Notifications` and :class:`~configctl.store.roles.FleetState`
    reads of a store that keeps neither."""

    def notifications(self) -> list[Notification]:
        return []

    def notification_times(self) -> list[tuple[int, str, int]]:
        return []

    def notified_changes(self) -> list[applied.Record]:
        return []

    def latest_change_number(self) -> int | None:
        return None

    def notified_paths(self, notifications: Sequence[Notification]) -> list[str]:
        return []

    def broker_state(self, broker_id: int | str) -> dict[str, Any] | None:
        return None

    def broker_states(self) -> dict[int, dict[str, Any]]:
        return {}

    def fleet_records(self) -> dict[int, dict[str, Any]]:
        return {}


__all__ = ["NoFleetState"]
