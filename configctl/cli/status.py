"""``configctl status``: which brokers run which change, how far behind, and what they refused.

Every live listener (``/configctl/brokers``), every broker known from its persistent record
(``/configctl/fleet``) or from Kafka's ``/brokers/ids`` that has no live listener (``live``
false; a Kafka broker that Kafka no longer registers is not live either, its listener running or
not: ``down (not registered)``), Kafka's registration of each (``kafka``), what its figures rest
on (``figures``: observed from the broker, or computed without asking it), and their problems (docs/reference/state-and-fleet-nodes.md); and who owns the cluster's metadata (ZooKeeper, a KRaft
controller, or a migration between them), since configctl refuses every write unless it is
ZooKeeper. Exits 0 whatever it finds: it reports, it does not judge.

On KRaft (a store whose capabilities say ``broker_reports`` and no ``fleet_state``) no listener
publishes anything: the brokers (registered, fenced), the controller quorum (leader, voters,
observers, their log end offsets and lag), the metadata version and release are what the cluster
says, and each broker is asked for its own dynamic config (whether it answers, how many keys, a
digest to compare brokers by).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl import fleet
from configctl.cli.context import open_store
from configctl.cli.migration import witness
from configctl.cli.options import global_options
from configctl.cli.render import note, safe, show
from configctl.documents.status import ReportedStatus, StatusDocument, status_of
from configctl.errors import NotFound
from configctl.migration import MIGRATING, MetadataOwner
from configctl.migrationphase import KRAFT_PHASE, Phase
from configctl.store import ConfigStore


class StatusView(StatusDocument):
    """``status`` for people: the document as a table (or one broker's line and its problems)."""

    def render(self, out: Console) -> None:
        latest = self.status.latest_change_number
        if self.status.metadata is not None:
            out.print(_metadata_line(self.status.metadata))
        if self.broker_id is not None:
            self._render_one(out, self.status.broker(self.broker_id), latest)
            return
        if not self.status.brokers:
            out.print(
                "No broker is known: no listener has run against this ZooKeeper, and Kafka registered none."
            )
            return
        table = Table(
            title=f"Fleet status (newest change: {latest if latest is not None else 'none'})",
            title_justify="left",
            show_edge=False,
        )
        columns = ("broker", "live", "kafka", "last applied", "behind", "applied at", "problems", "figures")
        for column in columns:
            table.add_column(
                column, justify="right" if column in ("broker", "last applied", "behind") else "left"
            )
        for broker in self.status.brokers:
            live = "[green]yes[/]" if broker.live else _not_live(broker)
            behind = "" if broker.behind is None else str(broker.behind)
            if broker.behind:
                behind = f"[yellow]{behind}[/]"
            kinds = sorted({p.kind for p in broker.problems})
            count = len(broker.problems) + broker.problems_omitted
            problems = f"[red]{count} ({', '.join(kinds)})[/]" if broker.problems else "0"
            row = [
                str(broker.broker_id),
                live,
                fleet.kafka_column(broker.kafka_registered, broker.truth),
                "" if broker.last_applied_change is None else str(broker.last_applied_change),
                behind,
                _when(broker.applied_at_ms if broker.live else broker.last_seen_ms),
                problems,
            ]
            row.append(_figures(broker))
            table.add_row(*row)
        out.print(table)

    @staticmethod
    def _render_one(out: Console, broker: fleet.BrokerStatus | None, latest: int | None) -> None:
        assert broker is not None
        if broker.live:
            live = "live"
        elif broker.truth == fleet.NOT_REGISTERED:
            live = "down (not registered: Kafka no longer registers it; its listener runs)"
        else:
            live = "not live (its listener is down)"
        out.print(
            f"Broker {broker.broker_id}: {live}; applied up to change {broker.last_applied_change} "
            f"of {latest} ({broker.behind if broker.behind is not None else '?'} behind)"
            + (f"; host {safe(broker.host)}" if broker.host else "")
            + f"; Kafka: {fleet.kafka_column(broker.kafka_registered, broker.truth)}"
            + (f"; {_figures(broker)}" if broker.live else "")
        )
        if not broker.problems:
            out.print("No problems.")
            return
        table = Table(title="Problems", title_justify="left", show_edge=False)
        for column in ("kind", "entity", "key", "change", "reason"):
            table.add_column(column, overflow="fold")
        for p in broker.problems:
            table.add_row(
                f"[red]{p.kind}[/]",
                safe(p.entity_path or p.notification or ""),
                safe(p.name or p.key or ""),
                "" if p.change_number is None else str(p.change_number),
                safe(p.reason) + (f" (plugin {safe(p.plugin)})" if p.plugin else ""),
            )
        out.print(table)
        if broker.problems_omitted:
            out.print(
                f"[red]{broker.problems_omitted} older problem(s) not listed[/]: its listener publishes "
                "the newest 1,000; the others are listed again as newer ones clear."
            )


class ReportedView(ReportedStatus):
    """``status`` on KRaft for people: the cluster's line, its brokers and its controller quorum."""

    def render(self, out: Console) -> None:
        out.print(
            f"Metadata: KRaft cluster {safe(self.cluster.get('cluster_id') or '?')}: metadata.version "
            f"{safe(self.cluster.get('metadata_version') or '?')} (Kafka {safe(self.cluster.get('kafka_release') or '?')}); "
            "configctl writes through the brokers' Admin API; every figure below is what the brokers "
            "and controllers report"
        )
        table = Table(title="Brokers (each asked itself)", title_justify="left", show_edge=False)
        for column in (
            "broker", "address", "registration", "answers", "own keys", "default keys", "digest", "not applied",
        ):  # fmt: skip
            table.add_column(
                column, justify="right" if column in ("broker", "own keys", "default keys") else "left"
            )
        for b in self.brokers():
            fenced = "[red]fenced[/]" if b.get("fenced") is True else "[green]registered[/]"
            answers = "[green]yes[/]" if b.get("answers") else f"[red]no[/]: {safe(b.get('reason') or '')}"
            table.add_row(
                str(b["broker_id"]),
                safe(f"{b.get('host')}:{b.get('port')}"),
                fenced,
                answers,
                _count(b.get("dynamic_config_keys")),
                _count(b.get("default_config_keys")),
                safe((b.get("config_digest") or "")[:19]),
                _not_applied(b.get("not_applied")),
            )
        out.print(table)
        for b in self.brokers():
            for item in b.get("not_applied") or ():
                out.print(
                    f"[red]broker {b['broker_id']} refused[/] {safe(item['key'])}={safe(str(item['held']))} "
                    f"({safe(item['layer'])}): it runs {safe(str(item['running']))} ({safe(item['source'])}); "
                    "its server.log says why"
                )
        quorum = self.cluster.get("quorum") or {}
        leader = quorum.get("leader_id")
        nodes = Table(
            title=f"Controller quorum (leader {leader if leader is not None else 'none'}, epoch "
            f"{quorum.get('leader_epoch')}, high watermark {quorum.get('high_watermark')})",
            title_justify="left",
            show_edge=False,
        )
        for column in ("node", "role", "log end offset", "lag", "last fetch"):
            nodes.add_column(
                column, justify="right" if column in ("node", "log end offset", "lag") else "left"
            )
        for role, key in (("voter", "voters"), ("observer", "observers")):
            for node in quorum.get(key) or ():
                shown = "leader" if role == "voter" and node.get("node_id") == leader else role
                nodes.add_row(
                    str(node.get("node_id")),
                    shown,
                    _count(node.get("log_end_offset")),
                    _count(node.get("lag")),
                    _when(node.get("last_fetch_ms")),
                )
        out.print(nodes)
        recorders = self.cluster.get("recorders") or []
        if not recorders:
            out.print(
                "[dim]No flight recorder has run: writes made outside configctl are in history undated "
                "(configctl listener run beside a broker records them)[/]"
            )
            return
        kept = Table(
            title="Flight recorders (topic _configctl_metadata)", title_justify="left", show_edge=False
        )
        for column in (
            "broker",
            "recorded to",
            "behind",
            "broker's metadata offset",
            "last seen",
            "problems",
        ):
            kept.add_column(column, justify="left" if column in ("last seen", "problems") else "right")
        for row in recorders:
            kept.add_row(
                str(row["broker_id"]),
                _count(row.get("recorded_to")),
                _count(row.get("behind")),
                _count(row.get("broker_offset")),
                _when(row.get("time_ms")),
                safe("; ".join(row.get("problems") or ())) or "-",
            )
        out.print(kept)


def _not_applied(items: object) -> str:
    """The keys a broker holds but refused to apply, for the table (``-`` when none; ``?`` unknown)."""
    if items is None:
        return "?"
    if not isinstance(items, list) or not items:
        return "-"
    return "[red]" + safe(", ".join(str(i.get("key")) for i in items)) + "[/]"


def _count(value: object) -> str:
    return "" if value is None else str(value)


def _figures(broker: fleet.BrokerStatus) -> str:
    """Whether the broker's figures were asked of the broker itself or computed by configctl."""
    return fleet.figures(broker.truth, broker.observed_change)


def _not_live(broker: fleet.BrokerStatus) -> str:
    return "[red]down (not registered)[/]" if broker.truth == fleet.NOT_REGISTERED else "[red]no[/]"


def _metadata_line(metadata: MetadataOwner) -> str:
    """One line: who owns the metadata and whether configctl writes (red when it refuses)."""
    if metadata.writable:
        return f"Metadata: {metadata.owner}: {safe(metadata.detail)}; configctl writes"
    return f"[red]Metadata: {metadata.owner}[/]: {safe(metadata.detail)}; configctl refuses writes (exit 14)"


def _when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S")


@click.command()
@click.option(
    "--broker", "broker_id", type=click.IntRange(min=0), metavar="ID", help="One broker, with every problem."
)
@global_options
def status(broker_id: int | None) -> None:
    """Show every broker: live or not, the change it applied, how far behind, and its problems.

    \b
      configctl status
      configctl status --broker 2          # every problem with its reason
      configctl status -o json
    """
    with open_store() as store:
        document = status_of(store, broker_id)  # the one place that chooses, by the store's capabilities
        phase = _migration_phase(store)
    if isinstance(document, ReportedStatus):
        if broker_id is not None and document.broker(broker_id) is None:
            raise NotFound(f"broker {broker_id} is not registered in this KRaft cluster")
        show(WithPhase(ReportedView(document.cluster, document.answers, document.metadata, broker_id), phase))
        return
    if broker_id is not None and document.status.broker(broker_id) is None:
        raise NotFound(
            f"broker {broker_id} is not known (no listener state, fleet record or Kafka registration)"
        )
    show(WithPhase(StatusView(document.status, broker_id), phase))


def _migration_phase(store: ConfigStore) -> Phase | None:
    """The migration's phase (``migration status``'s) when one is under way: ZooKeeper shows a
    migration, or a Kafka 3.9 KRaft cluster (the only line a migration leads to) is not yet
    finalized. None otherwise, and the document is as it always was."""
    owner = store.metadata_owner()
    if owner.read_in_zookeeper:
        return witness(owner) if owner.owner == MIGRATING else None
    if store.kafka_release() not in ("3.9", "3.x"):
        return None
    phase = witness()
    return None if phase.name == KRAFT_PHASE else phase


@dataclass
class WithPhase:
    """A status view and, during a migration, its phase: first line for people, ``migration`` in JSON."""

    view: StatusView | ReportedView
    phase: Phase | None

    def to_json(self) -> Any:
        document = self.view.to_json()
        if self.phase is not None:
            document["migration"] = self.phase.to_json()
        return document

    def render(self, out: Console) -> None:
        if self.phase is not None:
            certain = "" if self.phase.certain else " (not certain)"
            out.print(f"Migration: {self.phase.name}{certain}: {safe(self.phase.detail)}")
        self.view.render(out)


@click.command()
@click.argument("broker_id", type=click.IntRange(min=0), metavar="BROKER_ID")
@global_options
def retire(broker_id: int) -> None:
    """Forget a decommissioned broker, so status and --wait stop counting it as down.

    A broker whose listener stopped stays known from its record (/configctl/fleet/ID), and every
    --wait names it as not applied until it comes back. Retire it once it is gone for good.
    Refused while its listener runs or Kafka registers it; a listener started again brings it back.

    \b
      configctl retire 7
    """
    with open_store() as store:
        forgotten = fleet.retire(store, broker_id)
    if not forgotten:
        raise NotFound(f"broker {broker_id} has no record to retire (no listener ever ran for it here)")
    note(f"Retired broker {broker_id}: status and --wait no longer count it.")
