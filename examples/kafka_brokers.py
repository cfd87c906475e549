"""Real Kafka 3.9 brokers for the tour (``examples/tour.sh``), and what they report.

``start`` runs N brokers (ZooKeeper mode, PLAINTEXT on 127.0.0.1) on a ZooKeeper, writes where
they are to ``--info`` (a shell file: ``bootstrap``, ``broker_<id>_bootstrap``,
``broker_<id>_properties``, ``broker_<id>_pid``) once every broker serves, and stays in the
foreground until SIGTERM or SIGINT, then stops every broker. ``create-topic`` creates a topic
through the Admin API. ``describe`` asks each broker in turn (DescribeConfigs) for the value and
source of a key, as the broker itself reports it; ``--expect`` waits until they report a value.

    python examples/kafka_brokers.py start --zookeeper 127.0.0.1:2181 --work-dir /tmp/k --info /tmp/k/brokers.env
    python examples/kafka_brokers.py create-topic --bootstrap 127.0.0.1:40001 --topic orders
    python examples/kafka_brokers.py describe --bootstrap 127.0.0.1:40001 --topic orders --key retention.ms
    python examples/kafka_brokers.py describe --bootstrap 127.0.0.1:40001 --broker-config \\
        --key log.cleaner.threads --expect 1 --expect-on 2=2

The jars are ``build/kafka`` of this repository (``make kafka``), or ``$CONFIGCTL_KAFKA_HOME``
or ``--kafka-home`` (a directory with ``libs/``, as a Kafka distribution has). Errors are one
line on stderr (``error: ...``) with configctl's exit statuses.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from kafka.admin import KafkaAdminClient

from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.connection import client_options
from configctl.adminapi.errors import translate_errors
from configctl.errors import ConfigctlError
from configctl.localkafka import KafkaCluster, kafka_version
from configctl.localzk.client import ClientSettings
from configctl.reported import ReportedConfig

REPO = Path(__file__).resolve().parent.parent
KAFKA_HOME_ENV = "CONFIGCTL_KAFKA_HOME"
TOPIC_RESOURCE = 2  # Kafka's ConfigResource.Type.TOPIC


class _Stop(BaseException):
    """SIGTERM or SIGINT: leave whatever the main thread is doing and stop the brokers."""


# -- start ------------------------------------------------------------------------------------


def kafka_home(option: str | None) -> Path:
    return Path(option or os.environ.get(KAFKA_HOME_ENV) or REPO / "build" / "kafka").resolve()


def _assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value


def _broker_assignment(text: str) -> tuple[int, str, str]:
    broker, sep, rest = text.partition(":")
    if not sep or not broker.isdigit():
        raise argparse.ArgumentTypeError(f"expected ID:KEY=VALUE, not {text!r}")
    key, value = _assignment(rest)
    return int(broker), key, value


def _write_info(path: Path, cluster: KafkaCluster) -> None:
    lines = [f"bootstrap={shlex.quote(cluster.bootstrap)}"]
    for broker_id, broker in cluster.brokers.items():
        pid = broker.process.pid if broker.process is not None else ""
        lines += [
            f"broker_{broker_id}_bootstrap={shlex.quote(broker.bootstrap)}",
            f"broker_{broker_id}_properties={shlex.quote(str(broker.dir / 'server.properties'))}",
            f"broker_{broker_id}_pid={pid}",
        ]
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    partial.replace(path)  # whoever waits for the file sees it whole


def start(args: argparse.Namespace) -> int:
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        if not stopping:  # the first signal interrupts; a second one, while stopping, is ignored
            stopping = True
            raise _Stop

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    per_broker: dict[int, dict[str, str]] = {}
    for broker_id, key, value in args.set_on:
        per_broker.setdefault(broker_id, {})[key] = value
    home = kafka_home(args.kafka_home)
    info = Path(args.info)
    cluster: KafkaCluster | None = None
    try:
        cluster = KafkaCluster(
            home,
            args.work_dir.resolve(),  # each broker runs in its own directory: absolute paths only
            ClientSettings(args.zookeeper),
            args.brokers,
            properties=dict(args.set),
            per_broker=per_broker,
        )
        cluster.start()
        _write_info(info, cluster)
        print(f"Kafka {kafka_version(home)} (ZooKeeper mode) on {args.zookeeper}:", flush=True)
        for broker_id, broker in cluster.brokers.items():
            print(f"  broker {broker_id}: {broker.bootstrap}, {broker.dir / 'server.properties'}", flush=True)
        reported: set[int] = set()
        while True:  # until a signal; say once when a broker is gone (stopped by its pid, or died)
            for broker_id, broker in cluster.brokers.items():
                if broker_id not in reported and not broker.alive:
                    reported.add(broker_id)
                    status = broker.process.returncode if broker.process is not None else None
                    print(f"broker {broker_id} exited (status {status})", flush=True)
            time.sleep(0.5)
    except _Stop:
        return 0
    finally:
        stopping = True
        info.unlink(missing_ok=True)
        if cluster is not None:
            cluster.stop()
            print(f"stopped broker(s) {', '.join(map(str, cluster.brokers))}", flush=True)


# -- create-topic -----------------------------------------------------------------------------


def create_topic(args: argparse.Namespace) -> int:
    options = client_options(args.bootstrap, None, args.timeout)
    with translate_errors(f"create topic {args.topic}", args.bootstrap):
        client = KafkaAdminClient(**options)
        try:
            client.create_topics(
                {
                    args.topic: {
                        "num_partitions": args.partitions,
                        "replication_factor": args.replication_factor,
                    }
                },
                wait_for_metadata=True,
            )
        finally:
            client.close()
    with KafkaAdmin(args.bootstrap, timeout=args.timeout) as admin:
        brokers = admin.broker_ids()
        deadline = time.monotonic() + args.timeout
        for broker_id in brokers:  # each broker answers for it before anyone configures it
            while True:
                try:
                    _describe(admin, broker_id, args.topic, ["cleanup.policy"])
                    break
                except ConfigctlError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
    print(
        f"Created topic {args.topic}: {args.partitions} partition(s), replication factor "
        f"{args.replication_factor}; brokers {', '.join(map(str, brokers))} know it"
    )
    return 0


# -- describe ---------------------------------------------------------------------------------


def _describe(
    admin: KafkaAdmin, broker_id: int, topic: str | None, keys: list[str]
) -> dict[str, ReportedConfig]:
    if topic is None:
        return admin.describe_broker(broker_id, keys)
    # KafkaAdmin.describe_topic lets the client pick the broker that answers; the tour asks each
    # broker in turn (a topic's values fall back to that broker's own config), so it names one.
    return admin._describe(TOPIC_RESOURCE, topic, keys, node_id=broker_id, what=f"topic {topic}")


def _expected(args: argparse.Namespace, brokers: Iterable[int]) -> dict[int, str]:
    expected = {broker_id: args.expect for broker_id in brokers if args.expect is not None}
    for broker, value in args.expect_on:
        if not broker.isdigit():
            raise ConfigctlError(f"--expect-on takes ID=VALUE, not {broker}={value}")
        if int(broker) in brokers:
            expected[int(broker)] = value
    return expected


def _line(broker_id: int, key: str, config: ReportedConfig | None) -> str:
    if config is None:
        return f"broker {broker_id}: {key} is not a config it knows"
    value = "(sensitive)" if config.sensitive else config.value
    return f"broker {broker_id}: {key}={value} ({config.source})"


def describe(args: argparse.Namespace) -> int:
    if (args.expect is not None or args.expect_on) and len(args.key) != 1:
        raise ConfigctlError("--expect and --expect-on take exactly one --key")
    with KafkaAdmin(args.bootstrap, timeout=args.timeout) as admin:
        brokers = args.broker or admin.broker_ids()
        expected = _expected(args, brokers)
        deadline = time.monotonic() + args.timeout
        while True:
            answers = {broker_id: _describe(admin, broker_id, args.topic, args.key) for broker_id in brokers}
            waiting = [
                broker_id
                for broker_id, value in expected.items()
                if (config := answers[broker_id].get(args.key[0])) is None or config.value != value
            ]
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # a broker applies a ZooKeeper change when its notification arrives
    for broker_id in brokers:
        for key in args.key:
            print(_line(broker_id, key, answers[broker_id].get(key)))
    if waiting:
        print(
            f"error: broker(s) {', '.join(map(str, waiting))} did not report "
            f"{args.key[0]}={expected[waiting[0]]} within {args.timeout:g} s",
            file=sys.stderr,
        )
        return 1
    return 0


# -- the command line -------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kafka_brokers.py", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)

    run = commands.add_parser("start", help="start N brokers; stop them on SIGTERM or SIGINT")
    run.add_argument("--zookeeper", required=True, help="HOST:PORT[/chroot] of the brokers' ZooKeeper")
    run.add_argument("--brokers", type=int, default=3, help="how many brokers (ids 1..N; default 3)")
    run.add_argument("--work-dir", required=True, type=Path, help="the brokers' files go under it")
    run.add_argument("--info", required=True, help="the shell file written once every broker serves")
    run.add_argument(
        "--kafka-home", help=f"Kafka's jars are in its libs/ (default: ${KAFKA_HOME_ENV}, build/kafka)"
    )
    run.add_argument(
        "--set",
        type=_assignment,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties entry of every broker",
    )
    run.add_argument(
        "--set-on",
        type=_broker_assignment,
        action="append",
        default=[],
        metavar="ID:KEY=VALUE",
        help="a server.properties entry of one broker",
    )
    run.set_defaults(handler=start)

    create = commands.add_parser("create-topic", help="create a topic through the Admin API")
    create.add_argument("--bootstrap", required=True, help="HOST:PORT[,HOST:PORT...]")
    create.add_argument("--topic", required=True)
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replication-factor", type=int, default=1)
    create.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    create.set_defaults(handler=create_topic)

    ask = commands.add_parser("describe", help="what each broker reports for a key (value and source)")
    ask.add_argument("--bootstrap", required=True, help="HOST:PORT[,HOST:PORT...]")
    what = ask.add_mutually_exclusive_group(required=True)
    what.add_argument("--topic", help="a topic's config, as each broker reports it")
    what.add_argument("--broker-config", action="store_true", help="each broker's own config")
    ask.add_argument("--key", action="append", required=True, help="a config key (repeatable)")
    ask.add_argument(
        "--broker", type=int, action="append", help="ask only this broker (default: every live one)"
    )
    ask.add_argument("--expect", metavar="VALUE", help="wait until every broker asked reports VALUE")
    ask.add_argument(
        "--expect-on",
        type=_assignment,
        action="append",
        default=[],
        metavar="ID=VALUE",
        help="wait until broker ID reports VALUE (instead of --expect's)",
    )
    ask.add_argument("--timeout", type=float, default=30.0, help="seconds to connect and wait (default 30)")
    ask.set_defaults(handler=describe)
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
