"""The comparison the closed loop rests on, against a real broker: agreement, and a broker's veto.

A running broker validates a dynamic change in its own reconfiguration step; written to ZooKeeper
directly (``--allow-running-brokers``), a change it refuses is only in its log, and it keeps the
old value. configctl's computation then says one thing and the broker another:
:mod:`configctl.agreement` must name exactly that key.
"""

from __future__ import annotations

import pytest
from conftest import broker_configs_restored
from helpers import wait_for

from configctl import agreement, effective
from configctl.entities import Entity

pytestmark = pytest.mark.kafka


def mismatches(fleet) -> list[agreement.Mismatch]:
    with fleet.store() as store, fleet.admin() as admin:
        computed = {value.name: value for value in effective.effective_config(store, 1, None).values}
        return agreement.configs("brokers/1", computed, admin.describe_broker(1))


def test_configctl_and_the_broker_agree_after_a_change_it_accepts(kafka_one):
    with broker_configs_restored(kafka_one):
        result = kafka_one.cli(
            "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2", "--allow-running-brokers"
        )
        assert result.returncode == 0, result.stderr
        wait_for(lambda: mismatches(kafka_one) == [], timeout=30, message="agreement")


def test_a_reconfiguration_the_broker_vetoes_is_a_named_mismatch(kafka_one):
    with broker_configs_restored(kafka_one):
        # one cleaner thread (server.properties) to nine: Kafka refuses more than double, and nine
        # threads need more dedupe buffer than the broker has (1 MB each)
        result = kafka_one.cli(
            "alter", "--broker", "1", "--add-config", "log.cleaner.threads=9", "--allow-running-brokers"
        )
        assert result.returncode == 0, result.stderr
        wait_for(
            lambda: (
                "Per-broker configs of 1 could not be applied"
                in kafka_one.cluster.brokers[1].log_file.read_text()
            ),
            timeout=30,
            message="the broker's veto in its log",
        )
        found = mismatches(kafka_one)
        assert [(m.key, m.expected, m.reported) for m in found] == [("log.cleaner.threads", "9", "1")]
        assert found[0].reason == "log.cleaner.threads: configctl computes '9', the broker reports '1'"


def test_quotas_and_credentials_agree_with_the_broker(kafka_one, unique):
    user = unique("agree")
    args = ("alter", "--user", user, "--add-config")
    assert (
        kafka_one.cli(
            *args,
            "request_percentage=1e1,producer_byte_rate=1000,SCRAM-SHA-512=[iterations=4096,password=pw]",
        ).returncode
        == 0
    )
    entity = Entity.of("users", user)
    with kafka_one.store() as store:
        stored = store.read(entity).config
    with kafka_one.admin() as admin:
        wait_for(lambda: admin.scram_credentials(user) != {}, timeout=30, message="the credential")
        assert agreement.quotas(entity.path, stored, admin.client_quotas(entity)) == []
        assert agreement.scram(entity.path, stored, admin.scram_credentials(user)) == []
