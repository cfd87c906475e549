"""``configctl migration status`` and ``migration check``: the ZooKeeper-to-KRaft migration, witnessed.

Thin: the phase is :mod:`configctl.migrationphase`'s decision and the proof
:mod:`configctl.migrationcheck`'s; this asks the witnesses (ZooKeeper through its store, each
node through :mod:`configctl.adminapi.nodemodes`, the KRaft side through the KRaft store) and
renders the documents. Both commands read; neither writes anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from configctl import catalogue
from configctl.cli.context import connection_settings, quiet_libraries
from configctl.cli.options import bootstrap_controller, global_options, settings
from configctl.cli.render import safe, show
from configctl.errors import InvalidInput

if TYPE_CHECKING:
    from rich.console import Console

    from configctl.kraft.store import KRaftStore
    from configctl.migration import MetadataOwner
    from configctl.migrationcheck import Proof
    from configctl.migrationphase import Phase
    from configctl.zkconnection import ConnectionSettings

DIFFERENT_EXIT_CODE = 2
"""``migration check`` found a difference: on purpose, as ``plan`` and ``audit --fail-on-drift``."""


@click.group("migration")
def migration() -> None:
    """Carry a cluster from ZooKeeper to KRaft: where it is, and whether KRaft holds what ZooKeeper held."""


def _zookeeper_wanted() -> bool:
    """ZooKeeper is asked when it was named, or when nothing else was (its default address)."""
    chosen = settings()
    return chosen.zookeeper_explicit or chosen.bootstrap_server is None


def _owner() -> MetadataOwner:
    from configctl.zk.configstore import ZooKeeperStore

    with ZooKeeperStore.connect(connection_settings()) as store:
        return store.metadata_owner()


def witness(owner: MetadataOwner | None = None) -> Phase:
    """Ask every witness given (ZooKeeper, the brokers, the controllers) and decide the phase;
    ``owner``: what ZooKeeper already said (a caller that read it), not asked again."""
    from configctl.migrationphase import decide

    quiet_libraries()
    chosen = settings()
    if owner is None and _zookeeper_wanted():
        owner = _owner()
    brokers: dict[int, Any] = {}
    controllers: dict[str, Any] = {}
    controller_option = bootstrap_controller()
    if chosen.bootstrap_server is not None or controller_option is not None:
        from configctl.adminapi.nodemodes import (
            broker_answers,
            broker_quorum,
            controller_answers,
            quorum_addresses,
        )

        timeout = chosen.connection().timeout
        addresses = quorum_addresses(controller_option) if controller_option else []
        if chosen.bootstrap_server is not None:
            from configctl.adminapi.client import KafkaAdmin

            with KafkaAdmin(chosen.bootstrap_server, chosen.command_config, timeout=timeout) as admin:
                brokers = broker_answers(admin)
                if not addresses:
                    addresses = broker_quorum(admin, sorted(brokers))
        controllers = controller_answers(addresses, chosen.command_config, timeout)
    return decide(owner, brokers, controllers)


def _kraft_side(otherwise: str) -> tuple[KRaftStore, ConnectionSettings]:
    """The KRaft store of the brokers at --bootstrap-server (not opened) and ZooKeeper's connection
    settings; a one-line error ending in ``otherwise`` when the brokers still run ZooKeeper mode."""
    from configctl.kraft.choice import kraft_store

    quiet_libraries()
    bootstrap, command_config = settings().kafka_admin_target()
    connection = connection_settings()
    store = kraft_store(bootstrap, command_config, zookeeper=None, timeout=connection.timeout)
    if store is None:
        raise InvalidInput(f"the brokers at {bootstrap} {otherwise}")
    return store, connection


@dataclass
class PhaseView:
    phase: Phase

    def to_json(self) -> dict[str, Any]:
        return self.phase.to_json()

    def render(self, out: Console) -> None:
        from rich.table import Table

        phase = self.phase
        certain = "" if phase.certain else " (not certain)"
        out.print(f"Migration phase: [bold]{phase.name}[/bold]{certain}")
        out.print(safe(phase.detail))
        if phase.brokers or phase.controllers:
            table = Table(show_edge=False)
            for column in ("node", "role", "runs", "problem"):
                table.add_column(column)
            for node_id, answer in sorted(phase.brokers.items()):
                table.add_row(str(node_id), "broker", answer.mode, safe(answer.problem or ""))
            for address, answer in sorted(phase.controllers.items()):
                table.add_row(safe(address), "controller", answer.mode, safe(answer.problem or ""))
            out.print(table)
        if phase.next_step:
            out.print(f"Next: {safe(phase.next_step)}")


@migration.command(
    "status",
    epilog="Exit status: 0 whatever the phase; 3 when ZooKeeper or Kafka cannot be reached.",
)
@global_options
def status() -> None:
    """Name the migration's phase: zookeeper, migrating, dual-write or kraft.

    Asks ZooKeeper (/controller, /migration) when it is named (or nothing else is), every broker at
    --bootstrap-server (does it run KRaft? in migration mode?) and the controllers they run with
    (or --bootstrap-controller): still writing to ZooKeeper, or finalized.

    \b
      configctl --zookeeper zk1:2181 --bootstrap-server kafka1:9092 migration status
    """
    show(PhaseView(witness()))


@dataclass
class ProofView:
    proof: Proof
    zookeeper: str
    kraft: str
    read_from: str
    """Who reported the KRaft side: ``brokers``, or ``controllers`` while a broker runs ZooKeeper mode."""

    def to_json(self) -> dict[str, Any]:
        return {
            "zookeeper": self.zookeeper,
            "kraft": self.kraft,
            "kraft_read_from": self.read_from,
            **self.proof.to_json(),
        }

    def render(self, out: Console) -> None:
        from configctl.migrationcheck import FAMILIES

        proof = self.proof
        for line in proof.unchecked:
            out.print(f"not checked: {safe(line)}")
        for difference in proof.differences:
            out.print(f"different: {safe(difference.line)}")
        counts = ", ".join(
            f"{family} {proof.compared[family]}" for family in FAMILIES if proof.compared[family]
        )
        verdict = "equal" if proof.equal else f"{len(proof.differences)} difference(s)"
        via = "" if self.read_from == "brokers" else " (its controllers)"
        out.print(
            f"ZooKeeper {safe(self.zookeeper)} and KRaft {safe(self.kraft)}{via}: {verdict} "
            f"({counts or 'nothing stored'})"
        )


@migration.command(
    "check",
    epilog=(
        f"Exit status: 0 when the KRaft side holds exactly what ZooKeeper holds; {DIFFERENT_EXIT_CODE} "
        "when anything differs (one line per difference); 1 when the brokers are not being migrated; "
        "3 when ZooKeeper or Kafka cannot be reached."
    ),
)
@global_options
def check() -> None:
    """Prove the KRaft side holds exactly what ZooKeeper's /config holds, family by family.

    Compares topics, brokers, the broker <default>, every quota entity (users, clients, their pairs,
    IPs and their defaults) and SCRAM credentials (mechanism and iterations); secrets only by
    whether they are set, never printed. The KRaft side is what the brokers at --bootstrap-server
    report once they all run as KRaft brokers; before that (dual-write), what the KRaft controllers
    report (--bootstrap-controller, else the brokers' quorum): topics and the broker <default>, the
    other families listed as not checked. The gate before finalizing (docs/migration.md).

    \b
      configctl --zookeeper zk1:2181 --bootstrap-server kafka1:9092 migration check
    """
    from configctl.entities import EntityType
    from configctl.kraft.migratingside import read_side
    from configctl.kraft.store import OWN_TOPICS
    from configctl.migrationcheck import compared_types, prove
    from configctl.zk.configstore import ZooKeeperStore

    store, connection = _kraft_side(
        "run in ZooKeeper mode outside a migration, so there is no KRaft side to compare yet: run it once "
        "the brokers run in migration mode (docs/migration.md, step 3)"
    )
    bootstrap = store.bootstrap
    with ZooKeeperStore.connect(connection) as zookeeper:
        ours = [s for t in compared_types() for s in zookeeper.read_type(t, strict=False)]
        location = zookeeper.location
    topics = [s.entity.name for s in ours if s.entity.type is EntityType.TOPICS]
    with store:
        side = read_side(store, compared_types(), topics, bootstrap_controller())
    proof = prove(ours, side.stored, side.running_brokers, OWN_TOPICS, side.unread)
    show(ProofView(proof, location, bootstrap, side.read_from))
    if not proof.equal:
        raise SystemExit(DIFFERENT_EXIT_CODE)


@dataclass
class CarriedView:
    entities: int
    records: int
    sent: int
    bootstrap: str
    rollouts: int
    rollouts_sent: int
    applied: int
    applied_sent: int

    def to_json(self) -> dict[str, Any]:
        return {
            "entities": self.entities,
            "records": self.records,
            "sent": self.sent,
            "rollouts": self.rollouts,
            "rollouts_sent": self.rollouts_sent,
            "applied": self.applied,
            "applied_sent": self.applied_sent,
            "kraft": self.bootstrap,
        }

    def render(self, out: Console) -> None:
        already = self.records - self.sent
        out.print(
            f"Carried {self.sent} history record(s) of {self.entities} entities into the history topic of "
            f"{safe(self.bootstrap)}" + (f" ({already} were there already)" if already else "")
        )
        already = self.rollouts - self.rollouts_sent
        out.print(
            f"Carried {self.rollouts_sent} rollout record(s) into its rollout topic"
            + (f" ({already} were there already)" if already else "")
        )
        if self.applied:
            already = self.applied - self.applied_sent
            out.print(
                f"Carried {self.applied_sent} applied-log record(s) into its applied-log topic"
                + (f" ({already} were there already)" if already else "")
            )


@migration.command(
    "carry",
    epilog=(
        "Exit status: 0 when every record is in the cluster; 1, nothing carried, while a rollout is open or "
        "when an --applied-log directory holds no applied log; 3 when ZooKeeper or Kafka cannot be reached."
    ),
)
@click.option(
    "--applied-log",
    "applied_logs",
    multiple=True,
    metavar="DIR",
    help="A ZooKeeper-mode listener's --state-dir (or its applied/ directory): carry its applied log too. "
    "Repeatable.",
)
@global_options
def carry(applied_logs: tuple[str, ...]) -> None:
    """Carry configctl's history and rollout records from ZooKeeper into the KRaft cluster.

    Every history record ZooKeeper keeps (who, when, why, the values) goes into the cluster's
    _configctl_history topic as it is, and every rollout's record into _configctl_rollouts, so
    history, blame, --at, diff and rollout show answer across the migration once ZooKeeper is
    gone. Run it right after the brokers enter migration mode, before any write through them;
    what is there already is not sent again. Refused, nothing carried, while a rollout is open.
    With --applied-log, the listeners' applied logs go into _configctl_applied, so --at, blame and
    diff read what each broker ran before the migration from the cluster alone.

    \b
      configctl --zookeeper zk1:2181 --bootstrap-server kafka1:9092 migration carry
    """
    from configctl.kraft.rollouts import RolloutsOnKRaft
    from configctl.migrationcarry import applied_logs as read_applied_logs
    from configctl.migrationcarry import finished_rollouts, in_time_order
    from configctl.zk.configstore import ZooKeeperStore

    quiet_libraries()
    logged = read_applied_logs(applied_logs)  # every copy checked before anything is sent
    with ZooKeeperStore.connect(connection_settings()) as zookeeper:
        rollouts = finished_rollouts(zookeeper.rollouts.listing(), zookeeper.rollouts.load)
        grouped = zookeeper.histories(zookeeper.history_entities())
    records = in_time_order(grouped.values())
    store, _ = _kraft_side(
        "run in ZooKeeper mode outside a migration: configctl's history is still ZooKeeper's; carry it once "
        "the brokers run in migration mode (docs/migration.md, step 4)"
    )
    bootstrap = store.bootstrap
    with store:
        built = RolloutsOnKRaft.of(store)
        try:
            kraft_rollouts = built(store)
            documents = kraft_rollouts.to_carry(rollouts)  # refused here, before anything is sent
            sent = store.carry_history(records)
            rollouts_sent = kraft_rollouts.carry(documents)
            applied_sent = store.carry_applied(logged.each()) if logged.total else 0
        finally:
            built.close()
    show(
        CarriedView(
            len(grouped),
            len(records),
            sent,
            bootstrap,
            len(rollouts),
            rollouts_sent,
            logged.total,
            applied_sent,
        )
    )


@dataclass
class LintView:
    findings: list[Any]
    target: str
    entities: int

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "entities": self.entities,
            "clean": not self.findings,
            "findings": [f.to_json() for f in self.findings],
        }

    def render(self, out: Console) -> None:
        for finding in self.findings:
            out.print(f"{finding.kind}: {safe(finding.line)}")
        verdict = "nothing to fix" if not self.findings else f"{len(self.findings)} thing(s) to fix"
        out.print(f"Kafka {self.target} lint of {self.entities} topic and broker config(s): {verdict}")


@migration.command(
    "lint",
    epilog=(
        f"Exit status: 0 when nothing needs fixing; {DIFFERENT_EXIT_CODE} when something does (one line each); "
        "3 when ZooKeeper or Kafka cannot be reached."
    ),
)
@click.option(
    "--to",
    "target",
    type=click.Choice(catalogue.KAFKA4_RELEASES),
    default="4.4",
    show_default=True,
    help="The Kafka 4 release the cluster is going to.",
)
@global_options
def lint(target: str) -> None:
    """Find the stored configs Kafka 4 removes, refuses or keeps in clear, before the upgrade.

    Reads every topic and broker config (ZooKeeper's, or the cluster's with --bootstrap-server) and
    names, with what to do: keys Kafka 4 removed or renamed, values it refuses (segment.bytes below
    1 MiB), min.insync.replicas on one broker (refused with eligible leader replicas, 4.1+),
    per-broker configs of brokers that do not run, and passwords the migration will store in clear.

    \b
      configctl --zookeeper zk1:2181 migration lint --to 4.1
    """
    from configctl.cli.context import open_store
    from configctl.entities import EntityType
    from configctl.upgradelint import lint as lint_configs

    with open_store() as store:
        stored = [
            s for t in (EntityType.TOPICS, EntityType.BROKERS) for s in store.read_type(t, strict=False)
        ]
        running = store.running_brokers()
        in_zookeeper = store.metadata_owner().read_in_zookeeper
    configs = [(s.entity, s.config) for s in stored if s.exists]
    findings = lint_configs(configs, target=target, running_brokers=running, encrypted_passwords=in_zookeeper)
    show(LintView(findings, target, len(configs)))
    if findings:
        raise SystemExit(DIFFERENT_EXIT_CODE)
