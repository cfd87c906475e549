"""``configctl audit``: the Spark drift audit over broker snapshots, and ``audit simulate``.

Thin: :mod:`configctl.audit.run` does the work in Spark, :mod:`configctl.audit.report` renders.
pyspark is imported inside the command, never at import time, so ``configctl --help`` and
``configctl audit --help`` stay fast.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from configctl import snapshot
from configctl.audit.verdict import DRIFT_EXIT_CODE, has_drift
from configctl.cli.moments import MOMENT
from configctl.cli.options import digest_key_file_option, global_options, settings
from configctl.cli.render import emit_text, note, plain, show
from configctl.digests import read_digest_key
from configctl.errors import EnvironmentProblem, InvalidInput
from configctl.timeref import TimeRef

if TYPE_CHECKING:
    from rich.console import Console

    from configctl.audit.expected import ExpectedState
    from configctl.audit.simulate import WrittenFleet

TIMELINE_TRUTH_FILE = "timeline_truth.json"

_EPILOG = (
    "Exit status: 0 when the audit ran (drift or not); with --fail-on-drift, "
    f"{DRIFT_EXIT_CODE} when stale brokers, divergent keys, static skew or missed changes were found; "
    "1 for bad input (missing path, unreadable snapshots, bad desired state); 7 when Spark cannot start. "
    f"With --timeline and --fail-on-drift, {DRIFT_EXIT_CODE} when any interval is reported."
)


_digest_key_option = digest_key_file_option(
    "The fleet's digest key (the listeners' --digest-key-file): secrets in the desired state "
    "and any sent in clear are compared as HMAC-SHA256 under it, as keyed listeners write them."
)


@click.group(invoke_without_command=True, epilog=_EPILOG)
@global_options
@click.option(
    "--snapshots",
    metavar="PATH",
    help="Directory, file or URI Spark reads (file://, hdfs://, s3a://) holding broker-<id>.jsonl snapshots.",
)
@click.option(
    "--master",
    default=None,
    metavar="URL",
    help="Spark master.  [default: local[*]]",
)
@click.option("--html", "html_file", type=click.Path(dir_okay=False), help="Also write the HTML report here.")
@click.option(
    "--desired-state",
    type=click.Path(dir_okay=False),
    help="Desired state as JSON (instead of reading ZooKeeper); enables missed_changes.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Most items listed per finding (the rest are counted as truncated).",
)
@click.option(
    "--per-broker-key",
    "per_broker_keys",
    multiple=True,
    metavar="KEY",
    help="Another key that differs per broker by nature (repeatable); never reported as drift.",
)
@click.option(
    "--pattern",
    default=snapshot.FILE_PATTERN,
    show_default=True,
    help="Which files of a snapshot directory to read.",
)
@click.option("--fail-on-drift", is_flag=True, help=f"Exit {DRIFT_EXIT_CODE} when drift is found.")
@click.option(
    "--timeline",
    is_flag=True,
    help="Read the applied logs under --snapshots (the state directories' applied/) instead: every "
    "interval during which brokers ran different values of a key.",
)
@click.option(
    "--since",
    type=MOMENT,
    default=None,
    metavar="T",
    help="With --timeline: intervals that end at T or later.",
)
@click.option(
    "--until",
    type=MOMENT,
    default=None,
    metavar="T",
    help="With --timeline: intervals that start at T or earlier.",
)
@click.option(
    "--at",
    type=MOMENT,
    default=None,
    metavar="T",
    help="The drift report as of T, from what each broker's applied log says it ran then "
    "(ISO-8601, -2h, change:N).",
)
@_digest_key_option
@click.pass_context
def audit(
    ctx: click.Context,
    snapshots: str | None,
    master: str | None,
    html_file: str | None,
    desired_state: str | None,
    limit: int,
    per_broker_keys: tuple[str, ...],
    pattern: str,
    fail_on_drift: bool,
    timeline: bool,
    since: TimeRef | None,
    until: TimeRef | None,
    at: TimeRef | None,
    digest_key_file: str | None,
) -> None:
    """Audit the fleet's snapshots for configuration drift with Spark.

    Reports brokers behind the newest change (stale), cluster-wide keys the brokers disagree
    on (divergent), per-broker overrides, server.properties values that differ (static skew)
    and, when ZooKeeper is named with --zookeeper or CONFIGCTL_ZOOKEEPER (or --desired-state
    is given), brokers running something other than the desired state (missed changes).
    Runs in local mode by default; see docs/audit.md for spark-submit on a cluster.

    With --timeline (and --since/--until) or --at T, --snapshots names the state directories whose
    applied logs are read (docs/audit.md, "The audit in time").
    """
    if ctx.invoked_subcommand is not None:
        return
    _refuse_mixed_moments(timeline, since, until, at)
    if not snapshots:
        raise InvalidInput(
            "--snapshots PATH is required (a directory or URI holding broker-<id>.jsonl files)"
        )
    _check_local_path(snapshots)
    settings()  # the global settings (a profile) are refused first, before the key file is read
    digest_key = read_digest_key(digest_key_file)
    if timeline:
        from configctl.audit.timeline_view import TimelineView

        doc = _run_in_time(snapshots, master, limit, digest_key, since=since, until=until)
        if _zookeeper_named(ctx) or settings(ctx).bootstrap_server is not None:
            doc = _marked_outside(doc)  # which changes were written outside configctl, from the store
        show(TimelineView(doc))
        if html_file:
            from configctl.audit.timeline_view import write_timeline_html

            _write_html(html_file, lambda: write_timeline_html(doc, html_file, source=snapshots))
        if fail_on_drift and doc["intervals"]:
            raise click.exceptions.Exit(DRIFT_EXIT_CODE)
        return
    if desired_state and _zookeeper_named(ctx):
        raise InvalidInput("give either --desired-state or --zookeeper, not both")
    if at is not None:  # what ZooKeeper wants now is not what it wanted at T: no missed_changes
        if desired_state:
            raise click.UsageError("--desired-state says what is wanted now, not at --at T: give one")
        doc = _run_in_time(snapshots, master, limit, digest_key, at=at, per_broker_keys=per_broker_keys)
        _show_audit(doc, html_file, snapshots, fail_on_drift)
        return
    expected = None
    if desired_state:
        from configctl.audit.expected import read_expected_state

        try:
            expected = read_expected_state(desired_state)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
    elif _zookeeper_named(ctx):
        expected = _expected_from_zookeeper(digest_key)

    doc = _run_audit(snapshots, master, expected, limit, per_broker_keys, pattern, digest_key)
    _show_audit(doc, html_file, snapshots, fail_on_drift)


def _show_audit(doc: dict[str, Any], html_file: str | None, snapshots: str, fail_on_drift: bool) -> None:
    """The audit document on the terminal or as JSON, the HTML report, and the exit status."""
    show(AuditView(doc))
    if html_file:
        from configctl.audit.report import write_html

        try:
            written = write_html(
                doc, html_file, source=snapshots, generated=time.strftime("%Y-%m-%d %H:%M:%S %Z")
            )
        except OSError as exc:
            raise InvalidInput(f"cannot write {html_file}: {exc.strerror or exc}") from None
        note(f"HTML report written to {written}")
    if fail_on_drift and has_drift(doc):
        raise click.exceptions.Exit(DRIFT_EXIT_CODE)


def _refuse_mixed_moments(
    timeline: bool, since: TimeRef | None, until: TimeRef | None, at: TimeRef | None
) -> None:
    """--since/--until narrow a timeline; --at is a report at one moment: never both (exit 2)."""
    if timeline and at is not None:
        raise click.UsageError("--at is the drift report at one moment: give --timeline or --at, not both")
    if not timeline and (since is not None or until is not None):
        raise click.UsageError("--since and --until need --timeline")


def _write_html(html_file: str, write: Any) -> None:
    try:
        written = write()
    except OSError as exc:
        raise InvalidInput(f"cannot write {html_file}: {exc.strerror or exc}") from None
    note(f"HTML report written to {written}")


def _run_in_time(
    snapshots: str,
    master: str | None,
    limit: int,
    digest_key: bytes | None,
    *,
    since: TimeRef | None = None,
    until: TimeRef | None = None,
    at: TimeRef | None = None,
    per_broker_keys: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``--timeline`` or ``--at`` over the applied logs under ``snapshots`` (:mod:`configctl.audit.timeline`);
    ``change:N`` is when change N first took effect on any broker there."""
    from configctl.audit import timeline as in_time
    from configctl.audit.options import AuditInputError, AuditOptions
    from configctl.audit.spark import SparkStartError, audit_session

    def moment(spark: Any, ref: TimeRef | None) -> int | None:
        if ref is None or not ref.is_change:
            return None if ref is None else ref.at_ms
        assert ref.change is not None
        logs, _ = in_time.broker_logs(spark, snapshots)
        found = in_time.first_applied_ms(logs, ref.change)
        if found is None:
            raise InvalidInput(
                f"{ref.text}: no applied log under {snapshots} shows change {ref.change} applied"
            )
        return found

    try:
        with audit_session(master) as spark:
            if at is not None:
                at_ms = moment(spark, at)
                assert at_ms is not None
                options = AuditOptions(limit=limit, per_broker_keys=per_broker_keys, digest_key=digest_key)
                return in_time.audit_at(spark, snapshots, at_ms, None, options)
            window = in_time.Window(moment(spark, since), moment(spark, until))
            return in_time.timeline(spark, snapshots, window, limit, digest_key)
    except SparkStartError as exc:
        raise EnvironmentProblem(str(exc)) from None
    except AuditInputError as exc:
        raise InvalidInput(str(exc)) from None


