"""The library's logging: structlog events routed through the standard ``logging`` module.

A library must stay quiet unless the application enables it, and must never configure logging for
the application. So every module of ``informer`` logs through::

    from informer._log import get_logger

    log = get_logger("informer.reflector").bind(resource="configmaps")
    log.info("reflector.relist", rv="42", objects=3)

- ``get_logger(name)`` returns a structlog ``BoundLogger`` wrapping ``logging.getLogger(name)``
  (names under ``informer.``). Its processors are private to the library: structlog's global
  ``structlog.configure`` is never called and never consulted (the application owns it).
- Levels and output belong to the application: ``logging.getLogger("informer").setLevel(...)`` and
  its handlers decide. The ``informer`` logger carries a ``NullHandler``, so an application that
  configured nothing sees nothing (not even warnings through ``logging.lastResort``).
- Each record's ``msg`` is the structured event dict (``event`` = the stable event name, plus the
  bound context and the call's keys, ``level`` and ``logger``), passed exactly as structlog's
  ``ProcessorFormatter.wrap_for_formatter`` does: a handler whose formatter is a
  ``structlog.stdlib.ProcessorFormatter`` renders it structured (console, JSON, logfmt). A plain
  ``logging.Formatter`` gets ``record.getMessage()`` == ``"reflector.relist rv='42' objects=3"``.
- Exceptions never reach a handler: ``log.exception(...)`` (or ``exc_info``) is replaced by
  ``error`` = the exception's type and the ``file:line in function`` of each frame (see
  ``describe_error`` and ``_safe_exception``). An exception's message can quote object data (a
  Secret's value in a ``KeyError``) and renderers that print tracebacks with locals (structlog's
  ``ConsoleRenderer`` with rich, ``dict_tracebacks``) would print the objects in every frame.
- A failure of the application's code the library ran (a reconcile) is described by
  ``describe_failure``: the exception's type, the application's line that led to it (not the
  library's line that raised), and for an API error the failed request (status, reason, verb,
  resource, namespace, name).
- A failure the library met talking to the API server (a Status, a dropped connection, a
  malformed line) is described by ``error_fields``: the error's type, the HTTP status, the Status
  ``reason`` and ``details.kind``/``details.group`` (only when they look like the identifiers
  they are), the request (verb, resource, namespace, name) and the cause's type and errno. Never
  the Status ``message`` or ``str()`` of such an error: the server's text can quote object data
  (a validation error quotes the field's value, an admission webhook answers any text).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import re
import sys
import traceback
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import structlog
    from structlog.typing import EventDict, WrappedLogger

__all__ = ["capture_logs", "describe_error", "describe_failure", "error_fields", "get_logger"]

ROOT = "informer"
logging.getLogger(ROOT).addHandler(logging.NullHandler())

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def describe_error(exc: BaseException) -> str:
    """An exception for a log line: its type and where it was raised, never its message or
    locals (they can quote an object's data, e.g. a Secret's)."""
    tb = exc.__traceback__
    if tb is None:
        return type(exc).__name__
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{type(exc).__name__} in {code.co_name} ({code.co_filename}:{tb.tb_lineno})"


def _in_library(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE)


@functools.cache
def _install_dirs() -> tuple[str, ...]:
    """Where the standard library and installed packages live (looked up once, when needed)."""
    import sysconfig

    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple({os.path.join(paths[k], "") for k in keys if paths.get(k)})


def _installed(filename: str) -> bool:
    """In the standard library or an installed package (not the application's own code)."""
    return os.path.abspath(filename).startswith(_install_dirs())


def _user_frame(exc: BaseException) -> tuple[str, str, int] | None:
    """``(function, file, line)`` of the line of the application that led to ``exc``: reading
    the traceback from the frame that caught it, the first run of frames outside this library
    (the application's callback: a reconcile, a handler), and in it the last frame of the
    application's own code (not of the standard library or an installed package), else the
    run's first frame. None when every frame is the library's."""
    run: list[traceback.FrameSummary] = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if _in_library(frame.filename):
            if run:
                break
            continue
        run.append(frame)
    if not run:
        return None
    own = [f for f in run if not _installed(f.filename)]
    frame = own[-1] if own else run[0]
    return frame.name, frame.filename, frame.lineno or 0


def describe_failure(exc: BaseException) -> dict[str, Any]:
    """A failure of the application's code (a reconcile) for a log record, without its message
    or locals (they can quote object data): ``error`` = the type and the application's line that
    led to it (``NotFound in reconcile (/app/operator.py:42)``: the first frame outside this
    library, not the library's line that raised), and the fields of ``error_fields`` (for an
    API error its ``status``, ``reason`` and Status ``details.kind``/``group``; for an error of
    a request the library sent, the request's ``verb``, ``resource``, ``namespace``, ``name``)."""
    where = _user_frame(exc)
    if where is None:
        fields: dict[str, Any] = {"error": describe_error(exc)}
    else:
        function, filename, line = where
        fields = {"error": f"{type(exc).__name__} in {function} ({filename}:{line})"}
    # an API error: status, reason, details.kind/group; a connection that failed: its cause;
    # both: which request (error_fields: never the server's text)
    described = error_fields(exc)
    del described["error"]
    fields.update(described)
    return fields


# What a Status reason, a details.kind or a group looks like (``Forbidden``, ``ConfigMap``,
# ``apps.example.com``): anything else is the server's text, not logged.
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9.-]{0,62}")
# The part of a MalformedWatchLine's ``why`` that is ours (``unknown event type``): what follows
# a quote or a colon can be the line's text.
_WHY_END = re.compile(r"[:'\"`(\[{]")


