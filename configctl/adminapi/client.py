"""Asking Kafka brokers what they run, and changing configs through them (the Admin API).

One :class:`KafkaAdmin` per command or sidecar. Each method is one Admin API request, named in
configctl's terms (an :class:`~configctl.entities.Entity`, a broker id) and answered in them
(:class:`~configctl.reported.ReportedConfig`, quota text as configctl stores it). The
Kafka client (kafka-python) is used for its connection handling and its protocol classes; the
requests are built and their per-resource errors read here, so a broker's refusal is never lost
in a result dictionary, and every exception is translated by :mod:`configctl.adminapi.errors`.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterUserScramCredentialsRequest,
    DescribeClientQuotasRequest,
    DescribeConfigsRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)

from configctl.adminapi.connection import client_options
from configctl.adminapi.errors import refusal, translate_errors
from configctl.adminapi.quotas import QUOTA_ENTITY, quota_components, quota_ops
from configctl.adminapi.scram import ScramUpsertion
from configctl.entities import Entity, EntityType
from configctl.errors import InvalidInput, shown
from configctl.kafkacodes import RESOURCE_TYPE_OF, SCRAM_TYPE_OF, SCRAM_TYPES
from configctl.reported import ReportedConfig, ReportedSynonym, quota_text

# Kafka's protocol numbers (ConfigResource.Type, ConfigSource, AlterConfigOp, quota filters).
_TOPIC, _BROKER = RESOURCE_TYPE_OF[EntityType.TOPICS], RESOURCE_TYPE_OF[EntityType.BROKERS]
_RESOURCE = {
    family: RESOURCE_TYPE_OF[family]
    for family in (EntityType.GROUPS, EntityType.CLIENT_METRICS, EntityType.BROKER_LOGGERS)
}
"""The ConfigResource type of each family with one of its own: Kafka 4's groups and client-metrics
(KRaft only), and a broker's loggers (both lines; only that broker answers for them)."""
_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",  # as Kafka's ConfigEntry.ConfigSource and kafka-configs.sh name them
    8: "DYNAMIC_GROUP_CONFIG",
}
_SET, _DELETE = 0, 1
UNKNOWN_TOPIC = 3  # UNKNOWN_TOPIC_OR_PARTITION: the cluster has no such topic
_NOT_CONTROLLER = 41  # NOT_CONTROLLER: the broker asked is no longer (or not yet) the controller
_UNASKED: Any = object()  # the controller not asked yet (None is an answer: no controller named)
_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_SPECIFIED = 0, 1, 2
MAX_PROTOCOL_STRING = 32_767
"""The longest string the Kafka protocol carries, in bytes of UTF-8 (``Short.MAX_VALUE``)."""

logging.getLogger("kafka").setLevel(logging.CRITICAL)  # its reconnect chatter is not the operator's