@dataclass(frozen=True)
class AuditView:
    """The audit document for :func:`configctl.cli.render.show`: as it is, or the terminal summary."""

    doc: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.doc

    def render(self, out: Console) -> None:
        from configctl.audit.report import print_summary

        print_summary(self.doc, out)


def _run_audit(
    snapshots: str,
    master: str | None,
    expected: Any,
    limit: int,
    per_broker_keys: tuple[str, ...],
    pattern: str,
    digest_key: bytes | None,
) -> dict[str, Any]:
    from configctl.audit.options import AuditInputError, AuditOptions
    from configctl.audit.run import audit as run
    from configctl.audit.spark import SparkStartError, audit_session

    try:
        options = AuditOptions(
            limit=limit, per_broker_keys=per_broker_keys, file_pattern=pattern, digest_key=digest_key
        )
    except AuditInputError as exc:
        raise InvalidInput(str(exc)) from None
    try:
        with audit_session(master) as spark:
            return run(spark, snapshots, expected, options)
    except SparkStartError as exc:
        raise EnvironmentProblem(str(exc)) from None
    except AuditInputError as exc:
        raise InvalidInput(str(exc)) from None


def _check_local_path(path: str) -> None:
    """:func:`configctl.audit.options.check_local_snapshots`, its error one line (exit 1)."""
    from configctl.audit.options import AuditInputError, check_local_snapshots

    try:
        check_local_snapshots(path)
    except AuditInputError as exc:
        raise InvalidInput(str(exc)) from None


