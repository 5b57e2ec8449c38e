"""The ``informer`` command line (``python -m informer COMMAND`` or the ``informer`` script).

One module per command: each exposes ``register(commands)``, which adds its sub-parser and sets
``run`` (a callable taking the parsed arguments and returning the exit status) as its default.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from informer.cli import demo, serve, watch

_COMMANDS = (demo, serve, watch)


def parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    root = argparse.ArgumentParser(
        prog="informer", description="Asyncio Kubernetes informers: tools and demo."
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.register(commands)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)
