"""The sidecar's observer without a broker: what it compares, when a difference becomes a
mismatch, when it clears, superseding, giving up, and an unreachable broker."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from configctl.entities import Entity
from configctl.errors import BrokerRefused, KafkaUnavailable, PermissionDenied
from configctl.handlers.base import Problem
from configctl.listener import observed
from configctl.listener.observed import GIVE_UP_S, MISMATCH, SETTLE_S, UNREACHABLE, Observer, compare
from configctl.precedence import EffectiveValue
from configctl.reported import ReportedConfig

pytestmark = pytest.mark.unit


def ours(name: str, value: str | None) -> EffectiveValue:
    return EffectiveValue(name, value, "DYNAMIC_BROKER_CONFIG", (), False)


class Model:
    def __init__(self) -> None:
        self.broker: dict[str, str] = {"log.cleaner.threads": "9", "num.io.threads": "8"}
        self.topics: dict[str, dict[str, str]] = {"orders": {"retention.ms": "1000"}}
        self.stored: dict[str, dict[str, str]] = {}

    def broker_config(self) -> dict[str, EffectiveValue]:
        return {k: ours(k, v) for k, v in self.broker.items()}

    def effective(self, entity: Entity) -> dict[str, EffectiveValue]:
        return {k: ours(k, v) for k, v in self.topics.get(entity.name, {}).items()}

    def entity_config(self, entity: Entity) -> dict[str, str]:
        return dict(self.stored.get(entity.path, {}))


class Broker:
    """What a real broker answers; ``down`` makes every question fail as an absent broker does."""

    def __init__(self) -> None:
        self.broker: dict[str, str] = {"log.cleaner.threads": "1", "num.io.threads": "8"}
        self.topics: dict[str, dict[str, str]] = {"orders": {"retention.ms": "1000"}}
        self.quotas: dict[str, dict[str, str]] = {}
        self.scram: dict[str, dict[str, int]] = {}
        self.down = False
        self.denied = False  # refuses to describe itself (no permission), answers the rest
        self.asked: list[tuple[str, Any]] = []

    def _up(self) -> None:
        if self.down:
            raise KafkaUnavailable("no Kafka broker at 127.0.0.1:1 answered")

    def describe_broker(self, broker_id: int, keys: Any = None) -> dict[str, ReportedConfig]:
        self._up()
        if self.denied:
            raise PermissionDenied("Kafka refused to describe the configs of broker 1: not authorized")
        self.asked.append(("broker", tuple(keys or ())))
        return {k: ReportedConfig(k, v, "DEFAULT_CONFIG") for k, v in self.broker.items() if k in keys}

    def describe_topic(self, topic: str, keys: Any = None) -> dict[str, ReportedConfig]:
        self._up()
        if topic not in self.topics:
            raise BrokerRefused(f"the broker refused to describe topic {topic}: unknown topic")
        values = self.topics[topic]
        return {k: ReportedConfig(k, v, "DYNAMIC_TOPIC_CONFIG") for k, v in values.items() if k in keys}

    def client_quotas(self, entity: Entity) -> dict[str, str]:
        self._up()
        return dict(self.quotas.get(entity.path, {}))

    def scram_credentials(self, user: str) -> dict[str, int]:
        self._up()
        return dict(self.scram.get(user, {}))

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def setup() -> tuple[Observer, Model, Broker, Clock, list[int]]:
    model, broker, clock = Model(), Broker(), Clock()
    connects: list[int] = []

    def connect() -> Broker:
        broker._up()
        connects.append(1)
        return broker

    observer = Observer(1, model, connect, clock=clock, wall_ms=lambda: 42)
    return observer, model, broker, clock, connects


def run_until(observer: Observer, clock: Clock, seconds: float) -> None:
    """Drive the observer's rounds as its thread would, up to ``seconds`` from now."""
    end = clock.now + seconds
    while True:
        due = observer.next_due()
        if due is None or due > end:
            clock.now = end
            return
        clock.now = max(clock.now, due)
        observer.step()


def kinds(observer: Observer) -> list[tuple[str, str | None, str | None, str | None, str | None]]:
    return [(p.kind, p.entity_path, p.key, p.expected, p.reported) for p in observer.problems()]


# -- compare ------------------------------------------------------------------------------------


def test_compare_asks_only_the_keys_the_change_touched():
    model, broker = Model(), Broker()
    found = compare(Entity.from_path("brokers/1"), frozenset({"log.cleaner.threads"}), 1, model, broker)
    assert [(m.key, m.expected, m.reported) for m in found] == [("log.cleaner.threads", "9", "1")]
    assert broker.asked == [("broker", ("log.cleaner.threads",))]
    assert (
        compare(Entity.from_path("brokers/<default>"), frozenset({"num.io.threads"}), 1, model, broker) == []
    )


def test_compare_without_keys_only_probes_the_broker():
    model, broker = Model(), Broker()
    assert compare(Entity.from_path("brokers/1"), frozenset(), 1, model, broker) == []
    assert broker.asked == [("broker", ("broker.id",))]


