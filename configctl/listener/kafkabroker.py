"""Is there a real Kafka broker with this listener's id? The cluster says so: ``/brokers/ids/<id>``.

Two kinds of listener, told apart by the cluster itself, never by a flag:

- a **sidecar** (``"kind": "sidecar"`` in its state node): Kafka registers a broker with the
  listener's id, so the listener runs beside a real broker and what it computes is not the truth:
  it asks the broker (:mod:`configctl.listener.observed`) at the endpoint the registration names
  (whose security protocol is ``--command-config``'s ``security.protocol``, PLAINTEXT by
  default), else at ``server.properties``'s ``listeners``. It stays a sidecar for its whole life,
  and publishes ``kafka_registered`` (kept current by a watch on the registration), so a reader
  tells a Kafka broker that stopped or crashed (``false``) from one that runs. Its fleet record
  keeps ``"kind": "sidecar"``, so a listener restarted while its Kafka broker is down is a
  sidecar all the same (its broker ``down (not registered)``), never a config manager;
- the broker's **own config manager** (``"kind": "config-manager"``): no Kafka broker has its
  id (it is embedded in a broker process, or a listener-only broker as in ``examples/``): what it
  applied is what that broker runs.

An explicit ``--bootstrap-server`` makes a sidecar too (the broker is asked there), whether or
not Kafka registers it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from configctl.configparse import load_properties_file
from configctl.errors import ConfigctlError, InvalidInput, printable
from configctl.zk.session import ZkSession
from configctl.znodes import BrokerStateZNode, FleetRecordZNode, KafkaBrokerZNode

log = logging.getLogger("configctl.listener")

SIDECAR, CONFIG_MANAGER = BrokerStateZNode.SIDECAR, BrokerStateZNode.CONFIG_MANAGER


def wanted_protocol(command_config: str | os.PathLike[str] | None) -> str:
    """The security protocol the listener's Admin API client speaks: ``--command-config``'s
    ``security.protocol``, PLAINTEXT without one."""
    if command_config is None:
        return "PLAINTEXT"
    try:
        config = dict(load_properties_file(os.fspath(command_config)))
    except (OSError, ConfigctlError):
        return "PLAINTEXT"  # the Admin API client reports the unreadable file itself when it connects
    return str(config.get("security.protocol") or "PLAINTEXT").strip().upper()


def static_endpoint(static: Mapping[str, str], protocol: str) -> str | None:
    """``server.properties``'s ``listeners`` entry speaking ``protocol`` (host empty or a wildcard:
    this machine), None when none does."""
    names = {
        name.strip(): proto.strip().upper()
        for name, _, proto in (
            item.partition(":") for item in str(static.get("listener.security.protocol.map") or "").split(",")
        )
        if name.strip()
    }
    for item in str(static.get("listeners") or "").split(","):
        name, sep, address = item.strip().partition("://")
        if not sep or names.get(name, name.upper()) != protocol:
            continue
        host, _, port = address.rpartition(":")
        if port.isdigit():
            return f"{host if host not in ('', '0.0.0.0', '::', '[::]') else '127.0.0.1'}:{port}"
    return None


class KafkaRegistration:
    """Broker ``broker_id``'s registration by Kafka, followed by a watch; ``on_change`` is called
    (from kazoo's thread) when it appears, goes or moves."""

    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        static: Mapping[str, str],
        command_config: str | os.PathLike[str] | None,
        on_change: Callable[[], None],
    ) -> None:
        self._session = session
        self._broker_id = broker_id
        self.path = KafkaBrokerZNode.path(broker_id)
        self._static = dict(static)
        self._protocol = wanted_protocol(command_config)
        self._on_change = on_change
        self._lock = threading.Lock()
        self.registered = False
        self.ever_registered = False
        self.endpoint: str | None = None  # from the registration
        self._watching = False

    def read_now(self) -> bool:
        """Read the registration once (at start, before the initial load); True when this listener
        is a sidecar: Kafka registers the broker, or the broker's fleet record says its listener
        was one (a Kafka broker down while its listener restarted: ``kafka_registered`` false)."""
        node = self._session.get(self.path)
        self._update(None if node is None else node[0])
        if not self.registered and self._recorded_as_sidecar():
            with self._lock:
                self.ever_registered = True
            log.info("%s", printable(f"{self.path} is absent, but this broker's listener was its sidecar"))
        return self.ever_registered

    def _recorded_as_sidecar(self) -> bool:
        node = self._session.get(FleetRecordZNode.path(self._broker_id))
        if node is None:
            return False
        try:
            return FleetRecordZNode.decode(node[0]).get("kind") == SIDECAR
        except InvalidInput:
            return False

    def watch(self) -> None:
        """Follow the registration from now on (a stopped or crashed broker's node goes)."""
        if self._watching:
            return
        self._watching = True
        self._session.watch_data(self.path, self._on_data)

    def bootstrap(self) -> str | None:
        """Where to ask the broker: its registered endpoint, else ``server.properties``'s listener."""
        with self._lock:
            return self.endpoint or static_endpoint(self._static, self._protocol)

    def published(self) -> bool | None:
        """The state node's ``kafka_registered``: None when Kafka never registered this broker
        while the listener ran, else whether it does now."""
        with self._lock:
            return self.registered if self.ever_registered else None

    def _on_data(self, data: bytes | None, stat: Any) -> bool:
        """kazoo's watch thread: only take the news; publishing (ZooKeeper writes) runs on a thread
        of its own, so it never holds up the listener's other watches. What is published is read
        when it is written, so two quick changes still end with the newest."""
        if self._update(data):
            threading.Thread(target=self._changed, name="configctl-kafka-registration", daemon=True).start()
        return self._watching

    def _changed(self) -> None:
        try:
            self._on_change()
        except Exception:  # the watch must outlive a failed publication: the next one says it
            log.warning("publishing the Kafka registration's change failed", exc_info=True)

    def _update(self, data: bytes | None) -> bool:
        """Take the registration's bytes (None: absent); True when what is known changed."""
        endpoint = None
        if data is not None:
            try:
                endpoints = KafkaBrokerZNode.endpoints(data)
            except InvalidInput as exc:
                log.warning("%s", printable(f"{self.path}: {exc}"))
                endpoints = []
            endpoint = next((address for proto, address in endpoints if proto == self._protocol), None)
        with self._lock:
            before = (self.registered, self.endpoint)
            self.registered = data is not None
            self.ever_registered |= self.registered
            if endpoint is not None or data is None:
                self.endpoint = endpoint if data is not None else self.endpoint
            changed = before != (self.registered, self.endpoint)
        if changed:
            log.info(
                "%s",
                printable(
                    f"Kafka registers this broker ({self.path}, asked at {self.bootstrap()})"
                    if self.registered
                    else f"Kafka no longer registers this broker ({self.path} is absent)"
                ),
            )
        return changed

    def stop(self) -> None:
        self._watching = False
