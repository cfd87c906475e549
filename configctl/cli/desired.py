"""``configctl plan``, ``apply`` and ``export``: desired state as code (see docs/reference/desired-state-files.md).

Thin shells over :mod:`configctl.desired`: its ``document`` (files), ``plan`` (the diff),
``apply`` (the batched write) and ``export`` modules; what they print is shown by :mod:`.render`.
``plan`` exits 0 when the cluster already matches the file and 2 when it does not, so CI jobs can
branch on it as they do with other infrastructure tools.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from configctl import catalogue, secrets
from configctl.cli.context import open_store
from configctl.cli.options import environment_option, environment_variable, global_options, settings
from configctl.cli.render import (
    before_write,
    check_output,
    note,
    preview,
    progress_bar,
    safe,
    show,
    show_partial,
    show_written,
    warning,
)
from configctl.cli.rollout_options import requested, wave_options
from configctl.cli.waiting import follow, raise_for_wait, wait_option
from configctl.desired import apply as applying
from configctl.desired import document as desired_files
from configctl.desired import export as exporting
from configctl.desired import plan as plans
from configctl.desired import syntax
from configctl.entities import TYPE_ORDER, parse_entity_type
from configctl.errors import InvalidInput, printable
from configctl.files import replace_atomically
from configctl.interrupted import WriteInterrupted

PLAN_EXIT_CHANGES = 2
SUMMARY_AFTER_LINES = 1000
"""A text plan longer than this is shown as counts per entity type and action unless --full is given."""
_ENTITY_ACTION_WORDS = {"create": "created", "update": "updated", "clear": "emptied", "prune": "pruned"}
_MARKS = {"+": "[green]+[/]", "~": "[yellow]~[/]", "-": "[red]-[/]"}


def _file_options(func: Any) -> Any:
    options = [
        click.option(
            "-f",
            "--file",
            "file",
            required=True,
            metavar="FILE",
            help="The desired-state file (YAML, or JSON); - reads stdin.",
        ),
        click.option(
            "--prune",
            is_flag=True,
            help="Also remove the overrides of entities the file does not list "
            "(only for the entity types the file has a section for).",
        ),
        click.option(
            "--allow-custom-config",
            is_flag=True,
            help="Accept broker keys the schema does not know (a plugin's own config).",
        ),
        click.option(
            "--allow-running-brokers",
            is_flag=True,
            help="Write broker configs even while Kafka brokers are registered in /brokers/ids.",
        ),
        click.option(
            "--replace-corrupt",
            is_flag=True,
            help="Overwrite config nodes that are not Kafka configs (unreadable JSON) with what the file says.",
        ),
        environment_option(
            "--password-encoder-secret",
            setting="password-encoder-secret",
            metavar="SECRET",
            help="The brokers' password.encoder.secret; needed only for broker password configs "
            f"written in plain text in the file (env {environment_variable('password-encoder-secret')}).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _detail_options(func: Any) -> Any:
    """--summary / --full: how much of the plan the text output shows (JSON always has all of it)."""
    func = click.option(
        "--full",
        "detail",
        flag_value="full",
        help=f"Show every key of the plan, however long (by default past {SUMMARY_AFTER_LINES:,} lines "
        "only counts are shown).",
    )(func)
    return click.option(
        "--summary",
        "detail",
        flag_value="summary",
        help="Show counts per entity type and action instead of every key.",
    )(func)


def _encoder(secret: str | None) -> secrets.PasswordEncoder | None:
    return secrets.PasswordEncoder(secret) if secret else None


def _load(file: str, allow_custom: bool) -> tuple[desired_files.DesiredState, str]:
    raw, source = desired_files.read_source(file)
    return desired_files.parse_bytes(raw, source, allow_custom=allow_custom), plans.file_digest(raw)


@click.command()
@_file_options
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    metavar="PLAN.json",
    help="Also save the plan, so that apply --plan applies exactly it (or refuses if the state moved).",
)
@click.option(
    "--to-kafka",
    "to_kafka",
    type=click.Choice(catalogue.KAFKA4_RELEASES),
    default=None,
    help="Also lint the file's topic and broker configs against this Kafka 4 release (as migration lint does).",
)
@_detail_options
@global_options
def plan(
    file: str,
    prune: bool,
    allow_custom_config: bool,
    allow_running_brokers: bool,
    replace_corrupt: bool,
    password_encoder_secret: str | None,
    out: str | None,
    to_kafka: str | None,
    detail: str | None,
) -> None:
    """Show what apply would change: add / change / delete per key, per entity.

    Exit status 0 means the cluster already matches the file, 2 that there are changes.

    \b
      configctl plan -f cluster.yaml
      configctl plan -f cluster.yaml --prune --output json
      configctl plan -f cluster.yaml --out plan.json && configctl apply -f cluster.yaml --plan plan.json
    """
    desired, digest = _load(file, allow_custom_config)
    with open_store() as store:
        result = plans.make_plan(
            store,
            desired,
            prune=prune,
            encoder=_encoder(password_encoder_secret),
            allow_running_brokers=allow_running_brokers,
            replace_corrupt=replace_corrupt,
        )
    if out:
        replace_atomically(Path(out), syntax.json_text(result.saved(digest)))
    before_write(lambda: show(PlanView(result, detail)))
    if to_kafka is not None:
        from configctl.upgradelint import lint

        for finding in lint(desired.configs.items(), target=to_kafka):
            note(f"Kafka {to_kafka}: {finding.kind}: {finding.line}")
    if result.changed:
        sys.stdout.flush()
        sys.exit(PLAN_EXIT_CHANGES)


@click.command()
@_file_options
@click.option("--yes", "-y", is_flag=True, help="Apply without asking (needed when not on a terminal).")
@click.option("--reason", default="", metavar="TEXT", help="Why; recorded in each entity's history.")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    metavar="PLAN.json",
    help="A plan saved by plan --out: refuse if the file or the state changed since.",
)
@_detail_options
@wait_option
@wave_options
@global_options
def apply(
    file: str,
    prune: bool,
    allow_custom_config: bool,
    allow_running_brokers: bool,
    replace_corrupt: bool,
    password_encoder_secret: str | None,
    yes: bool,
    reason: str,
    plan_file: str | None,
    detail: str | None,
    wait: float | None,
) -> None:
    """Make ZooKeeper match the file, in batched atomic transactions.

    Shows the plan, asks for confirmation (unless --yes), then writes each entity's config,
    notification and history record with the version the plan saw. If anything moved since
    the plan was computed, nothing is written and apply says so. Running it again changes nothing.

    \b
      configctl apply -f cluster.yaml
      configctl apply -f cluster.yaml --prune --yes --reason "ticket OPS-42"
    """
    if not yes and not sys.stdin.isatty():
        raise InvalidInput("apply asks for confirmation: run it in a terminal, or pass --yes")
    check_output()
    desired, digest = _load(file, allow_custom_config)
    saved = plans.read_saved_plan(plan_file) if plan_file else None
    reason = reason or settings().reason or f"apply {Path(desired.source).name}"
    with open_store() as store:
        result = plans.make_plan(
            store,
            desired,
            prune=prune,
            encoder=_encoder(password_encoder_secret),
            allow_running_brokers=allow_running_brokers,
            reason=reason,
            replace_corrupt=replace_corrupt,
        )
        if saved is not None:
            plans.check_saved_plan(result, saved, file_digest=digest, source=str(plan_file))
        view = ApplyView(result, detail=detail)
        if not result.changed:
            before_write(lambda: show(view))
            return
        preview(view.render)  # the plan
        if not yes:
            counts = result.counts()
            question = (
                f"Apply {result.key_changes} changes ({counts['add']} to add, {counts['change']} to change, "
                f"{counts['delete']} to delete) to {len(result.entities)} entities?"
            )
            if not click.confirm(question, default=False, err=True):
                raise InvalidInput("apply cancelled; nothing was written")
        if requested():  # --waves: a rollout (configctl/rollout/waves.py)
            from configctl.cli.rollout import apply_in_waves

            return apply_in_waves(store, result, reason, wait)
        try:
            with progress_bar(len(result.entities), "applying", "entities") as advance:
                on_batch = (lambda batch: advance(len(batch))) if advance is not None else None
                view.applied = applying.apply_plan(store, result, reason=reason, on_batch=on_batch)
        except WriteInterrupted as stopped:
            view.stopped = stopped
            show_partial(view)  # the same lists for scripts; the error line follows on stderr
            raise
        applied = view.applied

        def brokers_answer() -> None:
            assert wait is not None
            view.rollout = follow(store, applied.committed, wait)

        following = wait is not None and bool(applied.committed)
        show_written(
            [c.entity for c in applied.committed],
            view,
            follow=brokers_answer if following else None,
            what="apply",
        )
    if view.rollout is not None and wait is not None:
        raise_for_wait(view.rollout, wait)


@dataclass
class PlanView:
    """A plan: its document, or the text of :func:`render_plan`."""

    plan: plans.Plan
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self.plan.to_json()

    def render(self, out: Console) -> None:
        render_plan(out, self.plan, self.detail)


@dataclass
class ApplyView(applying.ApplyReport):
    """What ``apply`` did: for people the plan (until it is applied), then one line."""

    detail: str | None = None

    def render(self, out: Console) -> None:
        applied = self.applied
        if applied is None:
            render_plan(out, self.plan, self.detail)
            return
        batches = f"{applied.batches} batch{'es' if applied.batches != 1 else ''}"
        out.print(
            f"Applied {self.plan.key_changes} changes to {applied.entities} entities in {batches} "
            f"({applied.seconds:.2f} s); each write is recorded in configctl history."
        )


def render_plan(out: Console, result: plans.Plan, detail: str | None = None) -> None:
    """Terraform-like text: one header per entity, one line per key; sensitive values masked.

    Past :data:`SUMMARY_AFTER_LINES` lines (or with ``detail="summary"``) only counts per entity
    type and action are shown; ``detail="full"`` always shows every key. A full plan can hold
    tens of thousands of lines: rich renders them in chunks on a terminal (one call per line is
    ten times slower), and plain text is written directly anywhere else.
    """
    summarize = detail == "summary" or (detail is None and result.lines > SUMMARY_AFTER_LINES)
    lines = list(_summary_lines(result, chosen=detail == "summary") if summarize else _plan_lines(result))
    if out.is_terminal:
        for start in range(0, len(lines), 500):
            out.print("\n".join(markup for markup, _ in lines[start : start + 500]))
    else:
        out.file.write("".join(f"{plain}\n" for _, plain in lines))
        out.file.flush()


def _summary_lines(result: plans.Plan, *, chosen: bool) -> Iterator[tuple[str, str]]:
    """(rich markup, plain text) of a summarized plan: one line per entity type, then the count."""
    if result.changed:
        why = "" if chosen else f"; the full plan has {result.lines:,} lines"
        text = f"Plan summary (--full shows every key{why}):"
        yield escape(text), text
        width = max(len(etype) for etype in result.summary())
        for etype, counts in result.summary().items():
            entities = ", ".join(
                f"{count:,} {_ENTITY_ACTION_WORDS[action]}"
                for action, count in counts["entities"].items()
                if count
            )
            keys = counts["keys"]
            text = (
                f"  {etype:<{width}}  {entities}; keys: {keys['add']:,} to add, {keys['change']:,} to change, "
                f"{keys['delete']:,} to delete"
            )
            yield escape(text), text
    yield from _closing_line(result)


def _closing_line(result: plans.Plan) -> Iterator[tuple[str, str]]:
    if not result.changed:
        text = (
            f"No changes: the cluster matches {result.source} "
            f"({len(result.seen)} entities examined{', with --prune' if result.prune else ''})."
        )
        yield escape(text), text
        return
    counts = result.counts()
    text = (
        f"Plan: {counts['add']} to add, {counts['change']} to change, {counts['delete']} to delete, "
        f"on {len(result.entities)} of {len(result.seen)} entities examined."
    )
    yield text, text


def _plan_lines(result: plans.Plan) -> Iterator[tuple[str, str]]:
    """(rich markup, plain text) for every line of a rendered plan."""
    if not result.changed:
        yield from _closing_line(result)
        return
    for entity_plan in result.entities:
        if entity_plan.corrupt is not None:
            mark, note = "~", f"version {entity_plan.version}; not a Kafka config node, replaced whole"
        elif entity_plan.version < 0:
            mark, note = "+", "new config node"
        elif entity_plan.pruned:
            mark, note = "-", f"version {entity_plan.version}; not in the file: --prune removes its overrides"
        elif not entity_plan.target:
            mark, note = "-", f"version {entity_plan.version}; every override removed"
        else:
            mark, note = "~", f"version {entity_plan.version}"
        name = entity_plan.entity.label
        yield f"{_MARKS[mark]} [bold]{safe(name)}[/] [dim]({note})[/]", printable(f"{mark} {name} ({note})")
        for key in entity_plan.to_json()["keys"]:
            kind, shown = key["kind"], escape(key["name"])
            old, new = _quoted(key["old"]), _quoted(key["new"])
            if kind == "add":
                yield f"    {_MARKS['+']} {shown} = {escape(new)}", f"    + {key['name']} = {new}"
            elif kind == "delete":
                yield (
                    f"    {_MARKS['-']} {shown} [dim](was {escape(old)})[/]",
                    f"    - {key['name']} (was {old})",
                )
            else:
                yield (
                    f"    {_MARKS['~']} {shown}: {escape(old)} → {escape(new)}",
                    f"    ~ {key['name']}: {old} → {new}",
                )
    yield from _closing_line(result)


def _quoted(value: str | None) -> str:
    return json.dumps(value, ensure_ascii=False) if value is not None else "—"


@click.command()
@click.option(
    "--entity-type",
    "entity_type",
    metavar="TYPE",
    help="Only this type (topics, clients, users, brokers, ips); default: all of them.",
)
@click.option(
    "--file",
    "out_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write here (atomically) instead of stdout; a .json name writes JSON.",
)
@click.option(
    "--no-secrets",
    "no_secrets",
    is_flag=True,
    help="Leave out sensitive keys (SCRAM credentials, broker passwords); plan and apply of the file "
    "then keep the stored ones.",
)
@global_options
def export(entity_type: str | None, out_file: str | None, no_secrets: bool) -> None:
    """Write the current dynamic configs as a desired-state file.

    Secrets are written as stored (SCRAM credentials as salted hashes, broker passwords
    encrypted), so export followed by plan shows no changes. A file holding secrets is
    created readable by its owner only; on a pipe or redirect, a warning says it holds them.
    --no-secrets leaves them out, and marks the file so that plan and apply keep them.

    \b
      configctl export --file cluster.yaml
      configctl export --no-secrets > cluster.yaml
      configctl export --entity-type topics > topics.yaml
    """
    types = (parse_entity_type(entity_type),) if entity_type else TYPE_ORDER
    with open_store() as store:
        exported = exporting.export(store, types, include_secrets=not no_secrets)
    for item in exported.left_out:  # reported and left out; the rest is exported
        warning(f"{item.entity.znode} is not a Kafka config node and is left out: {item.problem}")
    if out_file is None:
        check_output()
        secret_values = exported.secret_values
        if secret_values and not sys.stdout.isatty():
            warning(
                f"this export holds {secret_values} secret value{'s' if secret_values != 1 else ''} "
                "(SCRAM credentials or broker passwords, hashed or encrypted) and stdout is not a terminal: "
                "the file the shell creates for it is usually readable by others; use --file FILE "
                "(readable by you only) or --no-secrets"
            )
        before_write(lambda: show(ExportView(exported)))
        return
    text = exported.text(as_json=out_file.lower().endswith(".json"))
    replace_atomically(Path(out_file), text, private=exported.secret_values > 0)
    show(ExportedView(out_file, exported))


@dataclass(frozen=True)
class ExportView:
    """The exported document on stdout: YAML with its header for people, the document itself as JSON."""

    exported: exporting.Export

    def to_json(self) -> dict[str, Any]:
        return self.exported.document

    def render(self, out: Console) -> None:
        out.file.write(self.exported.text())
        out.file.flush()


@dataclass(frozen=True)
class ExportedView:
    """Where ``export --file`` wrote, and how much."""

    file: str
    exported: exporting.Export

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "entities": self.exported.entities,
            "types": [t.value for t in self.exported.types],
        }

    def render(self, out: Console) -> None:
        out.print(f"Exported {self.exported.entities} entities with overrides to {escape(self.file)}.")