def _identifier(value: object) -> str | None:
    return value if isinstance(value, str) and _IDENTIFIER.fullmatch(value) else None


def _number(value: object) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def error_fields(exc: BaseException) -> dict[str, Any]:
    """A failure the library met (an API error, a dropped connection, a malformed watch line)
    for a log record, from what the client knows, never from the server's text: ``error`` = the
    type; for an API error ``status``, ``reason``, ``kind`` and ``group`` (the Status
    ``details``: what was refused) and ``retry_after``; the request (``verb``, ``resource``,
    ``namespace``, ``name``, ``subresource``); for a connection that failed the cause's type
    (``cause``) and ``errno``; for a bad watch line its ``offset`` and what was wrong."""
    fields: dict[str, Any] = {"error": type(exc).__name__}
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool) and hasattr(exc, "reason"):
        fields["status"] = code
        reason = getattr(exc, "reason", None)
        if reason:
            fields["reason"] = _identifier(reason) or "<not an identifier>"
        details = getattr(exc, "details", None)
        if isinstance(details, Mapping):
            for key in ("kind", "group"):
                value = _identifier(details.get(key))
                if value is not None:
                    fields[key] = value
        retry_after = _number(getattr(exc, "retry_after", None))
        if retry_after is not None:
            fields["retry_after"] = retry_after
    log_fields = getattr(getattr(exc, "request", None), "log_fields", None)
    if callable(log_fields):
        fields.update(log_fields())
    cause = exc.__cause__
    if cause is not None and "status" not in fields:
        fields["cause"] = type(cause).__name__
        number = getattr(cause, "errno", None)
        if isinstance(number, int) and number in errno.errorcode:
            fields["errno"] = errno.errorcode[number]
    for attribute in ("offset", "limit", "seconds"):  # a watch stream's failure: ours, numbers
        number_ = _number(getattr(exc, attribute, None))
        if number_ is not None:
            fields[attribute] = number_
    why = getattr(exc, "why", None)
    if isinstance(why, str) and why:
        fields["why"] = _WHY_END.split(why, 1)[0].strip()
    return fields


