"""``configctl alter``: add or delete dynamic configs of one entity, validated and atomic."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console

from configctl import fleet, writer
from configctl.cli import completion
from configctl.cli.context import open_store, passwords_in_clear
from configctl.cli.entity_options import EntityCommand, entity_options, pop_selection, select
from configctl.cli.options import environment_option, environment_variable, global_options, settings
from configctl.cli.render import change_phrase, diff_json, diff_table, entity_label, safe, show_written
from configctl.cli.rollout_options import canary_options, requested
from configctl.cli.waiting import follow, follow_unchanged, raise_for_wait, wait_option
from configctl.configparse import added_configs, parse_delete_config
from configctl.entities import Entity
from configctl.errors import InvalidInput, printable
from configctl.store import ConfigStore


@click.command(cls=EntityCommand)
@entity_options
@click.option(
    "--add-config",
    "add_config",
    metavar="K=V,K2=[A,B]",
    help="Configs to set (kafka-configs.sh syntax).",
    shell_complete=completion.complete_add_config,
)
@click.option(
    "--add-config-file",
    type=click.Path(dir_okay=False),
    metavar="FILE.properties",
    help="Configs to set, from a Java properties file (instead of --add-config).",
)
@click.option(
    "--delete-config",
    metavar="K1,K2",
    help="Configs to remove; each must be set.",
    shell_complete=completion.complete_delete_config,
)
@click.option("--dry-run", is_flag=True, help="Validate and show the diff; write nothing.")
@click.option(
    "--replace",
    is_flag=True,
    help="Write exactly the configs given as the entity's whole config, whatever is stored (repairs a "
    "node that is not a Kafka config; asks first for such a node, unless --yes).",
)
@click.option("--yes", "-y", is_flag=True, help="With --replace: overwrite a corrupt node without asking.")
@click.option("--if-version", type=int, metavar="V", help="Write only if the config node is at version V.")
@click.option(
    "--allow-custom-config",
    is_flag=True,
    help="Accept broker keys the schema does not know (a plugin's own config).",
)
@environment_option(
    "--password-encoder-secret",
    setting="password-encoder-secret",
    metavar="SECRET",
    help="The brokers' password.encoder.secret, to store password configs encrypted "
    f"(env {environment_variable('password-encoder-secret')}).",
)
@click.option(
    "--allow-running-brokers",
    is_flag=True,
    help="Write broker configs even while Kafka brokers are registered in /brokers/ids "
    "(Kafka's ZooKeeper path refuses it: the running broker's own validation is skipped).",
)
@click.option("--reason", default="", metavar="TEXT", help="Why; recorded in the entity's history.")
@wait_option
@canary_options
@global_options
@click.pass_context
def alter(ctx: click.Context, **kwargs: Any) -> None:
    """Set or delete dynamic configs of one entity.

    The config node and its change notification are written in one ZooKeeper transaction,
    checked against the node's version; a concurrent change is re-read and the change
    re-applied. Examples:

    \b
      configctl alter --topic orders --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]'
      configctl alter --user alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=s3cret]'
      configctl alter --user-defaults --client app1 --add-config consumer_byte_rate=2048
      configctl alter --broker-defaults --delete-config log.retention.ms
    """
    selection = select(ctx, pop_selection(kwargs))
    entity = selection.entity
    assert entity is not None
    added = added_configs(kwargs["add_config"], kwargs["add_config_file"])
    deleted = parse_delete_config(kwargs["delete_config"]) if kwargs["delete_config"] is not None else []
    if not added and not deleted and not kwargs["replace"]:
        raise InvalidInput("nothing to change: give --add-config, --add-config-file or --delete-config")

    def prepared(release: str | None = None) -> writer.ConfigChange:
        return writer.prepare_change(
            entity,
            added,
            deleted,
            allow_custom=kwargs["allow_custom_config"],
            password_secret=kwargs["password_encoder_secret"],
            replace=kwargs["replace"],
            passwords_in_clear=passwords_in_clear(),
            release=release,
        )

    reason = kwargs["reason"] or settings().reason
    if requested():  # --canary: a rollout (configctl/rollout/canary.py)
        from configctl.cli.rollout import canary_alter

        return canary_alter(entity, prepared(), reason, kwargs)
    # Without --bootstrap-server the cluster is ZooKeeper mode (Kafka 3.9): bad input fails before
    # any connection is opened. With it, the cluster says which Kafka it runs, and its rules apply.
    through_brokers = passwords_in_clear()
    change = None if through_brokers else prepared()
    with open_store() as store:
        if change is None:
            change = prepared(store.kafka_release())
        if_version = kwargs["if_version"]
        if kwargs["replace"] and not kwargs["dry_run"]:
            if_version = _confirm_replace(store, entity, if_version, yes=kwargs["yes"])
        result = writer.alter(
            store,
            entity,
            change,
            if_version=if_version,
            dry_run=kwargs["dry_run"],
            allow_custom=kwargs["allow_custom_config"],
            reason=reason,
            allow_running_brokers=kwargs["allow_running_brokers"],
        )
        committed = [result.committed] if result.committed is not None else []
        view = AlterView(result, dry_run=kwargs["dry_run"])

        def brokers_answer() -> None:
            if committed:
                view.rollout = follow(store, committed, kwargs["wait"])
            else:  # nothing written: where the fleet stands with what was asked
                view.rollout = follow_unchanged(store, [result.entity], kwargs["wait"])

        following = kwargs["wait"] is not None and not kwargs["dry_run"]
        show_written([result.entity] if committed else [], view, follow=brokers_answer if following else None)
    if view.rollout is not None:
        raise_for_wait(view.rollout, kwargs["wait"])


def _confirm_replace(store: ConfigStore, entity: Entity, if_version: int | None, *, yes: bool) -> int | None:
    """Overwriting a node that is not a Kafka config is confirmed explicitly; the write is then held
    to the version that was confirmed (a node that moved meanwhile is not overwritten)."""
    current = store.read(entity, strict=False)
    if current.problem is None:
        return if_version
    question = f"{entity.znode} is not a Kafka config node ({current.problem}). Overwrite it?"
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"{question} Pass --yes to confirm (not on a terminal); nothing written")
        if not click.confirm(printable(question), default=False, err=True):
            raise InvalidInput("replace cancelled; nothing was written")
    return current.version if if_version is None else if_version


@dataclass
class AlterView:
    """What ``alter`` did (or would do with ``--dry-run``), and what the brokers did with it."""

    result: writer.AlterResult
    dry_run: bool
    rollout: fleet.WaitResult | None = None

    def to_json(self) -> dict[str, Any]:
        result, entity = self.result, self.result.entity
        document = {
            "entity_type": entity.type.value,
            "entity_name": entity.name,
            "entity_path": entity.path,
            "dry_run": self.dry_run,
            "changed": result.changed,
            "version_before": result.before.version if result.before.exists else None,
            "version": result.committed.version if result.committed else None,
            "change_number": result.committed.change_number if result.committed else None,
            "changes": diff_json(entity, result.diff),
        }
        if self.rollout is not None:
            document["rollout"] = self.rollout.to_json()
        return document

    def render(self, out: Console) -> None:
        result, entity = self.result, self.result.entity
        label = safe(entity_label(entity))
        if not result.changed:
            out.print(f"No change: {label} already has these configs.")
            return
        title = f"{'Would change' if self.dry_run else 'Changed'} {label} ({safe(entity.path)})"
        out.print(diff_table(entity, result.diff, title=title))
        if self.dry_run:
            out.print("Dry run: nothing written.")
        elif result.committed is not None:
            version = (
                "deleted (empty)" if result.committed.version < 0 else f"version {result.committed.version}"
            )
            out.print(
                f"Completed updating config for {label}: {version}{change_phrase(result.committed.change_number)}."
            )
