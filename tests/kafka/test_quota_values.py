"""A negative quota is refused by configctl, as Kafka refuses it (issue 32 #5).

``producer_byte_rate=-1`` (and ``request_percentage=-1``, ``consumer_byte_rate=-5``,
``controller_mutation_rate=-1``) was accepted. The rule's one home is the quota keys' schemas
(``schemas/users.json``, ``schemas/clients.json``: ``minimum`` 0). What Kafka does, shown here by
real brokers through the Admin API (AlterClientQuotas, validate only):

- Kafka 3.9 in ZooKeeper mode (``ZkAdminManager.alterClientQuotas``) refuses a negative long
  quota (its whole-number check truncates toward zero, so ``-1`` "must be a LONG value") but
  takes a negative double (``request_percentage=-1``) and stores it: a bound below any rate,
  so every request of that client is throttled. configctl refuses it too.
- A KRaft controller (``ClientQuotaControlManager.validateQuotaKeyValue``, the same rule in 3.9's
  source and in the Kafka 4.4.0 node run here, ``build/kafka4``) refuses every quota not above
  0: each of the four, and 0 itself.

A quota of 0 stays accepted: a ZooKeeper-mode broker takes it (it blocks the client), and
configctl's fleets are ZooKeeper-mode; a KRaft controller refuses it itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import REPO_ROOT

from configctl.adminapi.client import KafkaAdmin
from configctl.entities import Entity, EntityType
from configctl.errors import BrokerRefused
from configctl.localkraft import KRaftCluster

pytestmark = pytest.mark.kafka

NEGATIVE = [
    ("producer_byte_rate", "-1"),
    ("request_percentage", "-1"),
    ("consumer_byte_rate", "-5"),
    ("controller_mutation_rate", "-1"),
]
LONGS = {"producer_byte_rate", "consumer_byte_rate"}


def verdict(bootstrap: str, entity: Entity, key: str, value: str) -> str | None:
    """The broker's answer to setting ``key=value`` on ``entity``, validated only: None when taken."""
    with KafkaAdmin(bootstrap) as admin:
        try:
            admin.alter_client_quotas(entity, {key: value}, validate_only=True)
        except BrokerRefused as refused:
            return str(refused)
    return None


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftCluster]:
    """One combined KRaft node (broker and controller): the controller that judges quotas."""
    home = REPO_ROOT / "build" / "kafka4"
    if not (home / "libs").is_dir():
        pytest.fail("build/kafka4 is missing: run make kafka")
    with KRaftCluster(home, tmp_path_factory.mktemp("kraft-quotas"), combined=True) as cluster:
        yield cluster


@pytest.mark.parametrize(("key", "value"), NEGATIVE, ids=[k for k, _ in NEGATIVE])
@pytest.mark.parametrize(
    "selector", [("--client", "app-neg"), ("--user", "alice-neg")], ids=["client", "user"]
)
def test_configctl_refuses_a_negative_quota_and_writes_nothing(kafka_one, key, value, selector):
    result = kafka_one.cli("alter", *selector, "--add-config", f"{key}={value}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == "" and result.stderr.splitlines() == [
        f"error: invalid config: {key}: {value}{'.0' if key not in LONGS else ''} is less than the minimum 0"
    ]
    with kafka_one.store() as store:
        assert store.read(Entity.from_path(f"{selector[0][2:]}s/{selector[1]}")).version == -1


def test_configctl_takes_a_quota_of_zero_as_a_zookeeper_mode_broker_does(kafka_one):
    result = kafka_one.cli(
        "alter", "--client", "app-zero", "--add-config", "producer_byte_rate=0", "--dry-run"
    )
    assert result.returncode == 0, result.stderr
    assert (
        verdict(kafka_one.bootstrap, Entity(EntityType.CLIENTS, "app-zero"), "producer_byte_rate", "0")
        is None
    )


@pytest.mark.parametrize(("key", "value"), NEGATIVE, ids=[k for k, _ in NEGATIVE])
def test_what_a_zookeeper_mode_broker_answers(kafka_one, key, value):
    answer = verdict(kafka_one.bootstrap, Entity(EntityType.CLIENTS, "app-neg"), key, value)
    if key in LONGS:
        assert answer is not None and f"Configuration {key} must be a LONG value" in answer
    else:  # ZooKeeper mode's gap: a negative double is taken (configctl refuses it, as KRaft does)
        assert answer is None


@pytest.mark.parametrize(("key", "value"), [*NEGATIVE, ("producer_byte_rate", "0")])
def test_a_kraft_controller_refuses_every_quota_not_above_zero(kraft, key, value):
    answer = verdict(kraft.bootstrap, Entity(EntityType.CLIENTS, "app-neg"), key, value)
    assert answer is not None and f"Quota {key} must be greater than 0" in answer
