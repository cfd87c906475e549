"""``configctl snapshot``: snapshot lines for every broker of a running cluster, from the brokers.

Wiring only: the brokers are asked by :mod:`configctl.brokersnapshot` through the Admin API
(``--bootstrap-server``, ``--command-config``), and the result is shown by :mod:`cli.render`.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from configctl import brokersnapshot
from configctl.adminapi.client import KafkaAdmin
from configctl.cli.options import global_options, settings
from configctl.cli.render import safe, show


class SnapshotView(brokersnapshot.FleetSnapshot):
    """The document ``snapshot`` prints (its JSON is the feature's own)."""

    def render(self, out: Console) -> None:
        for broker in self.brokers:
            out.print(f"broker {broker.broker_id}: {broker.lines} lines -> {safe(str(broker.path))}")
        out.print(
            f"Wrote {sum(b.lines for b in self.brokers)} lines for {len(self.brokers)} broker(s) to "
            f"{safe(str(self.out))}; audit them with: configctl audit --snapshots {safe(str(self.out))}"
        )


@click.command()
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Directory for broker-<id>.jsonl (each replaced atomically).",
)
@global_options
def snapshot(out: Path) -> None:
    """Ask every broker (--bootstrap-server) what it runs and write its snapshot lines for the audit.

    \b
      configctl snapshot --bootstrap-server kafka1:9092 --out snapshots/
      configctl audit --snapshots snapshots/
    """
    bootstrap, command_config = settings().kafka_admin_target()
    with KafkaAdmin(bootstrap, command_config) as admin:
        taken = brokersnapshot.capture(admin, out)
    show(SnapshotView(taken.out, taken.captured_at_ms, taken.brokers))
