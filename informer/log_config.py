"""Logging set-up for applications and the CLI: one call, human console lines or JSON lines.

The library only emits records (through ``structlog`` bound loggers routed into the standard
``logging`` module); what happens to them is the application's choice. ``configure_logging``
makes one: records of the library and of the application (stdlib or structlog) go to one stream,
as coloured ``key=value`` console lines (``fmt="console"``, colours only on a terminal) or one JSON
object per line (``fmt="json"``) with ``timestamp``, ``level``, ``logger``, ``event`` and the
record's fields. Every record has a timestamp (the library's too: they reach the formatter
structured, past ``foreign_pre_chain``) and the application's structlog contextvars. Calling it
again replaces the previous set-up.
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    import structlog

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "configure_logging"]

LogFormat = Literal["console", "json"]
LOG_FORMATS: tuple[str, ...] = ("console", "json")
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "warning", "error", "critical")


def _timestamp_from_record(
    _: structlog.typing.WrappedLogger, __: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """The library's records (structured, so ``foreign_pre_chain`` does not run for them) get the
    ``timestamp`` every other record has: when the record was made, ISO 8601 in UTC."""
    if "timestamp" not in event:
        record = event.get("_record")
        created = record.created if isinstance(record, logging.LogRecord) else time.time()
        stamp = datetime.fromtimestamp(created, UTC).isoformat().replace("+00:00", "Z")
        event["timestamp"] = stamp
    return event


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Ours, so that a second ``configure_logging`` replaces it and leaves others alone."""


def configure_logging(
    level: str | int = "info",
    fmt: LogFormat | str = "console",
    *,
    stream: TextIO | None = None,
) -> None:
    """Send every log record at ``level`` or above to ``stream`` (stderr) in format ``fmt``."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; one of {LOG_FORMATS}")
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}; one of {LOG_LEVELS}")
    import structlog  # here, not with the module: it takes a tenth of a second to import

    out = stream if stream is not None else sys.stderr
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.format_exc_info)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = _Handler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.contextvars.merge_contextvars,
                _timestamp_from_record,
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
