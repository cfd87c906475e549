"""fleet.truth and fleet.outcome: what a broker's figures rest on, and a wait never calling "applied"
what no broker confirmed (the Kafka behaviour itself is shown by tests/kafka/test_broker_truth.py)."""

from __future__ import annotations

from typing import Any

import pytest

from configctl import fleet
from configctl.entities import Entity
from configctl.errors import BrokersRefused, WaitTimedOut
from configctl.handlers.base import REJECTED, Problem

pytestmark = pytest.mark.unit

WRITTEN = [fleet.Written(Entity.from_path("topics/orders"), 5)]


def state(**fields: Any) -> dict[str, Any]:
    return {"last_applied_change": 5, "problems": [], **fields}


def test_a_listener_that_did_not_ask_a_registered_kafka_broker_is_computed_never_applied():
    old_listener = state(observed=False)  # no "kind": a listener from before sidecars were automatic
    assert fleet.truth(old_listener, registered=True) == fleet.COMPUTED
    found = fleet.outcome(3, old_listener, WRITTEN, kafka={3})
    assert (found.status, found.kafka_registered) == (fleet.COMPUTED, True)
    with pytest.raises(WaitTimedOut, match="Kafka broker\\(s\\) 3 were not asked"):
        fleet.raise_for_wait(fleet.WaitResult(5, [found]), 5)


def test_the_brokers_own_config_manager_applied_what_it_applied():
    manager = state(kind="config-manager", observed=False, kafka_registered=None)
    assert fleet.truth(manager, registered=False) == fleet.CONFIG_MANAGER
    assert fleet.outcome(4, manager, WRITTEN, kafka={1, 2}).status == fleet.APPLIED


def test_a_sidecar_whose_broker_kafka_no_longer_registers_is_down_not_registered():
    gone = state(kind="sidecar", observed=True, observed_change=5, kafka_registered=False)
    assert fleet.truth(gone, registered=False) == fleet.NOT_REGISTERED
    found = fleet.outcome(2, gone, WRITTEN, kafka={2})  # its own watch is fresher than the read
    assert (found.status, found.label, found.kafka_registered) == (fleet.DOWN, "down (not registered)", False)
    with pytest.raises(WaitTimedOut, match=r"2 \(down \(not registered\)\)"):
        fleet.raise_for_wait(fleet.WaitResult(5, [found]), 5)


def test_a_plugins_veto_is_worded_as_the_plugins_and_a_brokers_refusal_as_the_brokers():
    veto = Problem(REJECTED, "topics/orders", 5, "too small", plugin="retention-guard")
    assert veto.refusal(1, beside_kafka=True) == (
        "configctl's plugin retention-guard rejected it on broker 1 (the broker runs it): too small"
    )
    assert "(the broker keeps its previous value)" in veto.refusal(1, beside_kafka=False)
    sidecar = state(kind="sidecar", observed=True, observed_change=5, kafka_registered=True,
                    problems=[veto.to_json()])  # fmt: skip
    found = fleet.outcome(1, sidecar, WRITTEN, kafka={1})
    with pytest.raises(BrokersRefused) as raised:
        fleet.raise_for_wait(fleet.WaitResult(5, [found]), 5)
    assert "configctl's plugin retention-guard rejected it on broker 1 (the broker runs it)" in str(
        raised.value
    )
    assert "broker 1 refused it" not in str(raised.value)
