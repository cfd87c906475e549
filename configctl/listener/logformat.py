"""Log lines a log pipeline can trust: text with every value escaped, or one JSON object per line.

Values in listener logs come from ZooKeeper (entity names, config values, plugin messages), i.e.
from whoever may write there. A newline in a custom broker value must not forge a second log
line, and an ANSI escape must not drive the terminal of whoever tails the log: the text format
escapes control characters in the whole message (:func:`configctl.errors.printable`, on top of
the escaping the listener already does where it builds a line), and the JSON format lets
``json.dumps`` escape them (ASCII only, so C1 controls and U+2028 are escaped too).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from configctl.errors import printable

TEXT_FORMAT = "%(asctime)s %(levelname)s %(message)s"


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


def formatter(kind: str, fields: Mapping[str, Any] | None = None) -> logging.Formatter:
    """``text`` or ``json``."""
    if kind == "json":
        return JsonFormatter(fields)
    if kind == "text":
        return EscapingFormatter()
    raise ValueError(f"unknown log format {kind!r}")


__all__ = ["TEXT_FORMAT", "EscapingFormatter", "JsonFormatter", "formatter"]
