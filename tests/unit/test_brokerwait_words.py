"""The words of a wait that asks each broker (configctl.rollout.brokerwait), without a broker.

What a broker reports is compared with what the cluster holds key by key; a broker that still
reports something else when the wait ends is a ``mismatch`` (exit 9), one that never answered
stays ``unreachable`` (exit 10). The brokers themselves are asked in tests/kraft/test_kraft_fleet.py.
"""

from __future__ import annotations

import pytest

from configctl import fleet
from configctl.errors import BrokersRefused, WaitTimedOut
from configctl.handlers.base import MISMATCH, UNREACHABLE
from configctl.rollout.brokerwait import OTHERWISE, _final, differences

pytestmark = pytest.mark.unit


def test_differences_name_each_key_a_broker_reports_otherwise() -> None:
    assert differences({"retention.ms": "60000"}, {"retention.ms": "60000"}) == []
    assert differences({"retention.ms": "60000"}, {}) == ["retention.ms=unset (expected '60000')"]
    assert differences({}, {"segment.ms": "1"}) == ["segment.ms='1' (expected unset)"]


def test_at_the_timeout_an_answer_otherwise_is_a_mismatch_and_silence_stays_unreachable() -> None:
    otherwise = fleet.BrokerOutcome(2, fleet.PENDING, f"{OTHERWISE}topics/t retention.ms=unset", True)
    final = _final(otherwise)
    assert final.status == MISMATCH and final.refusal and "broker 2" in final.refusal
    silent = fleet.BrokerOutcome(3, UNREACHABLE, "did not answer: no broker", True)
    assert _final(silent) == silent
    asked = fleet.BrokerOutcome(4, fleet.PENDING, "asked for topics/t: unknown topic", True)
    assert _final(asked) == asked


def test_the_exit_status_of_a_wait_without_change_numbers_names_none() -> None:
    refused = fleet.WaitResult(
        None, [_final(fleet.BrokerOutcome(2, fleet.PENDING, f"{OTHERWISE}brokers/2 x=1", True))]
    )
    with pytest.raises(BrokersRefused) as caught:
        fleet.raise_for_wait(refused, 5.0)
    assert "change" not in str(caught.value).split(",")[0]
    waiting = fleet.WaitResult(None, [fleet.BrokerOutcome(3, UNREACHABLE, "did not answer", True)])
    with pytest.raises(WaitTimedOut) as caught_wait:
        fleet.raise_for_wait(waiting, 5.0)
    assert "(change None)" not in str(caught_wait.value)
    assert "broker(s) 3 (unreachable) had not applied it after 5s" in str(caught_wait.value)
