"""The store with a second path: running brokers' configs go through the brokers themselves.

Kafka refuses a ZooKeeper write of a running broker's config (``kafka-configs.sh --zookeeper``)
because the broker must validate it, and may veto it in its own reconfiguration step (a thread
count more than doubled, a keystore that does not load). With ``--bootstrap-server``, configctl
composes its store with these writes (:func:`configctl.cli.context.new_store`, the one place the
choice is made): ``brokers/<id>`` of a running broker, and ``brokers/<default>``
while any broker runs, are written with IncrementalAlterConfigs, after configctl's own
validation; everything else (and every read) goes to ZooKeeper as before. The broker writes the
config node and its change notification itself; this store then records the write in configctl's
history (who, when, why) and reports the change number the broker's notification got, so
``--wait``, ``status``, canaries and waves work as they do on the ZooKeeper path.

What differs, and is said so by :attr:`capabilities`: a broker write cannot share a transaction
with other nodes (``extra_nodes``): a rollout's record goes first, in its own ZooKeeper write, and
the broker writes follow it one by one. The version check is made just before the request (the
Admin API has no compare-and-set): a write racing another between the read and the request is not
detected; the history record shows both.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Sequence
from pathlib import Path

from configctl import catalogue, secrets
from configctl.adminapi.client import KafkaAdmin
from configctl.entities import EntityType
from configctl.errors import InvalidInput
from configctl.store import Capabilities, Change, Committed, ConfigStore, NodeOp, Stored, VersionConflict

NOTIFICATION_WAIT = 10.0
"""How long to wait for the broker's change notification to appear after a write it accepted."""


class BrokersThroughAdmin:
    """The writes role (:class:`configctl.store.ConfigWrites`) with running brokers' configs sent
    through the Admin API.

    Everything else goes to ``inner``, the ZooKeeper store: other writes, the reads this path
    needs (what runs, the version just before the request, the broker's notification) and the
    history record of each broker write. The choice point composes it with ``inner``
    (:class:`configctl.store.Store`), which keeps every other role.
    """

    def __init__(self, inner: ConfigStore, bootstrap: str, command_config: Path | None = None) -> None:
        self.inner = inner
        self.bootstrap = bootstrap
        self.command_config = command_config
        self._admin: KafkaAdmin | None = None

    @property
    def admin(self) -> KafkaAdmin:
        """The Admin API client, connected on first use (a read-only command never connects)."""
        if self._admin is None:
            self._admin = KafkaAdmin(self.bootstrap, self.command_config, timeout=self.inner.timeout)
        return self._admin

    @property
    def kind(self) -> str:
        """The whole store's name as the operator knows it."""
        return f"{self.inner.kind} + Kafka Admin API ({self.bootstrap})"

    @property
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(self.inner.capabilities, extra_nodes=False, brokers_validate=True)

    def close(self) -> None:
        """Close the Admin API client (``inner`` is closed by whoever composed the store)."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- writes ---------------------------------------------------------------------------------

    def commit(
        self, changes: Sequence[Change], *, reason: str = "", extra: Sequence[NodeOp] = ()
    ) -> list[Committed]:
        """ZooKeeper's part in one multi (with ``extra``), then each running broker's config through it."""
        through, direct, via = self._split(changes)
        committed = self.inner.commit(direct, reason=reason, extra=extra) if direct or extra else []
        for change in through:
            committed.append(self._through_broker(change, reason, via))
        return committed

    def commit_batches(
        self, changes: Sequence[Change], *, reason: str = "", in_flight: int = 2
    ) -> Generator[list[Committed], None, None]:
        through, direct, via = self._split(changes)
        if direct:
            yield from self.inner.commit_batches(direct, reason=reason, in_flight=in_flight)
        for change in through:
            yield [self._through_broker(change, reason, via)]

    def landed(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change]]:
        return self.inner.landed(changes)

    def validate(self, changes: Sequence[Change]) -> None:
        """Ask each broker that would take one of ``changes`` to validate it, applying nothing."""
        through, _, via = self._split(changes)
        for change in through:
            _, set_keys, delete_keys = self._request(change)
            self._send(change, set_keys, delete_keys, via, validate_only=True)

    def _split(self, changes: Sequence[Change]) -> tuple[list[Change], list[Change], int | None]:
        """(through the brokers, through ZooKeeper, the broker a default goes through): a running
        broker's own config, or the default while any broker runs, goes through them."""
        if not any(c.entity.type is EntityType.BROKERS for c in changes):
            return [], list(changes), None
        running = self.inner.running_brokers() or set()
        through, direct = [], []
        for change in changes:
            entity = change.entity
            if (
                entity.type is EntityType.BROKERS
                and running
                and (entity.is_default or int(entity.name) in running)
            ):
                through.append(change)
            else:
                direct.append(change)
                _refuse_plain_passwords(change)
        return through, direct, min(running) if running else None

    def _request(self, change: Change) -> tuple[Stored, dict[str, str], list[str]]:
        """The entity as it is now, and the keys to set and delete to make it ``change.config``.

        A password already encrypted for ZooKeeper is refused: a broker takes it in clear.
        """
        entity = change.entity
        current = self.inner.read(entity, strict=False)
        set_keys = {k: v for k, v in change.config.items() if current.config.get(k) != v}
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
        return current, set_keys, [k for k in current.config if k not in change.config]

    def _send(
        self,
        change: Change,
        set_keys: dict[str, str],
        delete_keys: list[str],
        via: int | None,
        *,
        validate_only: bool = False,
    ) -> None:
        entity = change.entity
        self.admin.alter_broker(
            None if entity.is_default else int(entity.name),
            set_keys,
            delete_keys,
            validate_only=validate_only,
            via=via,
        )

    def _through_broker(self, change: Change, reason: str, via: int | None) -> Committed:
        entity = change.entity
        current, set_keys, delete_keys = self._request(change)
        if current.version != change.expected_version:
            raise VersionConflict(f"{entity.path} moved from version {change.expected_version}")
        before = self.inner.latest_change_number()
        self._send(change, set_keys, delete_keys, via)
        after = self.inner.read(entity, strict=False)
        recorded = Change(entity, after.config, current.version, previous=current.config)
        self.inner.record_history(recorded, after.version, reason=reason)
        return Committed(entity, after.version, self._notification_of(entity.path, before))

    def _notification_of(self, entity_path: str, before: int | None) -> int | None:
        """The number of the change notification the broker wrote for ``entity_path`` after ``before``."""
        deadline = time.monotonic() + NOTIFICATION_WAIT
        while True:
            newer = [n for n in self.inner.notifications() if before is None or n.number > before]
            for notification in newer:  # one at a time: a gone or unreadable one is left out
                if self.inner.notified_paths([notification]) == [entity_path]:
                    return notification.number
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


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
