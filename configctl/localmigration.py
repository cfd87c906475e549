"""Kafka's own ZooKeeper-to-KRaft migration (KIP-866), run on this machine's local nodes.

A ZooKeeper-mode cluster of :mod:`configctl.localkafka` (Kafka 3.9, the last line that can
migrate) is taken across the way Kafka 3.9's operations guide ("ZooKeeper to KRaft Migration")
says, each step one method, so a test or the demo can stop between any two of them:

1. :meth:`KRaftMigration.start_controllers`: a KRaft controller quorum of the same 3.9 jars,
   formatted with the ZooKeeper cluster's own id (``meta.properties``), with
   ``zookeeper.metadata.migration.enable`` and the ZooKeeper it is to take over;
2. :meth:`KRaftMigration.brokers_into_migration`: every broker restarted, one at a time, with
   the same flag, ``inter.broker.protocol.version`` and the controller quorum; once the last one
   registers, the controller copies ZooKeeper's metadata into its log (:meth:`wait_migrated`
   waits for the line it logs) and writes every change back into ZooKeeper from then on
   (dual-write);
3. :meth:`KRaftMigration.brokers_to_kraft`: every broker restarted as a KRaft broker
   (``process.roles=broker``, ``node.id`` its old ``broker.id``, no ZooKeeper);
4. :meth:`KRaftMigration.finalize`: the controllers restarted without the flag and without
   ZooKeeper; from then on nothing writes to ZooKeeper.

The quorum is static (``controller.quorum.voters``): Kafka 3.9 migrates a static quorum only
(KIP-853's dynamic quorums came without migration support). Nothing here decides what Kafka does:
this only writes the documented properties, restarts the processes and waits for Kafka's own
log lines.
"""

from __future__ import annotations

import time
from pathlib import Path

from configctl.configparse import load_properties_file
from configctl.errors import EnvironmentProblem
from configctl.localkafka import (
    JVM_OPTIONS,
    KAFKA_MAIN,
    START_TIMEOUT,
    KafkaBroker,
    KafkaCluster,
    _log4j,
    start_nodes,
)
from configctl.localzk.ports import HOST, pick_free_ports

STORAGE_TOOL = "kafka.tools.StorageTool"
KRAFT_STARTED_LINE = "Kafka Server started (kafka.server.KafkaRaftServer)"
MIGRATED_LINE = "Completed migration of metadata from ZooKeeper to KRaft"
"""What the active controller logs once ZooKeeper's metadata is committed in its log (3.9's exact
words: the guide spells ``Zookeeper``, the code ``ZooKeeper``)."""
FIRST_CONTROLLER_ID = 3000
"""KRaft node ids share one space with the brokers' ids; the guide's own example starts here."""
CONTROLLER_LISTENER = "CONTROLLER"
MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
ZOOKEEPER_KEYS = ("zookeeper.", "broker.id", "inter.broker.protocol.version", MIGRATION_FLAG)
"""A ZooKeeper broker's keys a KRaft broker must not keep (``zookeeper.*`` covers the client's TLS)."""


def read_properties(path: Path) -> dict[str, str]:
    """A node's ``server.properties``, read as Kafka reads one (:mod:`configctl.configparse`)."""
    return load_properties_file(path)


def write_properties(path: Path, values: dict[str, str]) -> None:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8")


