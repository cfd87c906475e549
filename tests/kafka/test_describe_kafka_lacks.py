"""``describe`` of a topic Kafka does not have fails as ``alter`` does (issue 32 #4.3).

``describe --topic ordrs`` (a typo) exited 0 with "no config node" while ``alter`` refused the
same name: the two commands now share the rule (:func:`configctl.writer.check_kafka_rules`) and
its one line, judged by what a real Kafka 3.9 broker registered in ZooKeeper.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kafka


def test_describe_of_a_topic_kafka_lacks_fails_as_alter_does(kafka_one, unique):
    topic = unique("orders")
    kafka_one.create_topics(topic)
    assert kafka_one.cli("describe", "--topic", topic).returncode == 0
    typo = topic.replace("orders", "ordrs")
    described = kafka_one.cli("describe", "--topic", typo)
    altered = kafka_one.cli("alter", "--topic", typo, "--add-config", "retention.ms=1")
    assert (described.returncode, altered.returncode) == (1, 1), described.stderr + altered.stderr
    assert described.stdout == "" and len(described.stderr.splitlines()) == 1
    assert f"topic {typo!r} does not exist in this Kafka cluster" in described.stderr
    assert described.stderr == altered.stderr
    json_described = kafka_one.cli("describe", "--topic", typo, "-o", "json")
    assert json_described.returncode == 1 and json_described.stdout == ""


def test_describe_of_every_topic_still_lists_what_is_stored(kafka_one):
    assert kafka_one.cli("describe", "--entity-type", "topics").returncode == 0