def test_compare_quotas_and_scram_of_a_user():
    model, broker = Model(), Broker()
    model.stored["users/alice"] = {
        "producer_byte_rate": "1e3",
        "SCRAM-SHA-256": "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=8192",
    }
    broker.quotas["users/alice"] = {"producer_byte_rate": "1000"}
    broker.scram["alice"] = {"SCRAM-SHA-256": 4096}
    found = compare(Entity.from_path("users/alice"), frozenset(), 1, model, broker)
    assert [(m.key, m.expected, m.reported) for m in found] == [
        ("SCRAM-SHA-256", "iterations=8192", "iterations=4096")
    ]
    assert compare(Entity.from_path("clients/app"), frozenset(), 1, model, broker) == []


# -- the observer -------------------------------------------------------------------------------


def test_agreement_leaves_no_problem_and_marks_the_broker_observed(setup):
    observer, _, _, clock, _ = setup
    observer.observe([("topics/orders", 7, ["retention.ms"])], 7)
    assert observer.observed_change() == 6  # asked, not answered yet: not observed
    run_until(observer, clock, 1)
    assert observer.problems() == []
    assert observer.pending() == []
    assert observer.state() == {"observed": True, "observed_at_ms": 42, "observing": 0, "observed_change": 7}


def test_the_observed_change_waits_for_every_answer_and_passes_a_listed_mismatch(setup):
    observer, _, _, clock, _ = setup
    assert observer.observed_change() is None  # nothing handed over yet
    observer.observe([], 5)
    assert observer.observed_change() == 5  # nothing this broker follows: nothing to ask
    observer.observe([("brokers/1", 8, ["log.cleaner.threads"])], 8)
    observer.observe([("topics/orders", 9, ["retention.ms"])], 9)
    assert observer.observed_change() == 7
    run_until(observer, clock, 1)
    assert observer.observed_change() == 7  # the broker differs and may still be applying it
    run_until(observer, clock, SETTLE_S)
    assert kinds(observer)[0][:2] == (MISMATCH, "brokers/1")
    assert observer.observed_change() == 9  # answered: the mismatch is what --wait reports


def test_an_unreachable_broker_holds_the_observed_change(setup):
    observer, _, broker, clock, _ = setup
    observer.observe([], 5)
    broker.down = True
    observer.observe([("topics/orders", 7, ["retention.ms"])], 7)
    run_until(observer, clock, 30)
    assert observer.observed_change() == 6
    broker.down = False
    run_until(observer, clock, observed.BACKOFF_MAX_S + 0.1)
    assert observer.observed_change() == 7


def test_the_layers_checked_at_start_hold_the_observed_change_until_answered(setup):
    observer, _, _, clock, _ = setup
    observer.observe_layers(4)
    assert observer.observed_change() is None
    run_until(observer, clock, 1)
    assert observer.observed_change() == 4


def test_a_difference_becomes_a_mismatch_only_once_it_outlasts_the_settling_time(setup):
    observer, _, _, clock, _ = setup
    observer.observe([("brokers/1", 8, ["log.cleaner.threads"])])
    run_until(observer, clock, SETTLE_S - 0.5)
    assert observer.problems() == []  # the broker may still be applying it
    assert observer.pending() == ["brokers/1"]
    run_until(observer, clock, 0.6)
    assert kinds(observer) == [(MISMATCH, "brokers/1", "log.cleaner.threads", "9", "1")]
    (problem,) = observer.problems()
    assert problem.change_number == 8
    assert problem.to_json() == {
        "kind": "mismatch",
        "entity_path": "brokers/1",
        "change_number": 8,
        "reason": "log.cleaner.threads: configctl computes '9', the broker reports '1'",
        "at_ms": 42,
        "key": "log.cleaner.threads",
        "expected": "9",
        "reported": "1",
    }
    assert Problem.from_json(problem.to_json()) == problem


def test_a_broker_that_comes_round_clears_the_mismatch(setup):
    observer, _, broker, clock, _ = setup
    observer.observe([("brokers/1", 8, ["log.cleaner.threads"])])
    run_until(observer, clock, SETTLE_S + 0.1)
    assert len(observer.problems()) == 1
    broker.broker["log.cleaner.threads"] = "9"
    run_until(observer, clock, observed.BACKOFF_MAX_S + 0.1)
    assert observer.problems() == []
    assert observer.pending() == []


def test_a_newer_change_supersedes_and_keeps_watching_the_old_keys(setup):
    observer, model, _, clock, _ = setup
    observer.observe([("brokers/1", 8, ["log.cleaner.threads"])])
    run_until(observer, clock, SETTLE_S + 0.1)
    observer.observe([("brokers/1", 9, ["num.io.threads"])])
    run_until(observer, clock, SETTLE_S + 0.1)
    assert kinds(observer) == [(MISMATCH, "brokers/1", "log.cleaner.threads", "9", "1")]
    assert observer.problems()[0].change_number == 9
    model.broker["log.cleaner.threads"] = "1"  # the key deleted: configctl now computes 1 too
    observer.observe([("brokers/1", 10, ["log.cleaner.threads"])])
    run_until(observer, clock, 1)
    assert observer.problems() == []