class KRaftMigration:
    """The migration of one running :class:`~configctl.localkafka.KafkaCluster` to KRaft.

    ``controllers`` KRaft controllers (ids from 3000) are created beside the cluster's brokers, in
    ``cluster.work_dir``. The brokers keep their directories, ports and ids throughout.
    """

    def __init__(self, cluster: KafkaCluster, controllers: int = 1) -> None:
        self.cluster = cluster
        ids = [FIRST_CONTROLLER_ID + i for i in range(controllers)]
        ports = pick_free_ports(len(ids))
        self.quorum = {node_id: f"{HOST}:{port}" for node_id, port in zip(ids, ports, strict=True)}
        """Each controller's ``host:port`` (``--bootstrap-controller`` takes them)."""
        self.voters = ",".join(f"{node_id}@{address}" for node_id, address in self.quorum.items())
        self.controllers: dict[int, KafkaBroker] = {node_id: self._controller(node_id) for node_id in ids}
        self.phase = "zookeeper"
        """The last step taken: zookeeper, controllers, migrating, kraft-brokers, finalized."""

    @property
    def cluster_id(self) -> str:
        """The id the ZooKeeper cluster gave itself, from a broker's ``meta.properties``."""
        for broker in self.cluster.brokers.values():
            meta = broker.dir / "data" / "meta.properties"
            if meta.exists():
                return read_properties(meta)["cluster.id"]
        raise EnvironmentProblem("no broker of the cluster has a meta.properties: start it first")

    def _quorum_properties(self) -> dict[str, str]:
        return {
            "controller.quorum.voters": self.voters,
            "controller.listener.names": CONTROLLER_LISTENER,
        }

    def _controller(self, node_id: int) -> KafkaBroker:
        node_dir = self.cluster.work_dir / f"controller-{node_id}"
        (node_dir / "data").mkdir(parents=True, exist_ok=True)
        broker = next(iter(self.cluster.brokers.values()))
        zookeeper = {
            k: v for k, v in read_properties(broker.properties_file).items() if k.startswith("zookeeper.")
        }
        values = {
            "process.roles": "controller",
            "node.id": str(node_id),
            "listeners": f"{CONTROLLER_LISTENER}://{self.quorum[node_id]}",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node_dir / "data"),
            **self._quorum_properties(),
            **zookeeper,
            MIGRATION_FLAG: "true",
        }
        write_properties(node_dir / "server.properties", values)
        (node_dir / "log4j.properties").write_text(_log4j(node_dir / "server.log"), encoding="utf-8")
        command = [
            self.cluster.java,
            *JVM_OPTIONS,
            "-Xmx256m",
            *self.cluster.jvm_options,
            f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}",
            "-cp",
            f"{self.cluster.libs}/*",
            KAFKA_MAIN,
            str(node_dir / "server.properties"),
        ]
        port = int(self.quorum[node_id].rpartition(":")[2])
        return KafkaBroker(node_id, port, node_dir, command, None, KRAFT_STARTED_LINE, "KRaft controller")

    # -- 1. the controller quorum, in migration mode -------------------------------------------

    def start_controllers(self, timeout: float = START_TIMEOUT) -> None:
        """Format each controller with the cluster's id and start the quorum in migration mode."""
        cluster_id = self.cluster_id
        for node in self.controllers.values():
            if (node.dir / "data" / "meta.properties").exists():
                continue
            args = [
                "format",
                "--config",
                str(node.properties_file),
                f"--cluster-id={cluster_id}",
            ]  # an id may start with "-"
            done = self.cluster.tool(STORAGE_TOOL, *args)
            if done.returncode != 0:
                output = (done.stdout + done.stderr).splitlines()
                last = next((line for line in reversed(output) if line.strip()), "")
                raise EnvironmentProblem(
                    f"kafka-storage format of controller {node.broker_id} failed: {' '.join(last.split())[:300]}"
                )
        start_nodes(list(self.controllers.values()), timeout)
        self.phase = "controllers"

    # -- 2. the brokers, into migration mode ---------------------------------------------------

    def brokers_into_migration(self, timeout: float = START_TIMEOUT) -> None:
        """Restart each ZooKeeper broker, one at a time, with the migration flag and the quorum."""
        for broker in self.cluster.brokers.values():
            values = read_properties(broker.properties_file)
            values.update(
                {
                    "inter.broker.protocol.version": "3.9",
                    MIGRATION_FLAG: "true",
                    "listener.security.protocol.map": self._protocol_map(values),
                    **self._quorum_properties(),
                }
            )
            self._restart(broker, values, timeout)
        self.phase = "migrating"

    def wait_migrated(self, timeout: float = 120.0) -> int:
        """Until a controller logged that the metadata is copied; returns that controller's id."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node_id, node in self.controllers.items():
                if node.logged(MIGRATED_LINE):
                    return node_id
            time.sleep(0.2)
        errors = "".join(node.last_error() for node in self.controllers.values())
        raise EnvironmentProblem(f"the KRaft controllers did not migrate the metadata in time{errors}")

    # -- 3. the brokers, as KRaft brokers ------------------------------------------------------

    def brokers_to_kraft(self, timeout: float = START_TIMEOUT) -> None:
        """Restart each broker, one at a time, as a KRaft broker with the same id and directories."""
        for broker_id, broker in self.cluster.brokers.items():
            values = {
                k: v
                for k, v in read_properties(broker.properties_file).items()
                if not k.startswith(ZOOKEEPER_KEYS)
            }
            values = {"process.roles": "broker", "node.id": str(broker_id), **values}
            broker.started_line = KRAFT_STARTED_LINE
            self._restart(broker, values, timeout)
        self.phase = "kraft-brokers"

    # -- 4. finalize ---------------------------------------------------------------------------

    def finalize(self, timeout: float = START_TIMEOUT) -> None:
        """Restart each controller without the migration flag and without ZooKeeper."""
        for node in self.controllers.values():
            values = {
                k: v
                for k, v in read_properties(node.properties_file).items()
                if not k.startswith("zookeeper.")
            }
            self._restart(node, values, timeout)
        self.phase = "finalized"

    # -- shared --------------------------------------------------------------------------------

    @staticmethod
    def _protocol_map(values: dict[str, str]) -> str:
        current = values.get("listener.security.protocol.map")
        if current is None:
            names = {listener.partition("://")[0] for listener in values["listeners"].split(",")}
            current = ",".join(f"{name}:{name}" for name in sorted(names))
        if f"{CONTROLLER_LISTENER}:" in current:
            return current
        return f"{current},{CONTROLLER_LISTENER}:PLAINTEXT"

    @staticmethod
    def _restart(node: KafkaBroker, values: dict[str, str], timeout: float) -> None:
        node.stop()
        write_properties(node.properties_file, values)
        start_nodes([node], timeout)

    def stop(self) -> None:
        """Brokers first, while the controllers they report to still run."""
        self.cluster.stop()
        for node in self.controllers.values():
            node.stop()
