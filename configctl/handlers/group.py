"""Group entities: ``groups/<group>``, Kafka 4's group configs (``kafka-configs.sh --entity-type groups``).

A consumer, share or streams group may override some of the group coordinator's settings for
itself (ConfigResource GROUP, KRaft clusters only). Kafka 4.4 (``GroupConfig``) takes a group's
config whole or not at all, and a key the group does not set falls back to the brokers' own
``group.*`` key (``consumer.session.timeout.ms`` -> ``group.consumer.session.timeout.ms``), or,
for the few keys with no broker twin (``share.auto.offset.reset``), to the key's own default.
There is no ``<default>`` group: the broker keys are the cluster's defaults. A group's config
moves nothing but the group itself, and it can be set before the group exists (a real 4.4
broker takes it: tests/kraft/test_kraft_new_families.py).

Kafka 4.4's rules between keys (``GroupConfig.validate``), shown with a real broker there. Checked
here, on the keys a group sets (:meth:`GroupHandler.own_rules`), before anything is sent:

- a session timeout must exceed its heartbeat interval (consumer, share and streams groups);
- a dead-letter queue topic must not start with ``__``; rack-aware assignment tags are distinct;
  ``share.auto.offset.reset`` is ``latest``, ``earliest`` or ``by_duration:<ISO-8601 duration>``.

Left to the brokers, which judge every group write (a KRaft write goes through them, ``--dry-run``
asks them): the same session rule where one side is the brokers' fallback, and each timeout,
interval or limit within the brokers' bounds (``group.consumer.min.session.timeout.ms`` ...).
Both depend on the brokers' server.properties, which configctl cannot read on KRaft: judging them
on Kafka's defaults would refuse what a cluster with wider bounds takes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

from configctl import catalogue
from configctl.entities import Entity, EntityType
from configctl.handlers.base import Admission, BrokerView, Decrypt, FamilyHandler, Moved, Reads, changed_names
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue, Synonym
from configctl.sources import DEFAULT_CONFIG
from configctl.values import kafka_text

DYNAMIC_GROUP_CONFIG = "DYNAMIC_GROUP_CONFIG"
"""The source Kafka 4 reports for a key a group sets itself (ConfigSource 8)."""

SESSION_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)
"""(session timeout, heartbeat interval) of each kind of group: the session must be the longer."""

DLQ_TOPIC = "errors.deadletterqueue.topic.name"
AUTO_OFFSET_RESET = "share.auto.offset.reset"
_RESET_RE = re.compile(r"latest|earliest|by_duration:-?P.+")
"""Kafka 4.4's ``ShareGroupAutoOffsetResetStrategy``: latest, earliest or ``by_duration:<ISO-8601>``
(the duration itself is Java's ``Duration.parse`` to judge: a dry run asks the brokers)."""
RACK_TAGS = "streams.rack.aware.assignment.tags"


class GroupHandler(FamilyHandler):
    types = (EntityType.GROUPS,)
    family = "groups"
    independent = True

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        return admit_whole(entity, stored, change_number)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        """Each group key: the group's own value, else the brokers' ``group.*`` key, else its default
        (as a 4.4 broker's DescribeConfigs reports it: the own value first, the broker's below)."""
        own = view.configs.get(entity.path, {})
        broker = view.resolution.values
        values: dict[str, EffectiveValue] = {}
        for key in catalogue.keys(EntityType.GROUPS).values():
            below: list[Synonym] = []
            for synonym, _conversion in key.broker_synonyms:
                found = broker.get(synonym)
                value, source = (
                    (found.value, found.source) if found is not None else (key.default, DEFAULT_CONFIG)
                )
                below.append(Synonym(synonym, value, source))
            if not below:
                below.append(Synonym(key.name, key.default, DEFAULT_CONFIG))
            raw = own.get(key.name)
            if raw is not None:  # reported parsed and written back, as a 4.4 broker does (' 5 ' -> '5')
                text = kafka_text(key.kafka_type, raw) if isinstance(raw, str) else raw
                mine = Synonym(key.name, text, DYNAMIC_GROUP_CONFIG)
                values[key.name] = EffectiveValue(key.name, text, DYNAMIC_GROUP_CONFIG, (mine, *below), False)
            else:
                values[key.name] = EffectiveValue(
                    key.name, below[0].value, below[0].source, tuple(below), False
                )
        return values

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        old, new = self.effective(entity, before), self.effective(entity, after)
        changed = changed_names(old, new)
        return [Moved(entity, new, changed)] if changed & wanted else []

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads(paths=(entity.path,))

    def label(self, entity: Entity) -> str:
        return "group"

    def unknown_hint(self, name: str) -> str | None:
        """``group.consumer.session.timeout.ms`` -> ``consumer.session.timeout.ms``: the broker's
        name of a group key is what operators type first."""
        return _by_broker_synonym().get(name)

    def own_rules(self, config: Mapping[str, str]) -> list[str]:
        """The rules Kafka 4.4 checks on the keys a group sets, whatever the brokers run."""
        problems = []
        for session_key, heartbeat_key in SESSION_HEARTBEAT:
            session, heartbeat = _number(config.get(session_key)), _number(config.get(heartbeat_key))
            if session is not None and heartbeat is not None and session <= heartbeat:
                problems.append(_session_problem(session_key, session, heartbeat_key, heartbeat))
        reset = config.get(AUTO_OFFSET_RESET)
        if reset is not None and not _RESET_RE.fullmatch(reset.strip()):
            problems.append(
                f"{AUTO_OFFSET_RESET}: {reset!r} is not 'earliest', 'latest' or 'by_duration:<PnDTnHnMn.nS>'"
            )
        dlq = config.get(DLQ_TOPIC)
        if dlq is not None and dlq.strip().startswith("__"):
            problems.append(
                f"{DLQ_TOPIC}: a dead-letter queue topic must not start with '__' (Kafka's own topics)"
            )
        tags = [t.strip() for t in (config.get(RACK_TAGS) or "").split(",") if t.strip()]
        if len(tags) != len(set(tags)):
            problems.append(f"{RACK_TAGS} must not contain duplicate tag keys")
        return problems


def _session_problem(session_key: str, session: int, heartbeat_key: str, heartbeat: int) -> str:
    return f"{session_key} ({session}) must be greater than {heartbeat_key} ({heartbeat})"


def _number(raw: str | None) -> int | None:
    try:
        return int(raw.strip()) if raw is not None else None
    except ValueError:
        return None  # the per-key check reports a value that is no number


@cache
def _by_broker_synonym() -> Mapping[str, str]:
    """Each group key's broker key -> the group key."""
    result: dict[str, str] = {}
    for key in catalogue.keys(EntityType.GROUPS).values():
        for synonym, _conversion in key.broker_synonyms:
            result.setdefault(synonym, key.name)
    return result
