"""One server's configuration on disk: its ``zoo.cfg``, its logging config and the command to run it.

Every start rewrites these files, so a server always runs with what this version of configctl
means by "a local ZooKeeper" (the data under ``data/`` is what survives a restart)::

    <data-dir>/server-<id>/zoo.cfg    the node's configuration
    <data-dir>/server-<id>/data/      snapshots and transaction logs (and ``myid`` in an ensemble)
    <data-dir>/server-<id>/zookeeper.log, console.log

Timing. ``tickTime`` is 200 ms instead of ZooKeeper's 2000 ms: the server expires sessions in
buckets of one tick, so a client with a 2 s session timeout is expired 2.0–2.2 s after it goes
silent, which keeps session-expiry tests fast and predictable. ``minSessionTimeout`` is therefore
400 ms (two ticks) and ``maxSessionTimeout`` is raised to 60 s so a client always gets the timeout
it asks for (kazoo's default of 10 s stays 10 s). In an ensemble ``initLimit`` is 50 ticks (10 s to
sync when joining, generous on a loaded two-core CI box) and ``syncLimit`` 15 ticks (3 s before a
silent follower is dropped: long enough to ride out a GC pause or CPU starvation, short enough that
a hung node is noticed quickly; a killed node is noticed at once because its sockets close).
"""

from __future__ import annotations

import os
from pathlib import Path

from configctl.localzk.ports import HOST
from configctl.localzk.security import Security
from configctl.localzk.state import Node

STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

TICK_TIME_MS = 200
MAX_SESSION_TIMEOUT_MS = 60_000
INIT_LIMIT_TICKS = 50
SYNC_LIMIT_TICKS = 15

# Small heap, serial GC: a test server holds little data, and three JVMs share two cores in CI.
JVM_OPTIONS = (
    "-Xms32m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.admin.enableServer=false",
    "-Dzookeeper.jmx.log4j.disable=true",
)


def write_node_configs(
    data_dir: Path,
    java: str,
    classpath: list[str],
    log_backends: dict[str, Path],
    client_ports: list[int],
    peer_ports: list[int],
    security: Security,
    tick_ms: int = TICK_TIME_MS,
) -> list[Node]:
    """Write each node's files under ``data_dir`` and return the nodes, ready to launch.

    ``tick_ms``: ZooKeeper's tick (the unit of its session expiry and of a quorum's patience
    with a silent peer). The default suits tests; a load test on a starved machine wants
    ZooKeeper's own 2,000 ms, so the quorum rides out seconds without CPU as a production one does.

    One client port means a standalone server; more mean an ensemble whose node ``i`` uses
    ``peer_ports[2i]`` for quorum and ``peer_ports[2i+1]`` for leader election. ``security`` says
    whether the client port speaks TLS and whether clients must log in with SASL.
    """
    ensemble = len(client_ports) > 1
    nodes = []
    for index, client_port in enumerate(client_ports):
        node_id = index + 1
        node_dir = data_dir / f"server-{node_id}"
        (node_dir / "data").mkdir(parents=True, exist_ok=True)
        quorum_port = peer_ports[2 * index] if ensemble else None
        election_port = peer_ports[2 * index + 1] if ensemble else None
        lines = [
            f"tickTime={tick_ms}",
            f"dataDir={node_dir / 'data'}",
            *security.client_port_lines(client_port),
            f"minSessionTimeout={2 * tick_ms}",
            f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr,ruok,stat,mntr",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
            *security.zoo_cfg_lines(),
        ]
        if ensemble:
            lines += [f"initLimit={INIT_LIMIT_TICKS}", f"syncLimit={SYNC_LIMIT_TICKS}"]
            lines += [
                f"server.{i + 1}={HOST}:{peer_ports[2 * i]}:{peer_ports[2 * i + 1]}"
                for i in range(len(client_ports))
            ]
            (node_dir / "data" / "myid").write_text(f"{node_id}\n", encoding="ascii")
        node = Node(node_id, client_port, quorum_port, election_port, node_dir, [])
        node.config_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        node.command = [
            java,
            *JVM_OPTIONS,
            *security.jvm_options(),
            *write_log_configs(node_dir, log_backends),
            "-cp",
            os.pathsep.join(classpath),
            QUORUM_MAIN if ensemble else STANDALONE_MAIN,
            str(node.config_file),
        ]
        nodes.append(node)
    return nodes


_LOG4J2 = """\
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.filePattern = {log}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %-5p [%t] %c{{1}} - %m%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""

_LOG4J1 = """\
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File={log}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t] %c{{1}} - %m%n
"""

_LOGBACK = """\
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{ISO8601}} %-5level [%thread] %logger{{0}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def write_log_configs(node_dir: Path, backends: dict[str, Path]) -> list[str]:
    """Write a config per logging backend (INFO to ``zookeeper.log``) and return the JVM options.

    Which backend the jars use is not known for the Debian fallback, so each gets one.
    """
    log = node_dir / "zookeeper.log"
    options = []
    templates = {
        "log4j2": (_LOG4J2, "-Dlog4j2.configurationFile={}"),
        "log4j": (_LOG4J1, "-Dlog4j.configuration=file:{}"),
        "logback": (_LOGBACK, "-Dlogback.configurationFile={}"),
    }
    for backend, name in backends.items():
        template, option = templates[backend]
        path = node_dir / name
        path.write_text(template.format(log=log), encoding="utf-8")
        options.append(option.format(path))
    return options
