"""The ``informer`` command line (``python -m informer COMMAND`` or the ``informer`` script).

One module per command: each exposes ``register(commands, help)``, which adds its sub-parser and
sets ``run`` (a callable taking the parsed arguments and returning the exit status) as its
default. Only the command asked for is imported (the others are listed by name and help): a
command starts without importing what the others need (the test API server, rich).
Every failure a user can act on is one line on stderr (see ``_common``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence

from informer.cli._common import HelpFormatter, OneLineParser

_DISTRIBUTION = "kube-informer"
# what the command line needs beyond the library: the "cli" extra
_CLI_EXTRA = {"rich": "rich", "yaml": "PyYAML"}
# command: (module, one-line help)
_COMMANDS = {
    "demo": (
        "informer.cli.demo",
        "informers and a controller against a busy, faulty embedded API server",
    ),
    "serve": ("informer.cli.serve", "run the test API server until interrupted"),
    "watch": ("informer.cli.watch", "watch a resource of a cluster through an informer"),
}


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


def _command_in(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the root parser's
    options take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command's in full when ``argv`` is None, else the one that
    ``argv`` names (the others listed only)."""
    root = OneLineParser(
        prog="informer",
        description="Asyncio Kubernetes informers: a demo, a test API server, and a cluster "
        "watcher. Run informer COMMAND --help for a command's options.",
        formatter_class=HelpFormatter,
    )
    root.add_argument("--version", action=_Version)
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = None if argv is None else _command_in(argv)
    for name, (module, help) in _COMMANDS.items():
        if argv is None or name == wanted:
            importlib.import_module(module).register(commands, help)
        else:
            commands.add_parser(name, help=help)
    return root


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported (found, not imported: a command imports what it uses)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _missing_extra() -> str | None:
    """The one-line error when the "cli" extra is not installed, else None."""
    missing = [name for module, name in _CLI_EXTRA.items() if not _installed(module)]
    if not missing:
        return None
    return (
        f"the command line needs {' and '.join(missing)}, which the library alone does not "
        f'install: pip install "{_DISTRIBUTION}[cli]"'
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(words)
    missing = _missing_extra() if command in _COMMANDS else None
    if missing is not None:  # before the command's module imports them
        print(f"informer {command}: error: {missing}", file=sys.stderr, flush=True)
        return 1
    args = parser(words).parse_args(words)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)
