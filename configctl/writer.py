"""The write path: turn an operator's change into a validated, conflict-safe ZooKeeper write.

``prepare_change`` does everything that does not need ZooKeeper (SCRAM credentials computed
on the client, broker passwords encrypted, keys and values validated) so bad input fails
before a connection is opened. ``alter`` then runs the read → apply → validate → commit loop:
on a version conflict it re-reads and re-applies the same change, so concurrent writers to
one entity never lose each other's keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from configctl import catalogue, guards, impact, interrupted, retrying, secrets, validation
from configctl.changes import ConfigChange, KeyDiff, apply_change, diff
from configctl.entities import Entity, refuse_kraft_only
from configctl.errors import Conflict, InvalidInput, ValidationFailed
from configctl.handlers import handler_for, validate
from configctl.store import (
    Change,
    CommitInterrupted,
    Committed,
    ConfigStore,
    Stored,
    VersionConflict,
    version_after,
)

PASSWORD_ENCODER_PREFIX = "password.encoder."
SECRET_ENV = "CONFIGCTL_PASSWORD_ENCODER_SECRET"


@dataclass(frozen=True)
class AlterResult:
    entity: Entity
    before: Stored
    after: dict[str, str]
    diff: list[KeyDiff]
    committed: Committed | None
    attempts: int

    @property
    def changed(self) -> bool:
        return bool(self.diff)


def prepare_change(
    entity: Entity,
    add: Mapping[str, str],
    delete: tuple[str, ...] | list[str] = (),
    *,
    allow_custom: bool = False,
    password_secret: str | None = None,
    replace: bool = False,
    passwords_in_clear: bool = False,
    release: str | None = None,
) -> ConfigChange:
    """Validate what can be validated alone and put secrets in their stored form.

    ``release``: the Kafka release the target cluster runs, when the caller knows it already
    (a store's ``kafka_release()``): Kafka 4's key rules then apply here. Unknown (None), Kafka
    3.9's do, so bad input still fails before a connection is opened; :func:`alter` then applies
    the cluster's own release before anything is written (a key Kafka 4 removed is refused there).

    ``password.encoder.*`` keys given with the change configure the encryption of broker
    password configs and are never stored, as in kafka-configs.sh. ``passwords_in_clear``: the
    write goes through the broker, which encrypts them with its own secret (the store's
    ``brokers_validate`` capability); they are left as given.
    """
    add = dict(add)
    encoder_settings = {k: add.pop(k) for k in list(add) if k.startswith(PASSWORD_ENCODER_PREFIX)}
    if encoder_settings and not handler_for(entity).encrypts_passwords:
        raise InvalidInput("password.encoder.* settings only apply to broker configs")
    change = ConfigChange(add=add, delete=tuple(delete), replace=replace)
    # Check plain keys before touching secrets (a misplaced password config should say so, not
    # ask for an encoder secret); SCRAM keys are checked in their stored form afterwards.
    plain = {k: v for k, v in add.items() if k not in secrets.SCRAM_MECHANISMS}
    validate.check(entity, plain, changed=list(plain), allow_custom=allow_custom, release=release)
    stored = _stored_secrets(entity, add, encoder_settings, password_secret, passwords_in_clear)
    salted = {k: v for k, v in stored.items() if not _scram_in_clear(k, v)}  # a clear one was parsed above
    validate.check(entity, salted, changed=list(salted), allow_custom=allow_custom, release=release)
    return ConfigChange(add=stored, delete=change.delete, replace=replace)


def _stored_secrets(
    entity: Entity,
    add: dict[str, str],
    encoder_settings: dict[str, str],
    password_secret: str | None,
    passwords_in_clear: bool = False,
) -> dict[str, str]:
    result = dict(add)
    handler = handler_for(entity)
    for key, value in add.items():
        if key in secrets.SCRAM_MECHANISMS:
            if secrets.scram_in_clear(value):
                password, iterations = secrets.parse_scram_spec(key, value)  # refused now if malformed
                if not passwords_in_clear:  # else the store salts it as it sends it (never stored in clear)
                    result[key] = secrets.scram_credential(key, password, iterations)
        elif handler.encrypts_passwords and handler.is_password(key) and not passwords_in_clear:
            result[key] = _encoder(encoder_settings, password_secret, key).encode(value)
    return result


def _scram_in_clear(key: str, value: str) -> bool:
    """A SCRAM key not in ZooKeeper's stored form: left as the operator gave it
    (``[iterations=N,]password=...``, checked when parsed) for the brokers to take, or as a KRaft
    cluster reports one (``iterations=N``: Kafka never hands out a credential)."""
    return key in secrets.SCRAM_MECHANISMS and secrets.scram_in_clear(value)


def _encoder(settings: dict[str, str], password_secret: str | None, key: str) -> secrets.PasswordEncoder:
    secret = settings.get("password.encoder.secret") or password_secret
    if not secret:
        raise InvalidInput(
            f"{key} is a password config: give the brokers' password.encoder.secret with "
            f"--password-encoder-secret or {SECRET_ENV} so it is stored encrypted"
        )
    options: dict[str, object] = {}
    if "password.encoder.cipher.algorithm" in settings:
        options["cipher_algorithm"] = settings["password.encoder.cipher.algorithm"]
    if "password.encoder.keyfactory.algorithm" in settings:
        options["key_factory_algorithm"] = settings["password.encoder.keyfactory.algorithm"]
    try:
        if "password.encoder.key.length" in settings:
            options["key_length"] = int(settings["password.encoder.key.length"])
        if "password.encoder.iterations" in settings:
            options["iterations"] = int(settings["password.encoder.iterations"])
    except ValueError:
        raise InvalidInput("password.encoder.key.length and .iterations must be integers") from None
    return secrets.PasswordEncoder(secret, **options)  # type: ignore[arg-type]


def alter(
    store: ConfigStore,
    entity: Entity,
    change: ConfigChange,
    *,
    if_version: int | None = None,
    dry_run: bool = False,
    allow_custom: bool = False,
    reason: str = "",
    max_attempts: int = retrying.CONFLICT_ATTEMPTS,
    allow_running_brokers: bool = False,
) -> AlterResult:
    """Apply ``change`` to the entity's current config and commit it atomically.

    Retries on a version conflict (the conflict policy of :mod:`configctl.retrying`); with
    ``if_version`` a conflict is reported instead, because the caller asked for exactly that
    version. A connection lost after the transaction was sent is resolved by re-reading: the
    result then says what landed, or :class:`~configctl.interrupted.WriteInterrupted` says it is unknown.
    """
    attempts = 0

    def attempt() -> AlterResult:
        nonlocal attempts
        attempts += 1
        # A store that wrote this entity last knows its state; start from that and let the
        # version check catch anyone who wrote since (one round trip instead of two).
        cached = store.last_written(entity) if attempts == 1 and if_version is None and not dry_run else None
        before = cached or store.read(entity, strict=False)
        if before.problem is not None and not change.replace:
            raise InvalidInput(
                f"{entity.znode} is not a Kafka config node ({before.problem}); "
                "alter --replace overwrites it with the config given; nothing written"
            )
        if if_version is not None and before.version != if_version:
            raise Conflict(
                f"{entity.display} is at version {before.version}, not {if_version} (--if-version); nothing written"
            )
        after = apply_change(before.config, change, what=entity.display)
        checked = {k: v for k, v in after.items() if not _scram_in_clear(k, v)}
        written = [k for k in change.add if k in checked]
        validate.check(
            entity,
            checked,
            changed=written,
            allow_custom=allow_custom,
            release=kafka_release(store, entity, written),
        )
        changes = diff(before.config, after)
        if changes and attempts == 1:
            check_kafka_rules(store, [entity], allow_running_brokers=allow_running_brokers)
            impact.check_write(
                store, [impact.Write(entity, before.config, after)], reason=reason, identity=store.identity
            )
        write = Change(entity, after, before.version, previous=before.config)
        if dry_run and changes:
            store.validate([write])  # a broker that would judge the write judges it now, writing nothing
        if dry_run or not changes:
            return AlterResult(entity, before, after, changes, None, attempts)
        try:
            (committed,) = store.commit([write], reason=reason)
        except VersionConflict:
            if if_version is not None:
                raise Conflict(
                    f"{entity.display} changed while writing (--if-version {if_version}); nothing written"
                ) from None
            raise retrying.RetryNow() from None
        except CommitInterrupted as exc:
            # raises unless the write is known to have landed
            interrupted.settle(store, [write], [], exc.unknown, exc.failure or exc.error)
            committed = Committed(entity, version_after(before.version), None)
        return AlterResult(entity, before, after, changes, committed, attempts)

    try:
        return retrying.conflict_retry(max_attempts)(attempt)
    except retrying.RetriesExhausted:
        raise Conflict(
            f"{entity.display} kept changing under {max_attempts} attempts; nothing written"
        ) from None


def kafka_release(store: ConfigStore, entity: Entity, names: list[str]) -> str | None:
    """The Kafka release ``store``'s cluster runs (its ``kafka_release()``), asked only when it can
    change the verdict on writing ``names`` to ``entity`` (a key Kafka 4 removed or added); None
    otherwise: Kafka 3.9's rules and Kafka 4's agree on every other key."""
    return store.kafka_release() if validation.release_matters(entity, names) else None


def check_kafka_rules(
    store: ConfigStore,
    entities: list[Entity],
    *,
    allow_running_brokers: bool = False,
    written: Mapping[Entity, Mapping[str, str]] | None = None,
) -> None:
    """Refuse what Kafka's own ZooKeeper admin path refuses (:mod:`configctl.guards`), before writing.

    Each entity's handler says what must be read to judge it: whether Kafka created it (topics),
    whether its name resolves (IPs), whether running brokers refuse it (broker configs).
    ``written``: the keys and values each write sets, judged by the release the cluster runs
    (:func:`configctl.validation.check_release_key`: on Kafka 4, a key it removed), for a caller
    whose configs were validated without it (a desired-state file is checked before any store).

    A family only Kafka 4 has (groups, client-metrics) on a cluster that does not run Kafka 4 is
    refused first, in one line (:func:`configctl.entities.refuse_kraft_only`): such a cluster has
    nowhere to keep it, and a ZooKeeper node written for it would be read by no broker.
    """
    kraft_only = [e for e in entities if e.type.kraft_only]
    if kraft_only:
        runs = store.kafka_release()
        if not catalogue.is_kafka4(runs):
            refuse_kraft_only(kraft_only[0].type, f"this cluster runs Kafka {runs}")
    release_problems: list[str] = []
    for entity, config in (written or {}).items():
        release = kafka_release(store, entity, list(config))
        for name, value in config.items():
            validation.check_release_key(entity, name, value, release, release_problems)
    topics = [e.name for e in entities if handler_for(e).created_by_kafka]
    problems = guards.refusals(
        entities,
        unresolved_ips={e.name for e in entities if handler_for(e).unresolved(e)},
        running_brokers=store.running_brokers()
        if any(handler_for(e).refused_while_brokers_run for e in entities)
        else None,
        existing_topics=store.existing_topics(topics) if topics else None,
        # A store that sends running brokers' configs through them lets the brokers judge.
        allow_running_brokers=allow_running_brokers or store.capabilities.brokers_validate,
    )
    if problems or release_problems:
        raise ValidationFailed(release_problems + problems)
