"""Command line: ``python -m informer serve --port PORT [--personality NAME] ...``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence

from informer.testing.server import PERSONALITIES, ApiServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m informer", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the test API server until interrupted")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 = an ephemeral port")
    serve.add_argument("--personality", choices=PERSONALITIES, default="modern")
    serve.add_argument(
        "--compaction-window",
        type=int,
        default=None,
        metavar="N",
        help="keep at most N revisions of history",
    )
    serve.add_argument("--history-max-age", type=float, default=None, metavar="SECONDS")
    serve.add_argument("--too-large-wait", type=float, default=3.0, metavar="SECONDS")
    serve.add_argument("--bookmark-interval", type=float, default=60.0, metavar="SECONDS")
    serve.add_argument("--stale-lag", type=int, default=5, metavar="N")
    serve.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="also write a kubeconfig for the server there",
    )
    return parser


async def _serve(args: argparse.Namespace) -> None:
    server = ApiServer(
        args.personality,
        host=args.host,
        port=args.port,
        compaction_window=args.compaction_window,
        history_max_age=args.history_max_age,
        too_large_wait=args.too_large_wait,
        bookmark_interval=args.bookmark_interval,
        stale_lag=args.stale_lag,
    )
    async with server:
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        print(server.url, flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
