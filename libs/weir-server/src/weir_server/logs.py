"""How every Weir service logs: one line per record on stderr, either text or JSON (the services'
`log_format` setting), both with ISO-8601 UTC timestamps to the millisecond (`2026-12-07T04:09:01.123Z`).

    text  2026-12-07T04:09:01.123Z INFO [weir_router.server] router r1 serving on ...
    json  {"ts": "2026-12-07T04:09:01.123Z", "level": "INFO", "logger": "weir_router.server", "message": "..."}

A JSON line has `exc_info` (the formatted traceback) when the record carries an exception, and
`stack_info` when it carries a stack; a message's newlines stay inside the JSON string, so one record
is always one line. Plain `logging` formatters: every library the services run (grpc, pyspark,
pynumaflow, aiorun) logs through the standard `logging` module, and these format its records too.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Literal

LogFormatName = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormatName, ...] = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"


def utc_timestamp(created: float) -> str:
    """`created` (seconds since the epoch, as `LogRecord.created`) as ISO-8601 UTC with milliseconds
    and a `Z`: 1796616541.1234 -> '2026-12-07T04:09:01.123Z'. Milliseconds are truncated, as
    `LogRecord.msecs` is."""
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


class UtcTextFormatter(logging.Formatter):
    """`TEXT_FORMAT` lines whose time is `utc_timestamp` (logging's default is local time, no zone)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return utc_timestamp(record.created)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, message, and exc_info / stack_info when present.
    ASCII-only JSON (non-ASCII text is escaped), so a stream with any encoding carries valid lines."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, str] = {
            "ts": utc_timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry)


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of `log_format` ('text' or 'json'); ValueError for any other."""
    if log_format == "json":
        return JsonFormatter()
    if log_format == "text":
        return UtcTextFormatter()
    raise ValueError(f"unknown log format {log_format!r}: expected one of {', '.join(LOG_FORMATS)}")


def configure_logging(level: str, log_format: str = "text") -> None:
    """Log records at `level` and above to stderr in `log_format` (the root logger's one handler, as
    `logging.basicConfig` sets it up; a no-op when the root logger has handlers already)."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(log_format))
    logging.basicConfig(level=level.upper(), handlers=[handler])
