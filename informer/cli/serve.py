"""``informer serve``: run the embedded test API server until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import Any

from informer.testing.server import PERSONALITIES, ApiServer


def register(commands: Any) -> None:
    """Add the ``serve`` sub-command to ``commands`` (an argparse sub-parsers action)."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve", help="run the test API server until interrupted", description=__doc__
    )
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
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; returns the exit status."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    return 0


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
