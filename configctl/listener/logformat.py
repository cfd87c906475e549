"""Log lines a log pipeline can trust: text with every value escaped, or one JSON object per line.

Values in listener logs come from ZooKeeper (entity names, config values, plugin messages), i.e.
from whoever may write there. A newline in a custom broker value must not forge a second log
line, and an ANSI escape must not drive the terminal of whoever tails the log: the text format
escapes control characters in the whole message (:func:`configctl.errors.printable`, on top of
the escaping the listener already does where it builds a line), and the JSON format lets
``json.dumps`` escape them (ASCII only, so C1 controls and U+2028 are escaped too).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from configctl.errors import printable

TEXT_FORMAT = "%(asctime)s %(levelname)s %(message)s"

MORE_FOLLOW = "configctl_more_follow"
"""Set (``extra={MORE_FOLLOW: True}``) on a log record that more records of the same batch follow
at once: :class:`BatchFlushingHandler` waits for the last one before flushing."""


class EscapingFormatter(logging.Formatter):
    """``TEXT_FORMAT`` with the message's control characters escaped (tracebacks, shown only
    when debugging, keep their lines)."""

    def __init__(self, fmt: str = TEXT_FORMAT) -> None:
        super().__init__(fmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        message = record.message
        record.message = printable(message)
        try:
            return super().formatMessage(record)
        finally:
            record.message = message


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``{"time","level","logger","message", ...fields}``.

    ``time`` is UTC, ISO 8601 with milliseconds; ``fields`` (e.g. ``{"broker_id": 1}``) are
    added to every line so a pipeline merging many brokers' logs can tell them apart. A
    traceback, when there is one, is the ``exception`` string of the same object.
    """

    def __init__(self, fields: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.fields = dict(fields or {})

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, timezone.utc)
        document: dict[str, Any] = {
            "time": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **self.fields,
        }
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return json.dumps(document, ensure_ascii=True, separators=(",", ":"))


class BatchFlushingHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each record at once, but flushes only at the end of a batch of them.

    The listener marks records of a batch whose followers are on their way
    (:data:`configctl.listener.manager.MORE_FOLLOW`); anything else, and anything at WARNING or
    above, is flushed with it. A catch-up of 10,000 changes then costs a few writes instead of
    10,000, and a lone change's line still leaves at once.
    """

    def __init__(self, stream: io.TextIOBase) -> None:
        super().__init__(stream)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.format(record) + self.terminator)
            if record.levelno >= logging.WARNING or not getattr(record, MORE_FOLLOW, False):
                self.flush()
        except Exception:
            self.handleError(record)


_MORE_FOLLOW = "configctl_more_follow"  # configctl.listener.manager.MORE_FOLLOW (no import cycle)


def buffered_stderr() -> io.TextIOWrapper:
    """stderr without Python's per-line flushing (only :class:`BatchFlushingHandler` flushes it)."""
    import sys

    return io.TextIOWrapper(
        sys.stderr.buffer,
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=False,
        write_through=False,
    )


def formatter(kind: str, fields: Mapping[str, Any] | None = None) -> logging.Formatter:
    """``text`` or ``json``."""
    if kind == "json":
        return JsonFormatter(fields)
    if kind == "text":
        return EscapingFormatter()
    raise ValueError(f"unknown log format {kind!r}")


__all__ = [
    "MORE_FOLLOW",
    "TEXT_FORMAT",
    "BatchFlushingHandler",
    "EscapingFormatter",
    "JsonFormatter",
    "buffered_stderr",
    "formatter",
]
