"""``informer serve``: run the embedded test API server until interrupted.

``--resources FILE`` serves the CustomResourceDefinitions in FILE, ``--seed FILE`` creates the
objects in FILE (YAML documents or JSON, lists and ``kind: List`` expanded), ``--faults FILE``
installs fault rules (a YAML/JSON list of mappings of ``informer.testing.Fault`` fields, e.g.
``- {verb: watch, resource: configmaps, status: 410}``); each may be given more than once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from informer.cli._common import (
    HelpFormatter,
    non_negative_float,
    non_negative_int,
    port,
    positive_float,
    positive_int,
)
from informer.testing._manifests import ManifestError, load_faults, load_manifests
from informer.testing._status import StatusError
from informer.testing.server import PERSONALITIES, ApiServer

DESCRIPTION = """\
Run the embedded test API server on 127.0.0.1 until interrupted (Ctrl-C) or terminated, and print
its URL. It serves list, watch and writes as a kube-apiserver backed by etcd does, with the
personality and history settings below.

--resources FILE serves the CustomResourceDefinitions in FILE; --seed FILE creates the objects in
FILE (YAML documents or JSON; lists and kind: List are expanded); --faults FILE installs fault
rules: a YAML or JSON list of mappings of informer.testing.Fault fields, for example
[{verb: watch, resource: configmaps, status: 410}]. Each may be given more than once.
"""


def register(commands: Any, help: str) -> None:
    """Add the ``serve`` sub-command to ``commands`` (an argparse sub-parsers action)."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help=help,
        description=DESCRIPTION,
        formatter_class=HelpFormatter,
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: %(default)s)"
    )
    serve.add_argument(
        "--port", type=port, default=0, help="the port, 0 for a free one (default: %(default)s)"
    )
    serve.add_argument(
        "--personality",
        choices=PERSONALITIES,
        default="modern",
        help="the kind of server to behave as (default: %(default)s)",
    )
    serve.add_argument(
        "--compaction-window",
        type=positive_int,
        default=None,
        metavar="N",
        help="keep at most N revisions of history (default: no limit)",
    )
    serve.add_argument(
        "--history-max-age",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="forget history older than this (default: no limit)",
    )
    serve.add_argument(
        "--too-large-wait",
        type=non_negative_float,
        default=3.0,
        metavar="SECONDS",
        help="how long a read of a future resource version waits before its 504 "
        "(default: %(default)s)",
    )
    serve.add_argument(
        "--bookmark-interval",
        type=positive_float,
        default=60.0,
        metavar="SECONDS",
        help="period of the bookmarks sent to watches (default: %(default)s)",
    )
    serve.add_argument(
        "--stale-lag",
        type=non_negative_int,
        default=5,
        metavar="N",
        help="revisions the stale-replica personality lags behind (default: %(default)s)",
    )
    serve.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a self-signed CA, written into --kubeconfig (default: plain HTTP)",
    )
    serve.add_argument(
        "--root-ca-configmaps",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="every namespace has its kube-root-ca.crt ConfigMap, as on a cluster "
        "(default: %(default)s)",
    )
    serve.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="also write a kubeconfig for the server there (default: none)",
    )
    serve.add_argument(
        "--resources",
        action="append",
        default=[],
        metavar="FILE",
        help="serve the CustomResourceDefinitions in FILE (default: none)",
    )
    serve.add_argument(
        "--seed",
        action="append",
        default=[],
        metavar="FILE",
        help="create the objects in FILE at start (default: none)",
    )
    serve.add_argument(
        "--faults",
        action="append",
        default=[],
        metavar="FILE",
        help="install the fault rules in FILE (default: none)",
    )
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; returns the exit status (2 for a file it cannot use, 1 when it
    cannot listen)."""
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args))
    except (ManifestError, ValueError, StatusError) as error:
        print(f"informer serve: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        why = error.strerror or str(error)
        where = f"{args.host}:{args.port}"
        print(f"informer serve: error: cannot listen on {where}: {why}", file=sys.stderr)
        return 1
    return 0


def _prepare(server: ApiServer, args: argparse.Namespace) -> None:
    """Load ``--resources``, ``--seed`` and ``--faults`` into ``server`` (before it serves)."""
    for path in args.resources:
        crds = load_manifests(path)
        other = [o["kind"] for o in crds if o.get("kind") != "CustomResourceDefinition"]
        if other:
            raise ManifestError(f"{path}: not CustomResourceDefinitions: {sorted(set(other))}")
        server.seed(crds)
    for path in args.seed:
        server.seed(load_manifests(path))
    for path in args.faults:
        for fault in load_faults(path):
            server.faults.add(fault)


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
        tls=args.tls,
        root_ca_configmaps=args.root_ca_configmaps,
    )
    _prepare(server, args)
    async with server:
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        print(server.url, flush=True)
        await asyncio.Event().wait()
