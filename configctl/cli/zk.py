"""``configctl zk start|status|stop``: run a real ZooKeeper on this machine.

Thin on purpose: :mod:`configctl.localzk` does the work; this module parses, and shows what
happened through :mod:`.render`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from configctl.cli.options import global_options
from configctl.cli.render import show
from configctl.errors import InvalidInput, NotFound
from configctl.localzk import ClientSettings, LocalZooKeeper, NodeStatus, ServerStatus, default_data_dir
from configctl.localzk.client import ENV_FILE
from configctl.localzk.sasl import DEFAULT_USER

_DATA_DIR_HELP = "Directory that holds the server's data, logs and state; it identifies the server."


def _data_dir_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"{_DATA_DIR_HELP}  [default: {default_data_dir()}]",
    )(func)


@click.group()
@global_options
def zk() -> None:
    """Run a real ZooKeeper (one server or a 3-node ensemble) on this machine.

    The server runs in the background from pyspark's ZooKeeper jars (Java 17+ needed) and
    keeps running after this command returns; `configctl zk stop` ends it. `zk start --tls --sasl`
    runs it secured, as production ZooKeepers are.
    """


@zk.command()
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Client port.  [default: the port DATA_DIR's server was last started on, else 2181]",
)
@_data_dir_option
@click.option(
    "--nodes",
    type=click.Choice(["1", "3"]),
    default=None,
    help="1 for a single server; 3 for an ensemble on ports PORT, PORT+1, PORT+2.  "
    "[default: as last started, else 1]",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the server to answer.",
)
@click.option(
    "--tls/--no-tls",
    default=None,
    help="Serve clients over TLS only (a self-signed CA and certificates under DATA_DIR/tls); "
    "plain-text clients are refused.  [default: as last started, else off]",
)
@click.option(
    "--sasl/--no-sasl",
    default=None,
    help="Require clients to log in with SASL DIGEST-MD5 (one user, a random password in "
    "DATA_DIR/sasl/password); unauthenticated sessions are closed.  [default: as last started, else off]",
)
@click.option(
    "--sasl-user",
    default=None,
    metavar="NAME",
    help=f"The SASL user with --sasl.  [default: as last started, else {DEFAULT_USER}]",
)
@global_options
def start(
    port: int | None,
    data_dir: Path | None,
    nodes: str | None,
    timeout: float,
    tls: bool | None,
    sasl: bool | None,
    sasl_user: str | None,
) -> None:
    """Start ZooKeeper in the background and print how to connect to it.

    DATA_DIR is the server's identity: started again with no other option, it comes back on the
    same port, with the same size, TLS and SASL user (an option given changes that part).
    """
    if sasl_user is not None and sasl is False:
        raise InvalidInput("--sasl-user needs --sasl")
    server = LocalZooKeeper(
        data_dir,
        port=port,
        nodes=int(nodes) if nodes else None,
        tls=tls,
        sasl=sasl,
        sasl_user=sasl_user,
    )
    show(Started(server.start(timeout=timeout)))


@dataclass(frozen=True)
class Started:
    """A server just started: where it runs and how to connect to it."""

    status: ServerStatus

    @property
    def client(self) -> ClientSettings:
        return self.status.client or ClientSettings(self.status.connect_string or "")

    def to_json(self) -> dict[str, Any]:
        status, client = self.status, self.client
        return {
            "connect": status.connect_string,
            "data_dir": str(status.data_dir),
            "nodes": [node.to_json() for node in status.nodes],
            "tls": client.tls,
            "sasl": client.sasl,
            "client": {**client.to_json(), "env_file": str(status.data_dir / ENV_FILE)},
        }

    def render(self, out: Console) -> None:
        status, client = self.status, self.client
        count = len(status.nodes)
        secured = " and ".join(name for name, on in (("TLS", client.tls), ("SASL", client.sasl)) if on)
        out.print(
            f"Started ZooKeeper ({count} node{'s' if count > 1 else ''}"
            f"{f', {secured}' if secured else ''}) in {status.data_dir}"
        )
        out.print(f"connect string: {status.connect_string}")
        if not secured:
            out.print(f"use it with:    export CONFIGCTL_ZOOKEEPER={status.connect_string}")
            return
        for line in _secured_hints(client, status.data_dir / ENV_FILE):
            out.print(line, markup=False)


@zk.command()
@_data_dir_option
@global_options
def status(data_dir: Path | None) -> None:
    """Show whether the server started from DATA_DIR runs (exit 0) or not (exit 6)."""
    current = LocalZooKeeper(data_dir).status()
    if not current.running:
        raise NotFound(_not_running(current))
    show(Running(current))


@dataclass(frozen=True)
class Running:
    """A server that runs: its nodes, how to connect, whether it is secured."""

    status: ServerStatus

    def to_json(self) -> dict[str, Any]:
        return self.status.to_json()

    def render(self, out: Console) -> None:
        current = self.status
        alive = sum(node.alive for node in current.nodes)
        out.print(
            f"ZooKeeper in {current.data_dir}: running, {alive}/{len(current.nodes)} "
            f"node{'s' if len(current.nodes) > 1 else ''} alive, started {current.started_at}"
        )
        out.print(f"connect string: {current.connect_string}")
        sasl = f"on (user {current.client.sasl_user})" if current.client and current.client.sasl else "off"
        out.print(f"TLS: {'on' if current.tls else 'off'}, SASL: {sasl}")
        out.print(_node_table(current.nodes))


@zk.command()
@_data_dir_option
@global_options
def stop(data_dir: Path | None) -> None:
    """Stop the server(s) started from DATA_DIR; the data stays for the next start.

    Stopping when nothing runs is not an error (exit 0), so scripts can always clean up.
    """
    server = LocalZooKeeper(data_dir)
    stopped = server.stop()
    show(Stopped(server.data_dir, tuple(stopped)))


@dataclass(frozen=True)
class Stopped:
    """The nodes stopped (none when nothing ran)."""

    data_dir: Path
    nodes: tuple[NodeStatus, ...]

    def to_json(self) -> dict[str, Any]:
        stopped = [{"id": node.id, "pid": node.pid, "port": node.client_port} for node in self.nodes]
        return {"data_dir": str(self.data_dir), "stopped": stopped}

    def render(self, out: Console) -> None:
        if not self.nodes:
            out.print(f"Nothing to stop: no ZooKeeper started by configctl runs in {self.data_dir}")
            return
        pids = ", ".join(f"{node.pid} (port {node.client_port})" for node in self.nodes)
        out.print(f"Stopped ZooKeeper in {self.data_dir}: pid {pids}")


def _secured_hints(client: ClientSettings, env_file: Path) -> list[str]:
    """The client options to connect, the password's file, and the env file: one line each.

    Each line is printed whole (never wrapped), so it can be copied into a shell.
    """
    lines = [f"client options: {shlex.join(client.options())}"]
    if client.sasl_password_file is not None:
        lines.append(
            f"SASL password:  export CONFIGCTL_ZK_SASL_PASSWORD_FILE={shlex.quote(str(client.sasl_password_file))}"
        )
    if client.client_cert_options():
        lines.append(f"client cert:    {shlex.join(client.client_cert_options())} (optional)")
    lines.append(f"or all at once: set -a; . {shlex.quote(str(env_file))}; set +a")
    return lines


def _not_running(status: ServerStatus) -> str:
    if status.nodes:
        return (
            f"ZooKeeper in {status.data_dir} is not running (its processes are gone; "
            f"see {status.nodes[0].log_file})"
        )
    return f"no ZooKeeper started by configctl is running in {status.data_dir}"


def _node_table(nodes: tuple[NodeStatus, ...]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("node", "pid", "port", "alive", "mode", "log"):
        table.add_column(column, overflow="fold")
    for node in nodes:
        table.add_row(
            str(node.id),
            str(node.pid),
            str(node.client_port),
            "yes" if node.alive else "[red]no[/red]",
            node.mode or "-",
            str(node.log_file),
        )
    return table
