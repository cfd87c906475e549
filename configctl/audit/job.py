"""The config-audit Spark job's entry point: ``spark-submit ... configctl/audit/job.py --snapshots URI``.

The same options as ``configctl audit`` (docs/audit.md), for a cluster: the audit itself is
:mod:`configctl.audit.run`; ``--timeline`` and ``--at`` read the applied logs instead
(:mod:`configctl.audit.timeline`). The document is printed as JSON or as the terminal summary,
and written to ``--json-file`` and ``--html`` when asked.

Imports only pyspark, the standard library and pure configctl modules (the snapshot line, the
source names, the catalogue and its schemas), so the module runs under
``spark-submit --py-files configctl.zip configctl/audit/job.py`` (``configctl audit package``
builds that zip).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from configctl import snapshot
from configctl.audit.expected import read_expected_state
from configctl.audit.options import AuditInputError, AuditOptions
from configctl.audit.run import audit
from configctl.audit.verdict import DRIFT_EXIT_CODE, has_drift
from configctl.digests import read_digest_key
from configctl.errors import InvalidInput

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="configctl-audit-job", description="Audit configctl broker snapshots for drift (Spark job)."
    )
    parser.add_argument(
        "--snapshots", required=True, help="directory, file or URI (file://, hdfs://, s3a://)"
    )
    parser.add_argument(
        "--master", default=None, help="Spark master (default: spark-submit's, else local[*])"
    )
    parser.add_argument("--output", choices=("json", "table"), default="json")
    parser.add_argument("--json-file", default=None, help="also write the JSON document to this local file")
    parser.add_argument(
        "--html", default=None, help="write the HTML report to this local file (needs Jinja2)"
    )
    parser.add_argument(
        "--desired-state", default=None, help="desired state JSON (configctl audit desired-state)"
    )
    parser.add_argument("--limit", type=int, default=AuditOptions.limit)
    parser.add_argument("--per-broker-key", action="append", default=[], help="another per-broker key")
    parser.add_argument("--pattern", default=snapshot.FILE_PATTERN, help="snapshot file glob in a directory")
    parser.add_argument("--fail-on-drift", action="store_true", help="exit 2 when drift is found")
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="the applied logs under --snapshots: every interval of disagreement",
    )
    parser.add_argument("--since", default=None, help="with --timeline: from T (ISO-8601 or -2h)")
    parser.add_argument("--until", default=None, help="with --timeline: up to T")
    parser.add_argument("--at", default=None, help="the drift report as of T, from the applied logs")
    parser.add_argument(
        "--digest-key-file",
        default=None,
        help="file holding the fleet's digest key, as the listeners use (else $CONFIGCTL_DIGEST_KEY_FILE); "
        "with --deploy-mode cluster ship it with --files. Never give the key itself on a command line.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit --py-files configctl.zip configctl/audit/job.py --snapshots URI``."""
    args = _parser().parse_args(argv)
    from configctl.audit.spark import SparkStartError, audit_session

    try:
        expected = read_expected_state(args.desired_state) if args.desired_state else None
        options = AuditOptions(
            limit=args.limit,
            per_broker_keys=tuple(args.per_broker_key),
            file_pattern=args.pattern,
            digest_key=read_digest_key(args.digest_key_file),
        )
    except (ValueError, AuditInputError, InvalidInput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        moments = {name: _moment(getattr(args, name)) for name in ("since", "until", "at")}
        with audit_session(args.master) as spark:
            if args.timeline or moments["at"] is not None:
                from configctl.audit import timeline

                if args.timeline:
                    window = timeline.Window(moments["since"], moments["until"])
                    doc = timeline.timeline(spark, args.snapshots, window, args.limit, options.digest_key)
                    print(json.dumps(doc, indent=2))
                    return 0
                assert moments["at"] is not None
                doc = timeline.audit_at(spark, args.snapshots, moments["at"], None, options)
            else:
                doc = audit(spark, args.snapshots, expected, options)
    except (AuditInputError, SparkStartError, InvalidInput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(doc, indent=2)
    if args.json_file:
        with open(args.json_file, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    if args.html:
        from configctl.audit.report import write_html

        write_html(doc, args.html)
    if args.output == "json":
        print(text)
    else:
        from configctl.audit.report import print_summary

        print_summary(doc)
    return DRIFT_EXIT_CODE if args.fail_on_drift and has_drift(doc) else 0


def _moment(text: str | None) -> int | None:
    """A moment given to the spark-submit entry point, in epoch ms (``change:N`` needs ``configctl audit``)."""
    if text is None:
        return None
    from configctl.timeref import parse

    ref = parse(text)
    if ref.at_ms is None:
        raise InvalidInput(f"{text}: give a time here; change:N is read by `configctl audit`")
    return ref.at_ms


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
