"""A real Kafka 4.4 cluster in KRaft mode (no ZooKeeper) for the KRaft tour (``examples/tour_kraft.sh``).

``start`` formats and runs a cluster (``--brokers`` brokers and a controller of their own, or
``--combined``: one node that is broker and controller), writes where it is to ``--info`` (a
shell file, sourced by the tour: ``bootstrap``, ``controllers``, ``cluster_id``,
``broker_<id>_bootstrap``, ``broker_<id>_pid``, ``broker_<id>_properties``, and ``kafka_configs``, a bash array: Kafka 4's
own kafka-configs.sh, ``org.apache.kafka.tools.ConfigCommand`` from the same jars) once every
broker serves and is registered, and stays in the foreground until SIGTERM or SIGINT, then
stops every node (brokers before their controllers).

    python examples/kraft_cluster.py start --brokers 2 --work-dir /tmp/k --info /tmp/k/kraft.env
    . /tmp/k/kraft.env && "${kafka_configs[@]}" --bootstrap-server "$bootstrap" --describe --entity-type brokers --entity-default

Topics are created and each broker asked for a key with ``examples/kafka_brokers.py create-topic``
and ``describe``: the same Admin API requests on either line. The jars are ``build/kafka4`` of
this repository (``make kafka``), or ``$CONFIGCTL_KAFKA4_HOME`` or ``--kafka-home``. Errors are
one line on stderr (``error: ...``) with configctl's exit statuses.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from configctl.adminapi.client import KafkaAdmin
from configctl.errors import ConfigctlError, EnvironmentProblem
from configctl.localkafka import kafka_version, tool_command
from configctl.localkraft import CONFIG_COMMAND, KRaftCluster, log4j2_properties

REPO = Path(__file__).resolve().parent.parent
KAFKA_HOME_ENV = "CONFIGCTL_KAFKA4_HOME"
REGISTER_TIMEOUT = 60.0


class _Stop(BaseException):
    """SIGTERM or SIGINT: leave whatever the main thread is doing and stop the nodes."""


def kafka_home(option: str | None) -> Path:
    return Path(option or os.environ.get(KAFKA_HOME_ENV) or REPO / "build" / "kafka4").resolve()


def _assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value


def config_command_line(cluster: KRaftCluster) -> list[str]:
    """Kafka 4's kafka-configs.sh as a command line: the JVM, its logging (warnings, to stderr),
    the main class. ``KRaftCluster.config_command`` runs it from Python; the tour runs it from
    the shell, so an operator sees (and can copy) the very command."""
    logging = cluster.work_dir / "kafka-configs-log4j2.properties"
    logging.write_text(log4j2_properties(None, "WARN"), encoding="utf-8")
    jvm = [f"-Dlog4j2.configurationFile={logging}"]
    return tool_command(cluster.java, cluster.libs, jvm, CONFIG_COMMAND)


def _write_info(path: Path, cluster: KRaftCluster) -> None:
    lines = [
        f"bootstrap={shlex.quote(cluster.bootstrap)}",
        f"controllers={shlex.quote(','.join(cluster.quorum.values()))}",
        f"cluster_id={shlex.quote(cluster.cluster_id)}",
        f"kafka_configs=({' '.join(shlex.quote(part) for part in config_command_line(cluster))})",
    ]
    for broker_id, broker in cluster.brokers.items():
        pid = broker.process.pid if broker.process is not None else ""
        lines += [
            f"broker_{broker_id}_bootstrap={shlex.quote(broker.bootstrap)}",
            f"broker_{broker_id}_pid={pid}",
            f"broker_{broker_id}_properties={shlex.quote(str(broker.properties_file))}",
        ]
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    partial.replace(path)  # whoever waits for the file sees it whole


def _wait_registered(cluster: KRaftCluster) -> None:
    """Every broker in the metadata the others serve: until then a request may miss one."""
    deadline = time.monotonic() + REGISTER_TIMEOUT
    with KafkaAdmin(cluster.bootstrap) as admin:
        while admin.broker_ids() != sorted(cluster.brokers):
            if time.monotonic() > deadline:
                raise EnvironmentProblem(f"brokers {sorted(cluster.brokers)} did not all register")
            time.sleep(0.2)


def start(args: argparse.Namespace) -> int:
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        if not stopping:  # the first signal interrupts; a second one, while stopping, is ignored
            stopping = True
            raise _Stop

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    home = kafka_home(args.kafka_home)
    info = Path(args.info)
    cluster: KRaftCluster | None = None
    try:
        cluster = KRaftCluster(
            home,
            args.work_dir.resolve(),
            brokers=args.brokers,
            combined=args.combined,
            properties=dict(args.set),
        )
        cluster.start()
        _wait_registered(cluster)
        _write_info(info, cluster)
        shape = "combined broker and controller" if args.combined else "brokers and a controller quorum"
        print(f"Kafka {kafka_version(home)} (KRaft, {shape}), cluster id {cluster.cluster_id}:", flush=True)
        for node_id, node in cluster.nodes.items():
            roles = " and ".join(
                role
                for role, members in (("broker", cluster.brokers), ("controller", cluster.controllers))
                if node_id in members
            )
            address = cluster.quorum[node_id] if node_id not in cluster.brokers else node.bootstrap
            print(f"  node {node_id}: {roles}, {address}", flush=True)
        while True:  # until a signal
            time.sleep(0.5)
    except _Stop:
        return 0
    finally:
        stopping = True
        info.unlink(missing_ok=True)
        if cluster is not None:
            cluster.stop()
            print(f"stopped node(s) {', '.join(map(str, cluster.nodes))}", flush=True)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kraft_cluster.py", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser("start", help="start a KRaft cluster; stop it on SIGTERM or SIGINT")
    run.add_argument("--brokers", type=int, default=2, help="how many brokers (ids 1..N; default 2)")
    run.add_argument(
        "--combined",
        action="store_true",
        help="each broker is a controller too (default: a controller of its own, node 100)",
    )
    run.add_argument("--work-dir", required=True, type=Path, help="the nodes' files go under it")
    run.add_argument("--info", required=True, help="the shell file written once every broker serves")
    run.add_argument(
        "--kafka-home", help=f"Kafka 4's jars are in its libs/ (default: ${KAFKA_HOME_ENV}, build/kafka4)"
    )
    run.add_argument(
        "--set",
        type=_assignment,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties entry of every node",
    )
    run.set_defaults(handler=start)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.handler(args)
    except ConfigctlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
