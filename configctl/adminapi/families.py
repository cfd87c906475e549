"""Which family goes through the brokers, and the Admin API requests that make one entity's change.

Kafka 3.9 takes every dynamic config through its brokers while they run (``kafka-configs.sh
--bootstrap-server``): topic and broker configs by IncrementalAlterConfigs, quotas by
AlterClientQuotas, SCRAM credentials by AlterUserScramCredentials. Its ``--zookeeper`` path is
left for what a broker cannot judge: a stopped broker's own config, the defaults of a cluster
with no live broker, and SCRAM credentials (to bootstrap a cluster's users). This module says
which path a change takes and what requests it becomes; :mod:`configctl.adminapi.store` sends
them and records the write.

A SCRAM credential goes through a broker only from the operator's ``[iterations=N,]password=...``
(salted here, :mod:`configctl.adminapi.scram`): one in its stored form (``salt=...``, from a
desired-state file or a change prepared for ZooKeeper) holds no salted password to send, so it
goes to ZooKeeper as Kafka's own tool allows, and a clear one that goes to ZooKeeper is salted
into its stored form first: a password is never written anywhere.

Kafka 4's groups and client-metrics subscriptions (KRaft clusters only) are config resources of
their own, changed by IncrementalAlterConfigs as topics are; a ZooKeeper-mode cluster has neither,
so a change to one is refused here before anything is sent or written
(:func:`configctl.entities.refuse_kraft_only`).

A broker's loggers (``broker-loggers/<id>``, both lines) are a config resource of that broker
alone, in its memory: they always go through that broker (nothing else holds them, ZooKeeper
least of all), and the loggers named must be ones the broker reports, as Kafka's ConfigCommand
checks ("Invalid broker logger(s)"); the root logger's level may be set, never deleted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from configctl import catalogue, secrets
from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.scram import ScramUpsertion, upsertion
from configctl.entities import EntityType, refuse_in_broker_memory, refuse_kraft_only
from configctl.errors import InvalidInput
from configctl.handlers import brokerlogger
from configctl.store import Change, Stored


def goes_through(change: Change, running: set[int]) -> bool:
    """Whether ``change`` is written through the brokers: any family while a broker runs, except
    a broker config of a broker that is not running, and a user change whose only changes are
    SCRAM credentials in their stored form (which only ZooKeeper can take)."""
    entity = change.entity
    refuse_kraft_only(entity.type)
    if entity.type.in_broker_memory:  # that broker or nothing (the client refuses a stopped one)
        return True
    if not running:
        return False
    if entity.type is EntityType.BROKERS:
        return entity.is_default or int(entity.name) in running
    if entity.type is EntityType.USERS:
        stored_form = _stored_scram(change)
        others = [k for k in _changed(change) if k not in stored_form]
        if stored_form and others:
            raise InvalidInput(
                f"{change.entity.display}: {', '.join(sorted(stored_form))} is a stored SCRAM credential, which "
                "only ZooKeeper takes, and cannot be written with the other changes through the brokers: "
                "write it on its own; nothing was written"
            )
        return not stored_form
    return True


def for_zookeeper(change: Change) -> Change:
    """``change`` as ZooKeeper may take it: a SCRAM password in clear salted into its stored form
    (:func:`configctl.secrets.scram_config_value`, the one home), a broker password refused."""
    refuse_in_broker_memory(change.entity.type, "ZooKeeper has no place for them")
    _refuse_plain_passwords(change)
    clear = {
        k: v for k, v in change.config.items() if secrets.is_scram_mechanism(k) and secrets.scram_in_clear(v)
    }
    if not clear:
        return change
    config = dict(change.config)
    config.update({k: secrets.scram_config_value(k, v) for k, v in clear.items()})
    return dataclasses.replace(change, config=config)


@dataclass
class Requests:
    """The Admin API requests that make an entity what its change asks (keys as sent, never a password)."""

    set_keys: dict[str, str] = field(default_factory=dict)
    delete_keys: list[str] = field(default_factory=list)
    scram_set: dict[str, str] = field(default_factory=dict, repr=False)
    scram_delete: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many requests (each a write of the node, with its own notification) they are."""
        return int(bool(self.set_keys or self.delete_keys)) + int(bool(self.scram_set or self.scram_delete))


