"""``configctl serve``: the fleet console (docs/console.md), wiring only.

Parses where to listen and the token, opens the store the global options describe (the same
connection settings, profile, TLS and SASL as every command: :func:`configctl.cli.context.open_store`),
starts the one watch hub and hands everything to :mod:`configctl.console.app` under uvicorn, with
the limits that keep clients without the token from starving it (:class:`~configctl.console.security.Limits`).
Bad input is one line: a ``--bind`` that is not ``HOST:PORT``, an address other than loopback
without a token, or ``--allow-actions`` without a token, exits 2 (a usage error); a port that is
taken, 7.

``--allow-actions`` is the one way the console writes: it opens a second store, whose identity is
the first's plus ``via console`` (:mod:`configctl.console.actions`), and every action must carry
the token, even on loopback. Without it the console stays read-only.

A store without watches (``--bootstrap-server`` naming a KRaft cluster) is polled
(:mod:`configctl.console.polling`): the hub is handed a way to open the same store anew for each
poll and each page's own read (:func:`configctl.cli.context.new_store`, the one place a store is
chosen). ``--allow-actions`` is refused in one line on a store that keeps no rollout records:
its one action aborts a rollout.
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import click
import uvicorn

from configctl.cli.context import new_store, open_store
from configctl.cli.options import global_options, settings
from configctl.console.actions import Actions, console_identity
from configctl.console.app import create_app
from configctl.console.documents import AuditFile
from configctl.console.fanout import Fanout
from configctl.console.hub import WatchHub
from configctl.console.security import BadBind, Bind, Limits, check_token, parse_bind, quiet_floods
from configctl.errors import EnvironmentProblem, one_line
from configctl.files import read_text
from configctl.settings import BY_NAME, environment_value
from configctl.store import ConfigStore

TOKEN_SETTING = "serve-token"
TOKEN_VARIABLE = BY_NAME[
    TOKEN_SETTING
].env  # CONFIGCTL_SERVE_TOKEN, registered so `configctl config` lists it


def _token(token_file: str | None) -> str | None:
    """The bearer token: from the file, else the environment (never argv: ``ps`` shows argv)."""
    if token_file is not None:
        return check_token(read_text(token_file, "the token file"), token_file)
    given = environment_value(TOKEN_SETTING)
    if given:
        return check_token(given, TOKEN_VARIABLE)
    return None


def _listen(where: Bind, backlog: int) -> socket.socket:
    """The listening socket, bound here so a taken port is one line (exit 7), not a server's traceback."""
    family = socket.AF_INET6 if ":" in where.host else socket.AF_INET
    try:
        return socket.create_server((where.host, where.port), family=family, backlog=backlog)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot listen on {where.host}:{where.port}: {one_line(exc.strerror or exc)}"
        ) from None


@contextmanager
def _actions(allowed: bool, store: ConfigStore) -> Iterator[Actions | None]:
    """The actions' own store (``--allow-actions``), writing as ``<identity> via console``; else None.

    A store of its own so the history names the console, while the read store the watch hub
    shares keeps the operator's plain identity and never writes.
    """
    if not allowed:
        yield None
        return
    store.capabilities.require(
        "rollout_records", what="serve --allow-actions (the console's one action aborts a rollout)"
    )
    with open_store(reason_identity=console_identity(store.identity)) as acting:
        yield Actions(acting)


class _Server(uvicorn.Server):
    """uvicorn's server, ending every ``/events`` stream as soon as it is told to stop: a browser
    never leaves on its own, and the stop must not wait for it."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit
        self.stopped_by: int | None = None
        """The signal that stopped it (None: not stopped by one)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopped_by = sig
        self._on_exit()
        super().handle_exit(sig, frame)


