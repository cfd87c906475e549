"""What a sidecar compares, as the handlers see it: the broker it asks and the model configctl computes.

A family handler says which answer of a running broker to compare with what configctl computed
(:meth:`configctl.handlers.base.FamilyHandler.disagreements`). It needs both sides only as these
two narrow protocols, so the handlers stay on the ground floor: the Admin API client
(:class:`configctl.adminapi.client.KafkaAdmin`) is an :class:`Asker`, the listener's manager
(:class:`configctl.listener.manager.DynamicConfigManager`) a :class:`Model`, and the listener's
observer (:mod:`configctl.listener.observed`) hands both in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from configctl.entities import Entity
from configctl.precedence import EffectiveValue
from configctl.reported import ReportedConfig


class Asker(Protocol):
    """What the observer asks the broker (:class:`configctl.adminapi.client.KafkaAdmin`)."""

    def describe_broker(
        self, broker_id: int, keys: Iterable[str] | None = None
    ) -> dict[str, ReportedConfig]: ...

    def describe_topic(self, topic: str, keys: Iterable[str] | None = None) -> dict[str, ReportedConfig]: ...

    def client_quotas(self, entity: Entity) -> dict[str, str]: ...

    def scram_credentials(self, user: str) -> dict[str, int]: ...

    def close(self) -> None: ...


class Model(Protocol):
    """What configctl computes (:class:`configctl.listener.manager.DynamicConfigManager`)."""

    def broker_config(self) -> Mapping[str, EffectiveValue]: ...

    def effective(self, entity: Entity) -> dict[str, EffectiveValue]: ...

    def entity_config(self, entity: Entity) -> dict[str, str]: ...
