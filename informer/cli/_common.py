"""Options and plumbing shared by the commands: the parser, argument checks, logging, ``--debug``,
running, exit statuses.

Every failure the user can act on is one line on stderr: a bad argument (exit 2, checked by the
parser before anything connects), and a failure while running (exit 1, worded by ``_errors``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, TextIO

from informer.cli._errors import describe
from informer.log_config import LOG_FORMATS, LOG_LEVELS
from informer.resource_version import InvalidResourceVersion, rv_sort_key

__all__ = [
    "HelpFormatter",
    "OneLineParser",
    "add_common_options",
    "non_negative_float",
    "non_negative_int",
    "port",
    "positive_float",
    "positive_int",
    "resource_version",
    "run_command",
]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (no usage block), exit status 2.

    Sub-parsers are of the same class (argparse makes them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.HelpFormatter):
    """Keeps the blank lines between paragraphs of a description (each paragraph reflowed)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = [p for p in text.strip().split("\n\n") if p.strip()]
        fill = super()._fill_text
        return "\n\n".join(fill(p, width, indent) for p in paragraphs)


def positive_float(text: str) -> float:
    """A number > 0 (seconds, rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number above 0")
    return value


def non_negative_float(text: str) -> float:
    """A number >= 0 (seconds)."""
    if text.strip() in ("0", "0.0", "0."):
        return 0.0
    return positive_float(text)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return value


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (an ephemeral one) to 65535."""
    value = _integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return value


def resource_version(text: str) -> str:
    """A resource version the cache can be asked about: a KEP-5504 (decimal) one."""
    try:
        rv_sort_key(text)
    except InvalidResourceVersion as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a resource version ({exc.why}); give a decimal one, e.g. 123456"
        ) from None
    return text


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, ``--log-format``, ``--debug`` and ``--metrics-port``."""
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="the least severe log records shown (default: %(default)s)",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="console",
        help="console (for people) or json (for log pipelines) (default: %(default)s)",
    )
    parser.add_argument(
        "--debug", action="store_true", help="debug logs, and a traceback on errors"
    )
    parser.add_argument(
        "--metrics-port",
        type=port,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics, 0 for any free port "
        "(needs the metrics extra; default: no metrics)",
    )


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of the write.

    A live view (``rich.live.Live``) replaces ``sys.stderr`` while it draws, so that what is
    written there goes above the view; a handler bound to the original stream would write over
    the view and leave copies of it on the screen."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.__stderr__ is not None and sys.__stderr__.isatty()


def _log_stream() -> TextIO:
    stream: Any = _CurrentStderr()
    return stream  # type: ignore[no-any-return]


def _check_metrics(args: argparse.Namespace) -> None:
    """``--metrics-port`` needs prometheus-client: say so before anything starts."""
    if getattr(args, "metrics_port", None) is None:
        return
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        from informer.cli._errors import CliError

        raise CliError(
            '--metrics-port needs prometheus-client: pip install "kube-informer[metrics]"'
        ) from None


def run_command(
    prog: str,
    args: argparse.Namespace,
    main: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
    server: Callable[[], str | None] = lambda: None,
) -> int:
    """Run ``main(args)`` in a new event loop: its exit status, 130 on Ctrl-C, 1 with a one-line
    error for the failures a user can act on (a traceback too with ``--debug``)."""
    from informer.log_config import configure_logging  # structlog: only for a command that runs

    level = "debug" if args.debug else args.log_level
    configure_logging(level, args.log_format, stream=_log_stream())
    try:
        _check_metrics(args)
        return asyncio.run(main(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        message = describe(exc, server())
        if message is None or args.debug:
            raise
        print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
        return 1