@click.command()
@click.option(
    "--bind",
    default="127.0.0.1:8642",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen. Any address but loopback needs a token (--token-file or $CONFIGCTL_SERVE_TOKEN).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A bearer token every request must carry (Authorization: Bearer ...); else $CONFIGCTL_SERVE_TOKEN. "
    "On loopback with --allow-actions, only the actions.",
)
@click.option(
    "--audit-json",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The audit's JSON document (configctl audit --json-file) for the Drift page; re-read when it changes.",
)
@click.option(
    "--allow-actions",
    is_flag=True,
    help="Let the Rollouts page abort a rollout (as configctl rollout abort, recorded as your identity "
    "'via console'); every action needs the token, even on loopback. Without it the console is read-only.",
)
@global_options
def serve(bind: str, token_file: str | None, audit_json: str | None, allow_actions: bool) -> None:
    """Serve the fleet console: a live, read-only web view of what every broker runs.

    With --allow-actions (and a token) its Rollouts page may also abort a rollout.

    \b
      configctl serve                                   # http://127.0.0.1:8642/
      configctl serve --audit-json audit.json
      CONFIGCTL_SERVE_TOKEN=... configctl serve --bind 0.0.0.0:8642
      configctl serve --allow-actions --token-file ~/.config/configctl/console.token
    """
    try:
        where = parse_bind(bind)
        token = _token(token_file)
    except BadBind as exc:
        raise click.UsageError(str(exc)) from None
    if not where.loopback and token is None:
        raise click.UsageError(
            f"--bind {bind} is not a loopback address: serving beyond this machine needs a token "
            f"(--token-file FILE or {TOKEN_VARIABLE})"
        )
    if allow_actions and token is None:
        raise click.UsageError(
            f"--allow-actions needs a token (--token-file FILE or {TOKEN_VARIABLE}): every action must "
            "carry it, even on loopback"
        )
    audit = None
    if audit_json is not None:
        audit = AuditFile(audit_json)
        audit.document()  # a file that is not an audit document is refused now, in one line
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("configctl.console.actions").setLevel(logging.INFO)  # every action, on stderr
    fanout = Fanout()
    limits = Limits.for_this_process()
    ctx = click.get_current_context()  # the polling hub opens stores on its own thread

    def reopen() -> ConfigStore:
        """The same store anew (polled, KRaft: nothing it read before is taken for the present)."""
        return new_store(ctx, history_limit=settings(ctx).history_limit)

    with (
        _listen(where, limits.backlog) as listening,
        open_store() as store,
        _actions(allow_actions, store) as actions,
    ):
        hub = WatchHub(
            store,
            reopen=reopen,
            on_moved=lambda topic, version: fanout.publish(topic, {"topic": topic, "version": version}),
            on_problem=lambda problem: fanout.publish("problem", {"topic": "problem", "problem": problem}),
        )
        hub.start()
        try:
            app = create_app(
                store, hub, fanout, token=token, loopback_only=where.loopback, audit=audit, actions=actions
            )
            port = listening.getsockname()[1]
            if actions is not None:
                pages = "pages: loopback only" if where.loopback else "every request needs the bearer token"
                guard = f"actions allowed with the bearer token, as {actions.identity}; {pages}"
            else:
                guard = "read-only; " + ("every request needs the bearer token" if token else "loopback only")
            if hub.poll is not None:
                guard += f"; {store.kind}: no watches, asked again every {hub.poll:g} s"
            click.echo(f"configctl console on {where.url(port)} ({guard}); Ctrl-C stops it", err=True)
            config = uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=2,
                **limits.uvicorn_options(),
            )
            quiet_floods()  # after uvicorn's Config, which sets its loggers up
            server = _Server(config, on_exit=fanout.close)
            server.run(sockets=[listening])
            if server.stopped_by == signal.SIGINT:
                # uvicorn raises Ctrl-C again once it has stopped, but asyncio's runner, ending its
                # loop at that moment, can take it for its own and return: exit 130 all the same
                raise KeyboardInterrupt

        finally:
            hub.stop()