def _describe_traceback(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    return " <- ".join(reversed(lines)) if lines else ""


def _safe_exception(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """Replace ``exc_info`` (and ``exception``) by the exception's type and frames, no data."""
    info = event.pop("exc_info", None)
    event.pop("exception", None)
    event.pop("stack_info", None)
    if info is None or info is False:
        return event
    if info is True:
        info = sys.exc_info()
    exc: BaseException | None
    if isinstance(info, BaseException):
        exc = info
    elif isinstance(info, tuple) and len(info) == 3:
        exc = info[1]
    else:
        exc = None
    if exc is not None:
        event["error"] = type(exc).__name__
        event["frames"] = _describe_traceback(exc)
    return event


class _Event(dict[str, Any]):
    """The event dict as ``record.msg``: structured for ``ProcessorFormatter`` (it copies the
    dict), a one-line ``event key=value ...`` for ``record.getMessage()``."""

    def __str__(self) -> str:
        skip = ("event", "level", "logger")
        rest = " ".join(f"{k}={v!r}" for k, v in self.items() if k not in skip)
        return f"{self.get('event', '')} {rest}".rstrip()


def _to_record(
    logger: WrappedLogger, name: str, event: EventDict
) -> tuple[tuple[_Event], dict[str, Any]]:
    # stacklevel: the record's file and line are those of the library's call, not structlog's
    return (_Event(event),), {"extra": {"_logger": logger, "_name": name}, "stacklevel": 4}


def _structlog_logger_class() -> Any:
    """The structlog logger class and processors of the library, made on first use: structlog is
    imported then, not with ``informer`` (``import structlog`` takes a tenth of a second, and
    imports rich when it is installed)."""
    global _LOGGER_CLASS
    if _LOGGER_CLASS is not None:
        return _LOGGER_CLASS
    import structlog

    processors: list[Any] = [
        structlog.stdlib.filter_by_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        _safe_exception,
        _to_record,
    ]

    class _BoundLogger(structlog.stdlib.BoundLogger):
        def exception(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
            # stdlib's Logger.exception would attach the traceback to the record: log an error
            # whose exception _safe_exception reduces to its type and frames instead
            kw.setdefault("exc_info", True)
            return self.error(event, *args, **kw)

    def make(name: str) -> Any:
        return _BoundLogger(logging.getLogger(name), processors, {})

    _LOGGER_CLASS = make
    return make


_LOGGER_CLASS: Any = None


class _LazyLogger:
    """Stands for the structlog logger of ``name`` (with ``context`` bound) until it is used.

    Modules create their loggers when imported; the first call of a logging method (or anything
    but ``bind``) makes the real logger, and from then on every attribute comes from it directly
    (set on this instance), so a record's call site is the library's line, as without this."""

    def __init__(self, name: str, context: dict[str, Any]) -> None:
        self._name = name
        self._context = context
        self._logger: Any = None

    def _real(self) -> Any:
        logger = self._logger
        if logger is None:
            logger = _structlog_logger_class()(self._name)
            if self._context:
                logger = logger.bind(**self._context)
            self._logger = logger
        return logger

    def bind(self, **values: Any) -> Any:
        if self._logger is not None:
            return self._logger.bind(**values)
        return _LazyLogger(self._name, {**self._context, **values})

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._real(), attribute)
        if attribute in _LOG_METHODS:
            setattr(self, attribute, value)  # found directly next time
        return value


_LOG_METHODS = frozenset(
    ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log", "msg")
)


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A structlog logger for ``name`` (under ``informer.``) that emits through stdlib logging.

    structlog itself is imported at the first record (see ``_LazyLogger``)."""
    return cast("structlog.stdlib.BoundLogger", _LazyLogger(name, {}))


@contextlib.contextmanager
def capture_logs(level: int = logging.DEBUG) -> Iterator[list[dict[str, Any]]]:
    """Collect the library's log events as dicts (``event``, ``log_level``, context, keys) while
    the block runs, whatever the application configured: for tests, like structlog's own
    ``structlog.testing.capture_logs`` (which sees only the global configuration)."""
    events: list[dict[str, Any]] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            msg = record.msg
            entry = dict(msg) if isinstance(msg, dict) else {"event": record.getMessage()}
            entry["log_level"] = record.levelname.lower()
            events.append(entry)

    root = logging.getLogger(ROOT)
    handler = _Collect(level)
    old = root.level
    root.addHandler(handler)
    root.setLevel(min(level, old) if old else level)
    try:
        yield events
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
