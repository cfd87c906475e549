"""``configctl audit recorders``: the KRaft fleet's drift from what its flight recorders publish, read with Spark.

Thin: :mod:`configctl.audit.recorders` reads the recorder topic with Spark's Kafka source and
judges it; this wires the options, finds the connector's jars and renders the document.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from configctl.audit.verdict import DRIFT_EXIT_CODE
from configctl.cli.options import global_options, settings
from configctl.cli.render import safe, show
from configctl.errors import EnvironmentProblem, InvalidInput

if TYPE_CHECKING:
    from rich.console import Console


@click.command(
    "recorders",
    epilog=(
        f"Exit status: 0 when the audit ran; with --fail-on-drift, {DRIFT_EXIT_CODE} when drift was found; "
        "1 for bad input; 3 when Kafka cannot be reached; 7 when Spark cannot start."
    ),
)
@global_options
@click.option("--master", default=None, metavar="URL", help="Spark master.  [default: local[*]]")
@click.option(
    "--stale-after",
    type=click.FloatRange(min=1.0),
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="A recorder that has not published for this long is stale (a running one publishes every 30 s).",
)
@click.option(
    "--kafka-jars",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Spark's Kafka source and the jars it needs (make spark-kafka puts them in build/spark-kafka/libs, the default).",
)
@click.option("--fail-on-drift", is_flag=True, help=f"Exit {DRIFT_EXIT_CODE} when drift is found.")
def recorders(master: str | None, stale_after: float, kafka_jars: str | None, fail_on_drift: bool) -> None:
    """Audit a KRaft fleet from what its flight recorders publish in the cluster, read with Spark.

    Spark's own Kafka source reads the cluster's _configctl_metadata topic (--bootstrap-server,
    --command-config): each recorder's progress and what its broker runs. Reports brokers that run
    other <default> values than most (divergent), keys a broker holds but refused to apply, stale
    recorders and gaps (docs/audit.md, "A KRaft fleet").

    \b
      configctl --bootstrap-server kafka1:9092 audit recorders --fail-on-drift
    """
    from configctl.adminapi.client import KafkaAdmin
    from configctl.audit.recorders import audit_recorders, kafka_options
    from configctl.audit.spark import audit_session
    from configctl.configparse import load_properties_file
    from configctl.kraft.recordertopic import TOPIC

    bootstrap = settings().bootstrap_server
    if bootstrap is None:
        raise click.UsageError("audit recorders reads a KRaft cluster: give --bootstrap-server HOST:PORT")
    jars = _spark_kafka_jars(kafka_jars)
    command_config = settings().command_config
    client = load_properties_file(command_config) if command_config else {}
    with KafkaAdmin(bootstrap, Path(command_config) if command_config else None) as admin:
        if TOPIC not in admin.topic_names():
            raise InvalidInput(
                f"no flight recorder has run on this cluster (no topic {TOPIC}): start configctl listener run "
                "beside a broker"
            )
    with audit_session(master, conf={"spark.jars": ",".join(str(j) for j in jars)}) as spark:
        doc = audit_recorders(
            spark, TOPIC, kafka_options(bootstrap, client), int(time.time() * 1000), stale_after
        )
    show(RecordersView(doc))
    if fail_on_drift and doc["drift"]:
        raise click.exceptions.Exit(DRIFT_EXIT_CODE)


def _spark_kafka_jars(directory: str | None) -> list[Path]:
    """The jars of Spark's Kafka source: in ``directory``, else where ``make spark-kafka`` puts them."""
    found = (
        Path(directory)
        if directory
        else Path(__file__).resolve().parents[2] / "build" / "spark-kafka" / "libs"
    )
    jars = sorted(found.glob("*.jar")) if found.is_dir() else []
    if not any(j.name.startswith("spark-sql-kafka") for j in jars):
        raise EnvironmentProblem(
            f"Spark's Kafka source is not in {found}: run `make spark-kafka` (or give --kafka-jars DIR)"
        )
    return jars


@dataclass(frozen=True)
class RecordersView:
    """The document of :func:`configctl.audit.recorders.judge`; ``-o json`` prints it as it is."""

    doc: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.doc

    def render(self, out: Console) -> None:
        from rich.table import Table

        doc = self.doc
        out.print(
            f"KRaft fleet from {doc['recorders']} flight recorder(s) (read from Kafka with Spark's Kafka source): "
            f"{doc['writes_recorded']} write(s) to {doc['entities_written']} entities recorded, up to metadata "
            f"offset {doc['recorded_to']}"
        )
        table = Table(show_edge=False)
        for column in (
            "broker",
            "recorded to",
            "behind",
            "last published",
            "answers",
            "<default> digest",
            "not applied",
        ):
            table.add_column(column)
        for b in doc["brokers"]:
            since = b.get("seconds_since")
            table.add_row(
                str(b["broker_id"]),
                str(b.get("recorded_to")),
                str(b.get("behind")),
                "?" if since is None else f"{since:.0f}s ago",
                {True: "yes", False: "[red]no[/]"}.get(b.get("answers"), "?"),
                safe((b.get("default_digest") or "-")[:19]),
                safe(", ".join(i["key"] for i in b.get("not_applied") or ()) or "-"),
            )
        out.print(table)
        for item in doc["divergent"]:
            out.print(
                f"[red]divergent[/] broker {item['broker_id']} runs other <default> values than most brokers "
                f"({safe(item['default_digest'][:19])}, most run {safe(item['most_run'][:19])})"
            )
        for item in doc["not_applied"]:
            out.print(
                f"[red]not applied[/] broker {item['broker_id']} holds {safe(item['key'])}={safe(str(item['held']))} "
                f"({safe(item['layer'])}) but runs {safe(str(item['running']))} ({safe(item['source'])})"
            )
        for item in doc["stale"]:
            out.print(f"[yellow]stale[/] recorder of broker {item['broker_id']}: {safe(item['reason'])}")
        for gap in doc["gaps"]:
            hid = (
                "unknown entities"
                if gap.get("entities") is None
                else f"{len(gap['entities'])} entities changed"
            )
            out.print(f"[yellow]gap[/] metadata offsets {gap['start']} to {gap['end']} (exclusive): {hid}")
        out.print("Drift found." if doc["drift"] else "No drift: every broker runs what its metadata holds.")