def test_rechecking_slows_down_after_the_bound_and_the_mismatch_stays_until_the_broker_agrees(setup):
    observer, _, broker, clock, _ = setup
    observer.observe([("brokers/1", 8, ["log.cleaner.threads"])], 8)
    run_until(observer, clock, GIVE_UP_S + observed.BACKOFF_MAX_S + 1)
    asked = len(broker.asked)
    run_until(observer, clock, observed.SLOW_RECHECK_S - 10)
    assert len(broker.asked) == asked  # no question meanwhile
    assert kinds(observer) == [(MISMATCH, "brokers/1", "log.cleaner.threads", "9", "1")]
    assert observer.observed_change() == 8  # a listed mismatch holds nothing back
    broker.broker["log.cleaner.threads"] = "9"  # fixed on the broker, say by a restart
    run_until(observer, clock, 20)
    assert len(broker.asked) > asked
    assert observer.problems() == [] and observer.pending() == []


def test_an_absent_broker_is_one_unreachable_problem_cleared_when_it_answers(setup):
    observer, _, broker, clock, connects = setup
    broker.down = True
    observer.observe([("topics/orders", 7, ["retention.ms"]), ("brokers/<default>", 7, ["num.io.threads"])])
    run_until(observer, clock, 30)
    assert kinds(observer) == [(UNREACHABLE, None, None, None, None)]
    assert "does not answer" in observer.problems()[0].reason
    assert observer.pending() == ["brokers/<default>", "topics/orders"]  # kept, never "applied"
    broker.down = False
    run_until(observer, clock, observed.BACKOFF_MAX_S + 0.1)
    assert observer.problems() == []
    assert observer.pending() == []
    assert connects == [1]  # a client is made once the broker answers


def test_a_broker_that_refuses_to_describe_itself_is_unreachable_never_applied(setup):
    observer, _, broker, clock, _ = setup
    broker.denied = True
    observer.observe([("topics/orders", 7, ["retention.ms"])], 7)
    run_until(observer, clock, 5)
    assert kinds(observer) == [(UNREACHABLE, None, None, None, None)]
    assert "refused to describe itself" in observer.problems()[0].reason
    assert observer.observed_change() == 6  # the topic's question was not dropped as answered


def test_a_refused_question_is_not_a_mismatch(setup):
    observer, _, _, clock, _ = setup
    observer.observe([("topics/gone", 7, ["retention.ms"])])
    run_until(observer, clock, 1)
    assert observer.problems() == []
    assert observer.pending() == []


def test_other_brokers_configs_are_not_asked(setup):
    observer, _, _, _, _ = setup
    observer.observe([("brokers/2", 7, ["log.cleaner.threads"])])
    assert observer.pending() == []


def test_the_thread_publishes_what_it_finds(setup):
    _, model, broker, _, _ = setup
    changed: list[int] = []
    observer = Observer(1, model, lambda: broker, on_change=lambda: changed.append(1))
    observer.start()
    try:
        observer.observe([("brokers/1", 8, ["log.cleaner.threads"])])
        deadline = time.monotonic() + 10
        while not observer.problems() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert kinds(observer) == [(MISMATCH, "brokers/1", "log.cleaner.threads", "9", "1")]
        assert changed
    finally:
        observer.stop()


def test_the_mismatches_kept_are_bounded_newest_first(setup, monkeypatch):
    observer, model, broker, clock, _ = setup
    monkeypatch.setattr(observed, "MAX_MISMATCHES", 2)
    for n in range(3):
        key = f"custom.key.{n}"
        model.broker[key] = "ours"
        broker.broker[key] = "theirs"
        observer.observe([("brokers/1", n, [key])])
        run_until(observer, clock, SETTLE_S + 0.1)
    assert [p.key for p in observer.problems()] == ["custom.key.1", "custom.key.2"]


def test_a_broker_that_hangs_never_holds_up_the_listener(setup):
    _, model, broker, _, _ = setup
    release = threading.Event()
    asked = threading.Event()

    def hang(broker_id: int, keys: Any = None) -> dict[str, ReportedConfig]:
        asked.set()
        release.wait(10)
        return {}

    broker.describe_broker = hang  # type: ignore[method-assign]
    observer = Observer(1, model, lambda: broker)
    observer.start()
    try:
        observer.observe([("brokers/1", 8, ["log.cleaner.threads"])])
        assert asked.wait(5)
        started = time.monotonic()
        for number in range(9, 109):  # the worker keeps handing changes over while the broker hangs
            observer.observe(
                [("brokers/1", number, ["log.cleaner.threads"]), ("topics/orders", number, ["retention.ms"])]
            )
        observer.problems()
        observer.state()
        assert time.monotonic() - started < 0.5
        started = time.monotonic()
        observer.stop()  # a question still hanging does not hold up stopping
        assert time.monotonic() - started < 2
    finally:
        release.set()
        observer.stop()
