"""Output, in one place: every command hands its result to :func:`show` (one JSON document, or rich).

A command's result is an object with ``to_json()`` (the ``--output json`` document) and
``render(console)`` (for people); :func:`show` picks one, so no command branches on the output
format. This module is the only one that asks which output was chosen; what differs between the
two besides the document is here too, one helper each:

* :func:`preview`: what people see before they confirm a write (JSON gets its document at the end);
* :func:`show_written`: a write's result and its follow-up (``--wait``): people see the result,
  then the brokers answering; JSON is one document once the follow-up is in it;
* :func:`show_partial`: the document of a write cut off, for scripts, before the error line;
* :func:`progress` and :func:`progress_bar`: what a long step is doing, on stderr (nothing with JSON);
* :func:`note` and :func:`warning`: a line beside the document, and a warning (stderr);
* :func:`emit_text`: a document with its own fixed format, printed as it is;
* :func:`check_output`: a bad output setting refused before a long command starts.

A view whose words are not rich markup (paths, say) prints them with :func:`plain`.

Two guards keep the exit status honest around writes: :func:`before_write` (a stdout that
cannot be written is one line, and nothing was written) and :func:`after_commit` (once a write
landed, no failure to print may read as "nothing was written"). Text from ZooKeeper (names,
values, reasons) is made terminal-safe with :func:`safe` before rich sees it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import click
from rich.console import Console, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from configctl import catalogue
from configctl.changes import KeyDiff
from configctl.cli.options import settings
from configctl.entities import Entity
from configctl.errors import ConfigctlError, EnvironmentProblem, PartiallyWritten, one_line, printable
from configctl.secrets import MASK

Event = TypeVar("Event", contravariant=True)


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


class ProgressView(Protocol[Event]):
    """What a long step shows while it runs (:func:`progress`)."""

    def update(self, event: Event) -> Iterable[str]:
        """Take in ``event``; the lines it is worth when stderr is not a terminal (rich markup)."""
        ...

    def render(self) -> RenderableType:
        """The live view on a terminal, as of the last event."""
        ...

    def closing(self) -> Iterable[str]:
        """Lines to end with when stderr is not a terminal (once the step returned)."""
        ...


def as_json() -> bool:
    return settings().output == "json"


def check_output() -> None:
    """Refuse a bad output setting (``CONFIGCTL_OUTPUT``, a profile) now, before a long command starts."""
    as_json()


def show(result: Rendered, *, table_on_bad_output: bool = False) -> None:
    """Print ``result`` as the global ``--output`` asks.

    ``table_on_bad_output``: a bad output setting shows the table instead of failing (``config
    show``, which reports that setting as its problem after the table).
    """
    try:
        wants_json = as_json()
    except ConfigctlError:
        if not table_on_bad_output:
            raise
        wants_json = False
    if wants_json:
        emit_json(result.to_json())
    else:
        result.render(console())


def emit_text(text: str) -> None:
    """A document in its own fixed format (always JSON, say), on stdout as it is, whatever ``--output`` says."""
    click.echo(text)


def plain(out: Console, text: str) -> None:
    """One line of text as it is (no markup, no wrapping), for a view whose words are not rich's."""
    out.file.write(text + "\n")
    out.file.flush()


def note(text: str) -> None:
    """A line for people beside the document: on stdout under a table, on stderr when stdout holds JSON."""
    click.echo(text, err=as_json())


def warning(text: str) -> None:
    """``warning: TEXT`` on stderr (terminal-safe); the command goes on."""
    click.echo(f"warning: {printable(text)}", err=True)


def preview(render: Callable[[Console], None]) -> None:
    """What people see before they are asked to confirm a write (the plan, the diff); nothing with
    ``-o json``, whose document comes once the command is done. A stdout that cannot be written is
    one line, and nothing was written (:func:`before_write`)."""
    if not as_json():
        before_write(lambda: render(console()))


def show_written(
    committed: Sequence[Entity],
    result: Rendered,
    *,
    follow: Callable[[], None] | None = None,
    what: str = "the write",
) -> None:
    """Show what a write did (guarded by :func:`after_commit`), then follow it up.

    ``follow`` (waiting for the brokers) adds what it finds to ``result``: people see the result
    first and the brokers answering after it; with ``-o json`` the one document is printed once
    the follow-up is in it.
    """
    if follow is not None and as_json():
        follow()
    after_commit(committed, lambda: show(result), what=what)
    if follow is not None and not as_json():
        follow()


def show_partial(result: Rendered) -> None:
    """Before the error line of a write cut off: scripts still get the document (best effort, the
    error is what counts); people get the error line alone."""
    if as_json():
        with contextlib.suppress(Exception):
            emit_json(result.to_json())


@contextlib.contextmanager
def progress(
    view: ProgressView[Event], *, soft_wrap: bool = False
) -> Iterator[Callable[[Event], None] | None]:
    """What a long step is doing, on stderr: ``view`` live on a terminal, its lines one by one when
    piped (then its closing lines), nothing with ``-o json`` (the document at the end says it all).

    Yields the function to hand each event to, or None when nothing is shown.
    """
    if as_json():
        yield None
        return
    err = Console(stderr=True, highlight=False, soft_wrap=soft_wrap)
    if not sys.stderr.isatty():

        def printed(event: Event) -> None:
            for line in view.update(event):
                err.print(line)

        yield printed
        for line in view.closing():
            err.print(line)
        return
    with Live(view.render(), console=err, transient=False, refresh_per_second=8) as live:

        def shown(event: Event) -> None:
            view.update(event)
            live.update(view.render())

        yield shown


@contextlib.contextmanager
def progress_bar(total: int, what: str, unit: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on a terminal's stderr while a long step runs (``what`` M/``total`` ``unit``,
    gone when it ends); nothing when stderr is not a terminal or with ``-o json``.

    Yields ``advance(n)``, or None when nothing is shown.
    """
    if as_json() or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(what, total=total)
        yield lambda n: bar.advance(task, n)


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


def change_phrase(change_number: int | None) -> str:
    """``, change N`` after a write's version, or nothing where the store numbers no changes
    (a KRaft cluster has no change notifications)."""
    return "" if change_number is None else f", change {change_number}"


def entity_label(entity: Entity) -> str:
    """``topic orders``, ``user alice client app1``, ``broker <default>``: the noun and the plain path."""
    kind = entity.type.value[:-1]
    name = entity.stored_name if entity.literal else entity.name
    label = f"{kind} {name}"
    if entity.client is not None:
        label += f" client {entity.stored_client if entity.client_literal else entity.client}"
    return label
