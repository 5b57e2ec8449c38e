"""The ``informer`` command line (``python -m informer COMMAND`` or the ``informer`` script).

One module per command: each exposes ``register(commands)``, which adds its sub-parser and sets
``run`` (a callable taking the parsed arguments and returning the exit status) as its default.
Every failure a user can act on is one line on stderr (see ``_common``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from informer.cli import demo, serve, watch
from informer.cli._common import HelpFormatter, OneLineParser

_COMMANDS = (demo, serve, watch)
_DISTRIBUTION = "informer"


def version() -> str:
    """The installed distribution's version (its metadata), or "unknown" when not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(_DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: reads the metadata only when asked (argparse's version action up front)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{_DISTRIBUTION} {version()}", flush=True)
        parser.exit(0)


def parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    root = OneLineParser(
        prog="informer",
        description="Asyncio Kubernetes informers: a demo, a test API server, and a cluster "
        "watcher. Run informer COMMAND --help for a command's options.",
        formatter_class=HelpFormatter,
    )
    root.add_argument("--version", action=_Version)
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.register(commands)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)
