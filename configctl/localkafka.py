"""Real Apache Kafka 3.9 brokers on this machine, in ZooKeeper mode, for tests and the demo.

The brokers are Kafka's own jars (``make kafka`` puts them in ``build/kafka/libs/``), run as
``java -cp 'libs/*' kafka.Kafka server.properties`` on configctl's ZooKeeper: PLAINTEXT on
127.0.0.1, small heaps, one partition and replication factor 1 for internal topics, so three
of them start in seconds on a two-core machine. A secured ZooKeeper (``zk start --tls --sasl``)
is reached as Kafka reaches one: ``zookeeper.ssl.*`` with the PEM CA, and a JAAS ``Client``
section for DIGEST-MD5, with ``zookeeper.set.acl`` so the nodes Kafka writes get the ACLs
configctl's own writes get.

Nothing here decides what Kafka does: this only starts, finds and stops the processes. The
pieces that do not depend on ZooKeeper (a node's process, the shared broker settings, the SCRAM
listener, running one of Kafka's tools) serve :mod:`configctl.localkraft`'s Kafka 4 nodes too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from configctl.errors import EnvironmentProblem
from configctl.localzk.client import ClientSettings
from configctl.localzk.ports import HOST, pick_free_ports
from configctl.localzk.runtime import find_java

KAFKA_MAIN = "kafka.Kafka"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"
STARTED_LINE = "started (kafka.server.KafkaServer)"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0

# A broker that holds a few test topics: small heap, serial GC, short shutdown.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
)
TOOL_JVM_OPTIONS = (
    "-Xmx192m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.net.preferIPv4Stack=true",
)

BASE_PROPERTIES = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "controlled.shutdown.enable": "false",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.dedupe.buffer.size": "8388608",  # Kafka wants 1 MB per cleaner thread
}
"""What every test broker runs with, ZooKeeper mode or KRaft: one copy of everything, small pools."""

ZOOKEEPER_PROPERTIES = {
    "zookeeper.connection.timeout.ms": "30000",
    "zookeeper.session.timeout.ms": "18000",
}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_LISTENER = "SASL_PLAINTEXT"


def scram_listener_properties() -> dict[str, str]:
    """The ``SASL_PLAINTEXT`` listener's settings: SCRAM-SHA-256/512 logins, checked against the
    credentials Kafka stores (in ZooKeeper, or in KRaft's metadata log)."""
    return {
        "sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS),
        **{
            f"listener.name.{SCRAM_LISTENER.lower()}.{mechanism.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
            for mechanism in SCRAM_MECHANISMS
        },
    }


def kafka_libs(home: Path | str) -> Path:
    """``home/libs`` once ``make kafka`` has filled it; a one-line error naming the fix otherwise."""
    libs = Path(home) / "libs"
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise EnvironmentProblem(f"Kafka's jars are not in {libs}: run `make kafka`")
    return libs


def kafka_version(home: Path | str) -> str:
    """The Kafka version ``make kafka`` recorded in ``home/VERSION``."""
    try:
        return (Path(home) / "VERSION").read_text(encoding="utf-8").strip()
    except OSError:
        raise EnvironmentProblem(f"no Kafka in {home}: run `make kafka`") from None


def _log4j(log_file: Path) -> str:
    return "\n".join(
        [
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.FileAppender",
            f"log4j.appender.file.File={log_file}",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.logger.kafka.request.logger=WARN",
            "log4j.logger.state.change.logger=WARN",
            "log4j.logger.kafka.log.LogCleaner=WARN",
            "",
        ]
    )


def zookeeper_client_properties(zk: ClientSettings, work_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Kafka's own settings to reach ``zk`` (TLS by the PEM CA, SASL by a JAAS ``Client`` section).

    Returns the ``server.properties`` entries and the JVM options (the JAAS file can only be named
    by a system property). The JAAS file is written 0600 into ``work_dir``: it holds the password.
    """
    properties: dict[str, str] = {}
    jvm: list[str] = []
    if zk.tls:
        properties.update(
            {
                "zookeeper.ssl.client.enable": "true",
                "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
                "zookeeper.ssl.truststore.location": str(zk.ca),
                "zookeeper.ssl.truststore.type": "PEM",
            }
        )
    if zk.sasl:
        password = zk.sasl_password() or ""
        jaas = work_dir / "kafka-jaas.conf"
        escaped = password.replace("\\", "\\\\").replace('"', '\\"')
        user = (zk.sasl_user or "").replace("\\", "\\\\").replace('"', '\\"')
        fd = os.open(jaas, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(
                "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                f'  username="{user}"\n  password="{escaped}";\n}};\n'
            )
        properties["zookeeper.set.acl"] = "true"
        jvm.append(f"-Djava.security.auth.login.config={jaas}")
    return properties, jvm


@dataclass
class KafkaBroker:
    """One real Kafka broker process: its id, port, files and (once started) its process."""

    broker_id: int
    port: int
    dir: Path
    command: list[str]
    scram_port: int | None = None
    """A SASL_PLAINTEXT listener taking SCRAM-SHA-256/512 logins (``scram=True``), else None."""
    started_line: str = STARTED_LINE
    """What the node logs once it serves (a KRaft node logs another line than a ZooKeeper-mode one)."""
    what: str = "Kafka broker"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def properties_file(self) -> Path:
        return self.dir / "server.properties"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.dir / "server.log"

    @property
    def console_file(self) -> Path:
        return self.dir / "console.log"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self) -> None:
        """Start the process (in its own session, so a Ctrl-C in a terminal does not reach it)."""
        if self.alive:
            return
        self.log_file.unlink(missing_ok=True)
        with open(self.console_file, "ab") as console:
            try:
                self.process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    cwd=self.dir,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise EnvironmentProblem(f"cannot run {self.command[0]}: {exc.strerror}") from None

    def wait_started(self, deadline: float) -> None:
        """Until the broker logged that it started and its port accepts; a one-line error if it died."""
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise EnvironmentProblem(
                    f"{self.what} {self.broker_id} exited with status {self.process.returncode}{self.last_error()}"
                )
            if self._logged_start() and _port_open(self.port):
                return
            if time.monotonic() >= deadline:
                raise EnvironmentProblem(
                    f"{self.what} {self.broker_id} did not start in time{self.last_error()}"
                )
            time.sleep(0.1)

    def _logged_start(self) -> bool:
        return self.logged(self.started_line)

    def logged(self, line: str) -> bool:
        """Whether the node's log (since its last launch) holds ``line``."""
        try:
            with open(self.log_file, "rb") as log:
                return line.encode() in log.read()
        except OSError:
            return False

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; reaps the process."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash would: the broker's ZooKeeper session lingers until it expires."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)

    def last_error(self) -> str:
        for path in (self.log_file, self.console_file):
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for index in range(len(lines) - 1, -1, -1):
                line = lines[index]
                if " ERROR " in line or " FATAL " in line or line.startswith(("Error", "Exception")):
                    cause = lines[index + 1] if index + 1 < len(lines) else ""
                    text = f"{line} {cause}" if "Exception" in cause else line
                    return f": {' '.join(text.split())[:300]}"
        return ""


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def start_nodes(nodes: Sequence[KafkaBroker], timeout: float) -> None:
    """Launch every node (they start in parallel) and wait until each serves; on any failure,
    including Ctrl-C, every one of them is stopped again before the error goes on."""
    try:
        for node in nodes:
            node.launch()
        deadline = time.monotonic() + timeout
        for node in nodes:
            node.wait_started(deadline)
    except BaseException:
        for node in nodes:
            node.stop()
        raise


def run_tool(
    java: str, libs: Path, jvm: Iterable[str], main: str, *args: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """One of Kafka's command-line tools (a main class) from ``libs``, as its scripts run it.

    ``jvm`` carries what the Kafka line needs besides the small tool heap: its logging
    configuration (Log4j 1 or 2), a JAAS file.
    """
    command = tool_command(java, libs, jvm, main, *args)
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def tool_command(java: str, libs: Path, jvm: Iterable[str], main: str, *args: str) -> list[str]:
    """The command line :func:`run_tool` runs (for a caller that runs several tools at once)."""
    return [java, *TOOL_JVM_OPTIONS, *jvm, "-cp", f"{libs}/*", main, *args]


class KafkaCluster:
    """Brokers ``1..N`` of one cluster on one ZooKeeper (a chroot of it, as Kafka allows).

    ``zk`` says how to reach ZooKeeper (its ``connect`` may end in a chroot); ``properties`` are
    added to every broker's ``server.properties`` (``per_broker`` to one broker's). Usable as a
    context manager: start on enter, stop on exit.
    """

    def __init__(
        self,
        home: Path | str,
        work_dir: Path | str,
        zk: ClientSettings,
        brokers: int | list[int] = 1,
        *,
        properties: dict[str, str] | None = None,
        per_broker: dict[int, dict[str, str]] | None = None,
        scram: bool = False,
    ) -> None:
        # Absolute: each broker runs in its own directory, so a relative classpath would not resolve.
        self.home = Path(home).resolve()
        self.libs = kafka_libs(self.home)
        self.work_dir = Path(work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.zk = zk
        self.java = find_java()
        ids = list(range(1, brokers + 1)) if isinstance(brokers, int) else list(brokers)
        zk_properties, self._jvm = zookeeper_client_properties(zk, self.work_dir)
        self.brokers: dict[int, KafkaBroker] = {}
        for broker_id in ids:
            broker_dir = self.work_dir / f"broker-{broker_id}"
            (broker_dir / "data").mkdir(parents=True, exist_ok=True)
            port, scram_port = pick_free_ports(2)
            listeners = {"listeners": f"PLAINTEXT://{HOST}:{port}"}
            if scram:
                listeners = {
                    "listeners": f"PLAINTEXT://{HOST}:{port},{SCRAM_LISTENER}://{HOST}:{scram_port}",
                    "inter.broker.listener.name": "PLAINTEXT",
                    **scram_listener_properties(),
                }
            values = {
                **BASE_PROPERTIES,
                **ZOOKEEPER_PROPERTIES,
                "broker.id": str(broker_id),
                **listeners,
                "log.dirs": str(broker_dir / "data"),
                "zookeeper.connect": zk.connect,
                **zk_properties,
                **(properties or {}),
                **((per_broker or {}).get(broker_id, {})),
            }
            (broker_dir / "server.properties").write_text(
                "".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8"
            )
            (broker_dir / "log4j.properties").write_text(_log4j(broker_dir / "server.log"), encoding="utf-8")
            command = [
                self.java,
                *JVM_OPTIONS,
                *self._jvm,
                f"-Dlog4j.configuration=file:{broker_dir / 'log4j.properties'}",
                "-cp",
                f"{self.libs}/*",
                KAFKA_MAIN,
                str(broker_dir / "server.properties"),
            ]
            self.brokers[broker_id] = KafkaBroker(
                broker_id, port, broker_dir, command, scram_port if scram else None
            )

    @property
    def bootstrap(self) -> str:
        """Every live broker's address, comma-separated (what ``--bootstrap-server`` takes)."""
        return (
            ",".join(b.bootstrap for b in self.brokers.values() if b.alive)
            or next(iter(self.brokers.values())).bootstrap
        )

    def start(self, timeout: float = START_TIMEOUT, ids: list[int] | None = None) -> KafkaCluster:
        """Start the brokers (all at once, they start in parallel) and wait until each serves."""
        start_nodes([self.brokers[i] for i in (ids or self.brokers)], timeout)
        return self

    def stop(self, ids: list[int] | None = None) -> None:
        for broker_id in ids or list(self.brokers):
            self.brokers[broker_id].stop()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def jvm_options(self) -> list[str]:
        """What every JVM of this cluster needs to reach its ZooKeeper (a JAAS file), beside the heap."""
        return list(self._jvm)

    def tool(self, main: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools (a main class) from the same jars, as its scripts do."""
        log4j = self.work_dir / "tools-log4j.properties"
        if not log4j.exists():
            log4j.write_text(
                "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.stderr.Target=System.err\n"
                "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n",
                encoding="utf-8",
            )
        jvm = [*self._jvm, f"-Dlog4j.configuration=file:{log4j}"]
        return run_tool(self.java, self.libs, jvm, main, *args, timeout=timeout)

    def config_command(self, *args: str, zookeeper: bool = False) -> subprocess.CompletedProcess[str]:
        """Kafka's ``kafka-configs.sh``: through the brokers, or ``zookeeper=True`` for ``--zookeeper``."""
        target = ["--zookeeper", self.zk.connect] if zookeeper else ["--bootstrap-server", self.bootstrap]
        if zookeeper and (self.zk.tls or self.zk.sasl):
            target += ["--zk-tls-config-file", str(self._zk_tls_config())]
        return self.tool(CONFIG_COMMAND, *target, *args)

    def _zk_tls_config(self) -> Path:
        path = self.work_dir / "zk-client.properties"
        properties, _ = zookeeper_client_properties(self.zk, self.work_dir)
        path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()), encoding="utf-8")
        return path