class KafkaAdmin:
    """An Admin API client on ``bootstrap`` (``host:port[,host:port]``), closed by :meth:`close`."""

    def __init__(self, bootstrap: str, command_config: Path | None = None, timeout: float = 30.0) -> None:
        self.bootstrap = bootstrap
        self.timeout = timeout
        options = client_options(bootstrap, command_config, timeout)
        with translate_errors("connect", bootstrap):
            self._admin = KafkaAdminClient(**options)
        self._controller: int | None = _UNASKED
        """The controller SCRAM writes go to, asked once per client (:meth:`_scram_controller`)."""

    def close(self) -> None:
        self._admin.close()

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(
        self, request: Any, node_id: int | None = None, action: str = "answer", *, writes: str | None = None
    ) -> Any:
        """``request``'s answer from broker ``node_id`` (None: any).

        ``writes`` names the entity a write request changes. Such a request is sent on a
        connection made first, so a failure is known to come before it left (nothing written:
        :class:`~configctl.errors.KafkaUnavailable`) or after (no answer, the outcome unknown:
        :class:`~configctl.errors.KafkaAnswerLost`).
        """
        manager = self._admin._manager  # the client's own connection manager (no public send)
        sent = False

        async def send() -> Any:
            nonlocal sent
            if writes is None:
                return await manager.send(request, node_id=node_id)
            target = node_id if node_id is not None else manager.least_loaded_node()
            connection = await manager.get_connection(target)  # connected: nothing sent yet
            answer = connection.send_request(request)
            sent = not answer.is_done  # handed to the socket; a refusal before that fails it at once
            return await answer

        with translate_errors(action, self.bootstrap, writes=writes, sent=lambda: sent):
            return manager.run(send)

    # -- the cluster --------------------------------------------------------------------------

    def cluster_id(self) -> str | None:
        """The cluster's id as its metadata reports it (the one ZooKeeper's ``/cluster/id`` holds)."""
        with translate_errors("describe the cluster", self.bootstrap):
            cluster = self._admin.describe_cluster()
        return cluster.get("cluster_id") or None

    def controller_id(self) -> int | None:
        """The broker the cluster's metadata names as its controller (ZooKeeper mode: the broker
        that writes SCRAM credentials; KRaft: any broker, which forwards), None if none is named."""
        with translate_errors("describe the cluster", self.bootstrap):
            cluster = self._admin.describe_cluster()
        controller = cluster.get("controller_id")
        return int(controller) if isinstance(controller, int) and controller >= 0 else None

    def broker_ids(self) -> list[int]:
        """The ids of the brokers the cluster's metadata lists now (live brokers only)."""
        with translate_errors("describe the cluster", self.bootstrap):
            cluster = self._admin.describe_cluster()
        return sorted(int(broker["broker_id"]) for broker in cluster["brokers"])

    # -- configs ------------------------------------------------------------------------------

    def describe_broker(
        self, broker_id: int, keys: Iterable[str] | None = None, *, default: bool = False
    ) -> dict[str, ReportedConfig]:
        """Every config of broker ``broker_id`` as it reports it (value, source, synonyms).

        ``default=True`` asks the same broker for the cluster-wide ``<default>`` layer instead
        (the resource named ``""``), which holds only the dynamic default keys.
        """
        name = "" if default else str(broker_id)
        return self._describe(_BROKER, name, keys, node_id=broker_id, what=f"broker {broker_id}")

    def describe_topic(self, topic: str, keys: Iterable[str] | None = None) -> dict[str, ReportedConfig]:
        """Every config of ``topic`` as the cluster reports it (the topic must exist)."""
        return self._describe(_TOPIC, topic, keys, node_id=None, what=f"topic {topic}")

    def topic_names(self) -> list[str]:
        """Every topic the cluster's metadata lists (internal topics included), sorted."""
        with translate_errors("list the topics", self.bootstrap):
            return sorted(self._admin.list_topics())

    def describe_topics(
        self, topics: Iterable[str], node_id: int | None = None, *, missing_ok: bool = False
    ) -> dict[str, dict[str, ReportedConfig]]:
        """Every config of each topic, in one request, as broker ``node_id`` (or any) reports them;
        ``missing_ok``: a topic the cluster does not have is left out instead of refused."""
        names = list(topics)
        if not names:
            return {}
        absent = {UNKNOWN_TOPIC} if missing_ok else set()
        return self._describe_many(_TOPIC, names, node_id, f"describe {len(names)} topics", absent=absent)

    def _describe(
        self, kind: int, name: str, keys: Iterable[str] | None, node_id: int | None, what: str
    ) -> dict[str, ReportedConfig]:
        return self._describe_many(kind, [name], node_id, f"describe the configs of {what}", keys)[name]

    def _describe_many(
        self,
        kind: int,
        names: list[str],
        node_id: int | None,
        what: str,
        keys: Iterable[str] | None = None,
        absent: set[int] | frozenset[int] = frozenset(),
    ) -> dict[str, dict[str, ReportedConfig]]:
        response = self._send(describe_request(kind, names, keys), node_id, what)
        return described(response, what, absent)

    def alter_broker(
        self,
        broker_id: int | None,
        set_keys: Mapping[str, str],
        delete_keys: Iterable[str] = (),
        *,
        validate_only: bool = False,
        via: int | None = None,
    ) -> None:
        """IncrementalAlterConfigs on broker ``broker_id`` (None: the cluster-wide ``<default>``).

        A per-broker change is sent to that broker, which validates and applies it (its own
        reconfiguration step decides); the default goes to ``via`` or any broker. A refusal
        raises :class:`~configctl.errors.BrokerRefused` with the broker's own reason.
        """
        name = "" if broker_id is None else str(broker_id)
        what = "change the broker defaults" if broker_id is None else f"change broker {broker_id}'s config"
        target = broker_id if broker_id is not None else via
        self._alter_configs(
            _BROKER,
            name,
            set_keys,
            delete_keys,
            what,
            f"brokers/{name or '<default>'}",
            target,
            validate_only,
        )

    def alter_topic(
        self,
        topic: str,
        set_keys: Mapping[str, str],
        delete_keys: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """IncrementalAlterConfigs on ``topic``, sent to any broker: the broker validates the
        config (and ``alter.config.policy.class.name`` judges it) and writes the topic's node."""
        what = f"change topic {topic}'s config"
        self._alter_configs(
            _TOPIC, topic, set_keys, delete_keys, what, f"topics/{topic}", None, validate_only
        )

    def _alter_configs(
        self,
        kind: int,
        name: str,
        set_keys: Mapping[str, str],
        delete_keys: Iterable[str],
        what: str,
        entity_path: str,
        target: int | None,
        validate_only: bool,
    ) -> None:
        delete_keys = list(delete_keys)
        refuse_unsendable(set_keys, delete_keys, what)
        entries = [(key, _SET, value) for key, value in set_keys.items()]
        entries += [(key, _DELETE, None) for key in delete_keys]
        request = IncrementalAlterConfigsRequest(
            resources=[(kind, name, entries)], validate_only=validate_only
        )
        response = self._send(request, target, what, writes=None if validate_only else entity_path)
        for result in response.responses:
            problem = refusal(result.error_code, result.error_message, what)
            if problem is not None:
                raise problem

    def alter_client_quotas(
        self,
        entity: Entity,
        set_keys: Mapping[str, str],
        delete_keys: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """AlterClientQuotas on ``entity`` (a user, client, user+client or IP entity, or a default),
        sent to any broker: the broker checks each key and writes the entity's node.

        The values go as doubles (:func:`~configctl.adminapi.quotas.quota_ops`); the broker stores
        a rate as Java prints the double (``2048.0``) and a count as a whole number.
        """
        what = f"change the quotas of {entity.display}"
        delete_keys = list(delete_keys)
        refuse_unsendable(set_keys, delete_keys, what)
        request = AlterClientQuotasRequest(
            entries=[(quota_components(entity), quota_ops(set_keys, delete_keys))],
            validate_only=validate_only,
        )
        response = self._send(request, None, what, writes=None if validate_only else entity.path)
        for entry in response.entries:
            problem = refusal(entry.error_code, entry.error_message, what)
            if problem is not None:
                raise problem

    def alter_scram_credentials(
        self, user: str, upsertions: Iterable[ScramUpsertion] = (), deletions: Iterable[str] = ()
    ) -> None:
        """AlterUserScramCredentials for ``user``: each upsertion (salted on this side, the
        password itself never sent) and each mechanism in ``deletions`` removed, in one request.

        Kafka's request has no validate-only form: whatever is sent is written.
        """
        what = f"change the SCRAM credentials of user {user!r}"
        request = AlterUserScramCredentialsRequest(
            deletions=[(user, SCRAM_TYPE_OF[mechanism]) for mechanism in deletions],
            upsertions=[
                (user, SCRAM_TYPE_OF[u.mechanism], u.iterations, u.salt, u.salted_password)
                for u in upsertions
            ],
        )
        # A ZooKeeper-mode cluster takes it on its controller only (any other broker answers
        # NOT_CONTROLLER); a KRaft broker forwards it to its controllers from any broker. The
        # controller is asked once per client, and again only when the one asked has moved on:
        # NOT_CONTROLLER means that broker wrote nothing, so the request is sent once more.
        writes = Entity.named(EntityType.USERS, user).path
        response = self._send(request, self._scram_controller(), what, writes=writes)
        if response.results and all(r.error_code == _NOT_CONTROLLER for r in response.results):
            response = self._send(request, self._scram_controller(fresh=True), what, writes=writes)
        for result in response.results:
            problem = refusal(result.error_code, result.error_message, what)
            if problem is not None:
                raise problem

    def _scram_controller(self, *, fresh: bool = False) -> int | None:
        """The controller (DescribeCluster), asked on first use and kept for this client's life;
        ``fresh``: asked again (the one kept answered NOT_CONTROLLER)."""
        if fresh or self._controller is _UNASKED:
            self._controller = self.controller_id()
        return self._controller

    # -- config resources of their own: Kafka 4's groups and client-metrics, a broker's loggers -----

    def describe_resource(
        self, entity: Entity, keys: Iterable[str] | None = None, *, node_id: int | None = None
    ) -> dict[str, ReportedConfig]:
        """Every config of a group or a client-metrics subscription as broker ``node_id`` (None:
        any) reports it (the keys it sets and, below them, what each falls back to). Kafka 4
        answers for any name, set or not (a group's configs may be set before the group exists).
        A broker's loggers are asked of that broker (only it knows them): every logger it has,
        at its level."""
        kind = _resource_type(entity)
        target = self._owner(entity, node_id)
        return self._describe(kind, entity.name, keys, node_id=target, what=entity.display)

    def alter_resource(
        self,
        entity: Entity,
        set_keys: Mapping[str, str],
        delete_keys: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """IncrementalAlterConfigs on a group or a client-metrics subscription, sent to any broker,
        which checks it (``GroupConfig.validate``, ``ClientMetricsConfigs.validate``) and has the
        controller write it; a broker's loggers, sent to that broker, which checks and applies it
        in its memory (``RuntimeLoggerManager``); a refusal raises
        :class:`~configctl.errors.BrokerRefused`."""
        what = f"change the config of {entity.display}"
        self._alter_configs(
            _resource_type(entity),
            entity.name,
            set_keys,
            delete_keys,
            what,
            entity.path,
            self._owner(entity, None),
            validate_only,
        )

    def logger_levels(self, entity: Entity) -> dict[str, str]:
        """Every logger broker ``entity.name`` has, at the level it reports (``broker-loggers/<id>``,
        sorted by name): what the broker runs, which is all there is (nothing stores it)."""
        reported = self.describe_resource(entity)
        return {name: "" if entry.value is None else entry.value for name, entry in sorted(reported.items())}

    def _owner(self, entity: Entity, node_id: int | None) -> int | None:
        """The broker a request about ``entity`` goes to: a broker's loggers, that broker (another
        refuses the id), which must be in the cluster's metadata now (one that is not cannot be
        asked, and nothing else holds its loggers); else ``node_id`` (None: any)."""
        if not entity.type.in_broker_memory:
            return node_id
        broker = int(entity.name)
        running = self.broker_ids()
        if broker not in running:
            listed = ", ".join(map(str, running)) or "none"
            raise InvalidInput(
                f"broker {broker} is not running (the cluster lists brokers {listed}): its loggers live "
                "in its memory only, so nothing else can be asked or told; nothing was written"
            )
        return broker

    def resource_names(self, entity_type: EntityType) -> list[str]:
        """Every group or client-metrics subscription the cluster holds a config for, sorted
        (ListConfigResources, Kafka 4.1+; a group with no config of its own is not listed)."""
        kind = _RESOURCE.get(entity_type)
        if kind is None:
            raise ValueError(f"{entity_type.value} are not listed by ListConfigResources here")
        what = f"list the {entity_type.value} with a config"
        request = ListConfigResourcesRequest(resource_types=[kind], min_version=1)
        response = self._send(request, None, what)
        problem = refusal(response.error_code, None, what)
        if problem is not None:
            raise problem
        return sorted(
            {r.resource_name for r in response.config_resources if getattr(r, "resource_type", kind) == kind}
        )

    # -- quotas and credentials -------------------------------------------------------------

    def client_quotas(self, entity: Entity) -> dict[str, str]:
        """The quota (or IP connection-rate) keys stored for exactly ``entity``, as configctl writes them.

        DescribeClientQuotas answers what is stored for an entity, not what a client would get:
        the resolution across levels is the broker's own and is not reported by the API.
        """
        components = []
        parts = [(entity.type, entity.name, entity.user_is_default)]
        if entity.client is not None:
            parts.append((EntityType.CLIENTS, entity.client, entity.client_is_default))
        ip = entity.type is EntityType.IPS and not entity.user_is_default
        for etype, name, is_default in parts:
            if is_default:
                components.append((QUOTA_ENTITY[etype], _MATCH_DEFAULT, None))
            elif ip:
                # Kafka 3.9 looks an exact IP up by its URL-encoded name (/config/ips/%3A%3A1), so
                # an IPv6 entity stored as written is found only by listing every IP entity.
                components.append((QUOTA_ENTITY[etype], _MATCH_SPECIFIED, None))
            else:
                components.append((QUOTA_ENTITY[etype], _MATCH_EXACT, name))
        request = DescribeClientQuotasRequest(components=components, strict=True)
        what = f"describe the quotas of {entity.path}"
        response = self._send(request, None, what)
        problem = refusal(response.error_code, response.error_message, what)
        if problem is not None:
            raise problem
        for entry in response.entries or ():
            if len(entry.entity) != len(components):
                continue
            if ip and not same_address(entry.entity[0].entity_name, entity.name):
                continue
            return {value.key: quota_text(value.value) for value in entry.values}
        return {}

    def all_client_quotas(self, node_id: int | None = None) -> dict[Entity, dict[str, str]]:
        """Every quota and IP entity with what is stored for it, as broker ``node_id`` (or any) reports."""
        request = DescribeClientQuotasRequest(components=[], strict=False)
        response = self._send(request, node_id, "describe every client quota")
        problem = refusal(response.error_code, response.error_message, "describe every client quota")
        if problem is not None:
            raise problem
        found: dict[Entity, dict[str, str]] = {}
        for entry in response.entries or ():
            names = {part.entity_type: part.entity_name for part in entry.entity}
            try:
                entity = quota_entity(names)
            except InvalidInput:  # a name Kafka stored that no entity can have: not ours to report
                continue
            if entity is not None:
                found[entity] = {value.key: quota_text(value.value) for value in entry.values}
        return found

    def scram_users(self) -> list[str]:
        """Every user with a SCRAM credential (DescribeUserScramCredentials of every user), sorted."""
        request = DescribeUserScramCredentialsRequest(users=None)
        what = "describe every SCRAM credential"
        response = self._send(request, None, what)
        problem = refusal(response.error_code, response.error_message, what)
        if problem is not None:
            raise problem
        return sorted(result.user for result in response.results if not result.error_code)

    def scram_credentials(self, user: str) -> dict[str, int]:
        """The SCRAM mechanisms ``user`` has, with their iteration counts (never a secret)."""
        request = DescribeUserScramCredentialsRequest(users=[(user,)])
        response = self._send(request, None, f"describe the SCRAM credentials of {user}")
        found: dict[str, int] = {}
        for result in response.results:
            if result.error_code == 91:  # RESOURCE_NOT_FOUND: no credentials
                continue
            problem = refusal(result.error_code, result.error_message, f"describe the credentials of {user}")
            if problem is not None:
                raise problem
            for info in result.credential_infos:
                found[SCRAM_TYPES.get(info.mechanism, str(info.mechanism))] = info.iterations
        return found


def refuse_unsendable(set_keys: Mapping[str, str], delete_keys: Iterable[str], what: str) -> None:
    """Refuse, before anything is sent, a key or value the Admin API cannot carry.

    Every string of the Kafka protocol is at most 32,767 bytes of UTF-8 (a 16-bit length; Kafka's
    own parser refuses more even where the length is a varint): a longer one would go out
    corrupt and come back as no answer at all. (ZooKeeper's path has no such limit.)
    """
    for key in [*set_keys, *delete_keys]:
        for text, label in (
            (key, f"the key {shown(key, 40)}"),
            (set_keys.get(key), f"the value of {shown(key, 40)}"),
        ):
            size = len(text.encode("utf-8", "surrogatepass")) if text is not None else 0
            if size > MAX_PROTOCOL_STRING:
                raise InvalidInput(
                    f"cannot {what}: {label} is {size} bytes of UTF-8, and the Admin API carries at most "
                    f"{MAX_PROTOCOL_STRING} per string; nothing was written"
                )


def describe_request(kind: int, names: Iterable[str], keys: Iterable[str] | None = None) -> Any:
    """One DescribeConfigs request for ``names`` of resource type ``kind`` (``keys``: only these),
    with synonyms: what a broker or a controller (KIP-919) is sent."""
    wanted = list(keys) if keys is not None else None
    return DescribeConfigsRequest(
        resources=[(kind, name, wanted) for name in names], include_synonyms=True, min_version=1
    )


def described(
    response: Any, what: str, absent: set[int] | frozenset[int] = frozenset()
) -> dict[str, dict[str, ReportedConfig]]:
    """Each resource's configs in a DescribeConfigs answer, by name; a resource refused with an
    error code in ``absent`` is left out, any other refusal raised in one line naming it."""
    answers: dict[str, dict[str, ReportedConfig]] = {}
    for result in response.results:
        if result.error_code in absent:
            continue
        problem = refusal(result.error_code, result.error_message, f"{what} ({result.resource_name})")
        if problem is not None:
            raise problem
        answers[result.resource_name] = reported_configs(result.configs)
    return answers


def reported_configs(entries: Iterable[Any]) -> dict[str, ReportedConfig]:
    """DescribeConfigs' entries (v1 and later) as configctl's terms. Each field is read off the
    answer's own objects: their generic ``to_dict`` copied every nested struct and was most of the
    time a describe of a thousand topics took."""
    configs: dict[str, ReportedConfig] = {}
    for entry in entries:
        configs[entry.name] = ReportedConfig(
            name=entry.name,
            value=entry.value,
            source=_SOURCES.get(getattr(entry, "config_source", 0), "UNKNOWN"),
            sensitive=bool(getattr(entry, "is_sensitive", False)),
            read_only=bool(getattr(entry, "read_only", False)),
            synonyms=tuple(
                ReportedSynonym(s.name, s.value, _SOURCES.get(s.source, "UNKNOWN"))
                for s in getattr(entry, "synonyms", None) or ()
            ),
        )
    return configs


def _resource_type(entity: Entity) -> int:
    kind = _RESOURCE.get(entity.type)
    if kind is None:
        raise ValueError(f"{entity.display} has no config resource of its own")
    return kind


def quota_entity(names: Mapping[str, str | None]) -> Entity | None:
    """The entity a DescribeClientQuotas answer names (a null name is the default entity)."""
    plain = {kind: "" if name is None else name for kind, name in names.items()}
    if "ip" in plain:
        return Entity.named(EntityType.IPS, plain["ip"])
    if "user" in plain:
        return Entity.named(EntityType.USERS, plain["user"], plain.get("client-id"))
    if "client-id" in plain:
        return Entity.named(EntityType.CLIENTS, plain["client-id"])
    return None


def same_address(reported: str | None, name: str) -> bool:
    """Whether an IP entity the broker lists is ``name`` (``::1`` and ``0:0:0:0:0:0:0:1`` are one)."""
    if reported is None:
        return False
    try:
        return ipaddress.ip_address(reported) == ipaddress.ip_address(name)
    except ValueError:
        return reported == name


__all__ = ["MAX_PROTOCOL_STRING", "KafkaAdmin", "quota_entity", "refuse_unsendable"]