def requests_of(change: Change, current: Stored) -> Requests:
    """What to send to make ``current`` (the entity as it is now) ``change.config``.

    A broker password already encrypted for ZooKeeper is refused: a broker takes it in clear.
    """
    entity = change.entity
    if entity.type.in_broker_memory:
        return _logger_requests(change, current)
    set_keys = {k: v for k, v in change.config.items() if current.config.get(k) != v}
    delete_keys = [k for k in current.config if k not in change.config]
    if entity.type is EntityType.BROKERS:
        encoded = [
            k
            for k, v in set_keys.items()
            if catalogue.is_sensitive(EntityType.BROKERS, k) and secrets.is_encoded_password(v)
        ]
        if encoded:
            raise InvalidInput(
                f"{entity.display}: {', '.join(sorted(encoded))} is encrypted for ZooKeeper, but a broker "
                "takes a password in clear and encrypts it itself: set it with configctl alter; nothing was written"
            )
    scram_set = {k: v for k, v in set_keys.items() if secrets.is_scram_mechanism(k)}
    stored_form = [k for k, v in scram_set.items() if not secrets.scram_in_clear(v)]
    if stored_form:  # changed since goes_through() judged the change: the version check catches it
        raise InvalidInput(
            f"{entity.display}: {', '.join(sorted(stored_form))} is a stored SCRAM credential, which a broker "
            "cannot take; nothing was written"
        )
    return Requests(
        {k: v for k, v in set_keys.items() if k not in scram_set},
        [k for k in delete_keys if not secrets.is_scram_mechanism(k)],
        scram_set,
        [k for k in delete_keys if secrets.is_scram_mechanism(k)],
    )


def send(
    admin: KafkaAdmin, change: Change, requests: Requests, via: int | None, *, validate_only: bool = False
) -> None:
    """Send ``requests`` for ``change`` (``via``: the broker a broker default goes through).

    ``validate_only`` asks the brokers to judge each config and quota, writing nothing.
    AlterUserScramCredentials has no validate-only form: a SCRAM change is then only checked
    here (its mechanism, iterations and password rules, by salting it), never sent.
    """
    entity = change.entity
    # salted first: a credential that cannot be salted refuses the whole change, nothing sent
    upsertions = _salted(requests.scram_set) if requests.scram_set else []
    if requests.set_keys or requests.delete_keys:
        keys, gone = requests.set_keys, requests.delete_keys
        if entity.type is EntityType.BROKERS:
            broker = None if entity.is_default else int(entity.name)
            admin.alter_broker(broker, keys, gone, validate_only=validate_only, via=via)
        elif entity.type is EntityType.TOPICS:
            admin.alter_topic(entity.name, keys, gone, validate_only=validate_only)
        elif entity.type.kraft_only or entity.type.in_broker_memory:
            admin.alter_resource(entity, keys, gone, validate_only=validate_only)
        else:
            admin.alter_client_quotas(entity, keys, gone, validate_only=validate_only)
    if (requests.scram_set or requests.scram_delete) and not validate_only:
        admin.alter_scram_credentials(entity.name, upsertions, requests.scram_delete)


def _logger_requests(change: Change, current: Stored) -> Requests:
    """The levels to set and the loggers to unset on a broker (``current``: every logger it reports).

    Only what the operator changed is sent (``change.previous`` to ``change.config``): the broker
    reports every logger it has, and one it made since it was read is not the operator's to
    unset. A logger the broker does not report is refused here, as Kafka's ConfigCommand refuses
    it, before anything is sent; so is unsetting the root logger's level (Kafka refuses it).
    """
    entity, previous = change.entity, change.previous
    set_keys = {k: v for k, v in change.config.items() if previous.get(k) != v and current.config.get(k) != v}
    delete_keys = [k for k in previous if k not in change.config and k in current.config]
    unknown = sorted(
        k for k in [*set_keys, *(k for k in previous if k not in change.config)] if k not in current.config
    )
    if unknown:
        raise InvalidInput(
            f"{entity.display}: invalid broker logger(s) {', '.join(unknown)}: the broker has no such logger "
            f"(its loggers: configctl describe --broker-logger {entity.name}); nothing was written"
        )
    root = brokerlogger.root_logger()
    if root in delete_keys:
        raise InvalidInput(
            f"{entity.display}: the {root} logger's level cannot be deleted (Kafka refuses it), only set; "
            "nothing was written"
        )
    return Requests(set_keys, delete_keys)


def _salted(clear: Mapping[str, str]) -> list[ScramUpsertion]:
    return [upsertion(mechanism, spec) for mechanism, spec in clear.items()]


def _changed(change: Change) -> list[str]:
    previous = change.previous
    changed = [k for k, v in change.config.items() if previous.get(k) != v]
    return changed + [k for k in previous if k not in change.config]


def _stored_scram(change: Change) -> list[str]:
    """The SCRAM keys ``change`` sets to a new credential in its stored form."""
    return [
        k
        for k in _changed(change)
        if secrets.is_scram_mechanism(k)
        and k in change.config
        and not secrets.scram_in_clear(change.config[k])
    ]


def _refuse_plain_passwords(change: Change) -> None:
    """A stopped broker's password config cannot go through the broker (which encrypts it with its
    own secret), and this store leaves passwords in clear for the brokers to encrypt: refuse."""
    if change.entity.type is not EntityType.BROKERS:
        return
    sensitive = [k for k in change.config if catalogue.is_sensitive(EntityType.BROKERS, k)]
    changed = [k for k in sensitive if change.previous.get(k) != change.config[k]]
    if changed:
        raise InvalidInput(
            f"{change.entity.display}: {', '.join(changed)} cannot be written through a broker that is not "
            "running; write it without --bootstrap-server, with --password-encoder-secret; nothing was written"
        )