def _marked_outside(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with each interval's opening and closing change marked as configctl's or outside it
    (:func:`configctl.audit.timeline_outside.mark_from_store`), when the operator named a store."""
    from configctl.audit.timeline_outside import mark_from_store
    from configctl.cli.context import open_store

    with open_store() as store:
        return mark_from_store(doc, store)


def _zookeeper_named(ctx: click.Context) -> bool:
    """True when the user chose a ZooKeeper (flag, CONFIGCTL_ZOOKEEPER or profile), not the default."""
    return settings(ctx).zookeeper_explicit


def _expected_from_zookeeper(digest_key: bytes | None) -> ExpectedState:
    """The expected state from ZooKeeper's /config tree and newest change notification
    (:func:`configctl.audit.expected.expected_from_store`), secrets under the fleet's digest key."""
    from configctl.audit.expected import expected_from_store

    try:
        from configctl.cli.context import open_store
    except ImportError:
        raise EnvironmentProblem("--zookeeper support for the audit needs configctl.zk") from None

    with open_store() as store:  # the same connect string, auth and timeout, quiet kazoo logs
        return expected_from_store(store, digest_key=digest_key)


@audit.command("desired-state")
@global_options
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the JSON here instead of stdout.",
)
@_digest_key_option
def desired_state_command(out_file: str | None, digest_key_file: str | None) -> None:
    """Export what ZooKeeper says the brokers should run, for `audit --desired-state` or spark-submit.

    Reads /config and the newest change notification from the ZooKeeper named by --zookeeper
    (or CONFIGCTL_ZOOKEEPER). Use it where the Spark driver cannot reach ZooKeeper: export
    here, copy the file next to the job, pass it with --desired-state. With the fleet's digest
    key, secrets are exported as the keyed listeners write them (the key itself is not exported).
    """
    settings()  # the global settings (a profile) are refused first, before the key file is read
    expected = _expected_from_zookeeper(read_digest_key(digest_key_file))
    document = expected.to_text()
    if out_file is None:
        emit_text(document)  # always this JSON: what --desired-state reads
        return
    try:
        Path(out_file).write_text(document + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write {out_file}: {exc.strerror or exc}") from None
    click.echo(f"desired state written to {out_file}", err=True)


@audit.command()
@global_options
@click.option("--brokers", type=click.IntRange(min=1), default=3, show_default=True, help="Fleet size.")
@click.option(
    "--topics", type=click.IntRange(min=0), default=10, show_default=True, help="Topics with overrides."
)
@click.option(
    "--drift-rate",
    type=click.FloatRange(0.0, 1.0),
    default=0.1,
    show_default=True,
    help="Share of brokers hit by each kind of drift (stale, patched value, static skew, override).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same fleet.")
@click.option(
    "--malformed", type=click.IntRange(min=0), default=0, show_default=True, help="Bad lines to add."
)
@click.option(
    "--changes",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Changes after the base state.",
)
@click.option(
    "--pending",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Of those, how many no broker has applied yet (only the desired state knows them).",
)
@click.option(
    "--applied-days",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also write that many days of applied logs (state-<id>/applied/, 24 changes a day) and "
    f"their known timeline ({TIMELINE_TRUTH_FILE}), for audit --timeline.",
)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Directory to write.")
def simulate(
    brokers: int,
    topics: int,
    drift_rate: float,
    seed: int,
    malformed: int,
    changes: int,
    pending: int,
    applied_days: int,
    out_dir: str,
) -> None:
    """Write snapshots of a simulated fleet with drift at known places, and the ground truth.

    OUT gets broker-<id>.jsonl per broker (docs/reference/snapshots.md), ground_truth.json (the findings the
    audit must report, with and without the desired state) and desired_state.json (use it with
    `configctl audit --desired-state`). Existing broker-*.jsonl files in OUT are replaced.
    """
    from configctl.audit.simulate import simulate as run
    from configctl.audit.simulation_model import SimulationSpec

    try:
        spec = SimulationSpec(brokers, topics, drift_rate, seed, malformed, changes, pending)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    started = time.monotonic()
    try:
        written = run(spec, out_dir)
        if applied_days:
            _simulate_applied(brokers, applied_days, seed, out_dir)
    except OSError as exc:
        raise InvalidInput(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    show(Simulated(written, time.monotonic() - started))


def _simulate_applied(brokers: int, days: int, seed: int, out_dir: str) -> None:
    """The applied logs of ``audit simulate --applied-days`` and their timeline, as the benchmark writes them."""
    import json

    from configctl.audit.timeline_simulate import AppliedSpec, simulate_applied

    try:
        spec = AppliedSpec(brokers=brokers, days=days, seed=seed)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    fleet = simulate_applied(spec, out_dir)
    truth = [
        {"entity_path": path, "key": "retention.ms", "start_ms": start, "end_ms": end, "change": number}
        for path, start, end, number in fleet.truth
    ]
    Path(out_dir, TIMELINE_TRUTH_FILE).write_text(json.dumps(truth) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class Simulated:
    """A simulated fleet written: where, how much, and how long it took."""

    written: WrittenFleet
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {**self.written.to_json(), "seconds": round(self.seconds, 3)}

    def render(self, out: Console) -> None:
        written = self.written
        plain(
            out,
            f"wrote {written.rows:,} snapshot rows for {written.files} broker(s) to {written.directory} "
            f"(ground truth: {written.to_json()['ground_truth']})",
        )


@audit.command("package")
@global_options
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False),
    default="configctl.zip",
    show_default=True,
    help="The zip to write.",
)
def package_command(out_file: str) -> None:
    """Build the zip for `spark-submit --py-files`: configctl's code and its schemas.

    The job on a cluster needs the config schemas (which keys hold secrets) inside the package,
    as configctl/_schemas/*.json; zipping the source directory by hand leaves them out.
    """
    from configctl.audit.package import build_zip

    try:
        written, files = build_zip(out_file)
    except OSError as exc:
        raise InvalidInput(f"cannot write {out_file}: {exc.strerror or exc}") from None
    show(Packaged(written, files))


@dataclass(frozen=True)
class Packaged:
    """The zip written for ``spark-submit --py-files``, and how many files it holds."""

    zip: Path
    files: int

    def to_json(self) -> dict[str, Any]:
        return {"zip": str(self.zip), "files": self.files}

    def render(self, out: Console) -> None:
        plain(out, f"wrote {self.zip} ({self.files} files); submit with --py-files {self.zip}")


from configctl.cli.audit_recorders import recorders  # noqa: E402 - a subcommand of its own module

audit.add_command(recorders)
