"""Options and plumbing shared by the commands: logging, ``--debug``, running, exit statuses."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from informer.cli._errors import describe
from informer.log_config import LOG_FORMATS, LOG_LEVELS, configure_logging

__all__ = ["add_common_options", "run_command"]


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, ``--log-format``, ``--debug`` and ``--metrics-port``."""
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning")
    parser.add_argument(
        "--log-format", choices=LOG_FORMATS, default="console", help="console (human) or json"
    )
    parser.add_argument(
        "--debug", action="store_true", help="debug logs, and a traceback on errors"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics (needs informer[metrics])",
    )


def run_command(
    prog: str,
    args: argparse.Namespace,
    main: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
    server: Callable[[], str | None] = lambda: None,
) -> int:
    """Run ``main(args)`` in a new event loop: its exit status, 130 on Ctrl-C, 1 with a one-line
    error for the failures a user can act on (a traceback too with ``--debug``)."""
    configure_logging("debug" if args.debug else args.log_level, args.log_format)
    try:
        return asyncio.run(main(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        message = describe(exc, server())
        if message is None or args.debug:
            raise
        print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
        return 1
