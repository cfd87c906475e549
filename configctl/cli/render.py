"""Output, in one place: every command hands its result to :func:`show` (one JSON document, or rich).

A command's result is an object with ``to_json()`` (the ``--output json`` document) and
``render(console)`` (for people); :func:`show` picks one, so no command branches on the output
format. Two guards keep the exit status honest around writes: :func:`before_write` (a stdout that
cannot be written is one line, and nothing was written) and :func:`after_commit` (once a write
landed, no failure to print may read as "nothing was written"). Text from ZooKeeper (names,
values, reasons) is made terminal-safe with :func:`safe` before rich sees it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from configctl import catalogue
from configctl.changes import KeyDiff
from configctl.cli.options import settings
from configctl.entities import Entity
from configctl.errors import EnvironmentProblem, PartiallyWritten, one_line, printable
from configctl.secrets import MASK, mask_config


class Rendered(Protocol):
    """What a command produces: a JSON document and a human rendering of the same facts."""

    def to_json(self) -> Any: ...

    def render(self, out: Console) -> None: ...


def console() -> Console:
    """Rich output for people; when piped (CI, less, a log) tables get room instead of 80 columns."""
    piped = not sys.stdout.isatty()
    return Console(soft_wrap=True, highlight=False, width=160 if piped else None)


def emit_json(document: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def as_json() -> bool:
    return settings().output == "json"


def show(result: Rendered) -> None:
    """Print ``result`` as the global ``--output`` asks."""
    if as_json():
        emit_json(result.to_json())
    else:
        result.render(console())


def safe(text: object) -> str:
    """Stored text made safe for rich: control characters escaped (no ANSI from ZooKeeper reaches the
    terminal), markup escaped (a name like ``[/]`` is text, not a tag)."""
    return escape(printable(str(text)))


# -- exit statuses that tell the truth around writes --------------------------------------------


def before_write(print_it: Callable[[], None]) -> None:
    """Show something before anything is written; an unwritable stdout is one line (nothing written)."""
    try:
        print_it()
    except (OSError, SystemExit) as exc:  # a full disk, a closed pipe (rich exits on a broken pipe)
        if isinstance(exc, SystemExit) and not isinstance(exc.__context__, OSError):
            raise
        silence_stdout()
        cause = exc if isinstance(exc, OSError) else exc.__context__
        reason = getattr(cause, "strerror", None) or one_line(cause)
        raise EnvironmentProblem(f"cannot write to standard output: {reason}; nothing was written") from None


def after_commit(
    committed: Sequence[Entity], print_it: Callable[[], None], *, what: str = "the write"
) -> None:
    """Show what a command did after its writes landed; if showing fails, still say what was committed.

    By now the writes are in ZooKeeper, so no failure here (a closed pipe, a full disk, a
    rendering bug) may end in an error that reads as "nothing was written": it is exit 8, naming
    what was committed.
    """
    try:
        print_it()
    except (Exception, KeyboardInterrupt, SystemExit) as exc:  # rich exits on a broken pipe
        if isinstance(exc, PartiallyWritten):
            raise
        silence_stdout()
        labels = [e.label for e in committed]
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        raise PartiallyWritten(
            f"{what} committed {'all ' if len(labels) > 1 else ''}{len(labels)} "
            f"entit{'y' if len(labels) == 1 else 'ies'} ({shown}), "
            f"but showing the result failed: {failure_text(exc)}",
            committed=[e.path for e in committed],
        ) from None


def failure_text(exc: BaseException) -> str:
    if isinstance(exc, SystemExit) and exc.__context__ is not None:
        exc = exc.__context__  # rich turns a broken pipe into SystemExit(1)
    return one_line(exc) or type(exc).__name__


def silence_stdout() -> None:
    """Send what is left in stdout's buffer to /dev/null, so the final flush at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


# -- entities, configs and diffs --------------------------------------------------------------------


def masked(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    """The config, sorted, with sensitive values replaced by the mask."""
    return mask_config(
        dict(sorted(config.items())), lambda key: catalogue.is_sensitive(entity.schema_type, key)
    )


def entity_json(entity: Entity, config: Mapping[str, str], version: int | None) -> dict[str, Any]:
    """Contract 3's describe element."""
    document: dict[str, Any] = {
        "entity_type": entity.type.value,
        "entity_name": entity.name,
        "entity_path": entity.path,
        "config": masked(entity, config),
        "version": version,
    }
    if entity.client is not None:
        document["client_id"] = entity.client
    return document


def diff_json(entity: Entity, changes: Iterable[KeyDiff]) -> list[dict[str, Any]]:
    result = []
    for change in changes:
        sensitive = catalogue.is_sensitive(entity.schema_type, change.name)
        result.append(
            {
                "name": change.name,
                "kind": change.kind,
                "old": MASK if sensitive and change.old is not None else change.old,
                "new": MASK if sensitive and change.new is not None else change.new,
            }
        )
    return result


def diff_table(entity: Entity, changes: list[KeyDiff], *, title: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("")
    table.add_column("key", no_wrap=True, overflow="fold")
    table.add_column("before", overflow="fold")
    table.add_column("after", overflow="fold")
    marks = {"add": "[green]+[/]", "delete": "[red]-[/]", "change": "[yellow]~[/]"}
    for row in diff_json(entity, changes):
        table.add_row(marks[row["kind"]], safe(row["name"]), _cell(row["old"]), _cell(row["new"]))
    return table


def _cell(value: str | None) -> str:
    return "[dim]—[/]" if value is None else safe(value)


def entity_label(entity: Entity) -> str:
    """``topic orders``, ``user alice client app1``, ``broker <default>``: the noun and the plain path."""
    kind = entity.type.value[:-1]
    name = entity.stored_name if entity.literal else entity.name
    label = f"{kind} {name}"
    if entity.client is not None:
        label += f" client {entity.stored_client if entity.client_literal else entity.client}"
    return label
