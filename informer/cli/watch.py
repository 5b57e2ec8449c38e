"""``informer watch RESOURCE``: an informer on a real cluster, shown live, as events, or as JSON.

The resource is resolved through the cluster's discovery (plural, short name, ``plural.group``,
``group/version/plural``). Output: a live table of the cache with its freshness (on a terminal),
one line per change (``-o events``, the default when stdout is not a terminal), or one JSON object
per change (``-o json``, as ``kubectl get -w -o json --output-watch-events``). ``--wait-for-rv RV``
exits 0 as soon as the cache has seen RV: a freshness probe for scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from typing import Any

import msgspec

from informer.cli._common import (
    HelpFormatter,
    add_common_options,
    positive_float,
    resource_version,
    run_command,
)
from informer.cli._errors import CliError, describe
from informer.cli._monitor import InformerMonitor
from informer.cli._progress import ProgressTransport
from informer.connect import connect
from informer.discovery import discover
from informer.informer import Informer
from informer.reflector import ReflectorOptions
from informer.resource import Resource
from informer.store import Compression, Delta, Tombstone
from informer.transport import Transport

_PROG = "informer watch"
_SERVER_PROBE_INTERVAL = 5.0
_encode = msgspec.json.Encoder().encode


DESCRIPTION = """\
An informer on a resource of your cluster (the kubeconfig's current context, or the service account
in a pod), shown live, as events, or as JSON.

RESOURCE is resolved through the cluster's discovery: a plural (pods), a short name (cm),
plural.group (deployments.apps) or group/version/plural. On a terminal: a live view of the cache's
freshness (its RV against the server's) and a table of the cache. Otherwise, or with -o events:
sync progress, then one line per change; -o json prints one {"type": ..., "object": ...} line per
change, as kubectl get -w -o json --output-watch-events does.

--wait-for-rv RV exits 0 as soon as the cache has seen RV, and 1 after --timeout: a freshness
probe for scripts. Failures are one line on stderr: exit status 1, or 2 for a bad argument.
"""


def register(commands: Any, help: str) -> None:
    """Add the ``watch`` sub-command to ``commands`` (an argparse sub-parsers action)."""
    watch: argparse.ArgumentParser = commands.add_parser(
        "watch",
        help=help,
        description=DESCRIPTION,
        formatter_class=HelpFormatter,
    )
    watch.add_argument("resource", metavar="RESOURCE", help="e.g. pods, cm, deployments.apps")
    scope = watch.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="the namespace (default: the context's, else default)",
    )
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    watch.add_argument(
        "-l", "--selector", default=None, help="label selector, e.g. app=web (default: none)"
    )
    watch.add_argument(
        "--field-selector",
        default=None,
        metavar="SELECTOR",
        help="field selector, e.g. metadata.name=x (default: none)",
    )
    watch.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)",
    )
    watch.add_argument(
        "--context", default=None, help="the kubeconfig context (default: its current one)"
    )
    watch.add_argument(
        "-o",
        "--output",
        choices=("table", "events", "json"),
        default=None,
        help="table (live), events (one line per change) or json "
        "(default: table on a terminal, else events)",
    )
    watch.add_argument(
        "--wait-for-rv",
        type=resource_version,
        default=None,
        metavar="RV",
        help="exit 0 once the cache has seen this resource version (a decimal number)",
    )
    watch.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="give up (exit 1) after this long: the sync, or --wait-for-rv "
        "(default: no limit; 60 with --wait-for-rv)",
    )
    watch.add_argument("--refresh", type=positive_float, default=0.5, help=argparse.SUPPRESS)
    watch.add_argument(
        "--compress",
        action="store_true",
        help="hold the cache's objects compressed (a zstd dictionary trained on them; needs "
        "the compression extra); the live view shows the cache's bytes and their ratio to "
        "the JSON either way",
    )
    add_common_options(watch)
    watch.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; returns the exit status."""
    return run_command(_PROG, args, _main, lambda: getattr(args, "server", None))


def _default_namespace(args: argparse.Namespace) -> str:
    """The kubeconfig context's namespace (in a pod: the service account's), else default."""
    if args.namespace:
        return str(args.namespace)
    in_pod = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    if args.kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        with contextlib.suppress(OSError):
            with open(in_pod) as f:
                return f.read().strip() or "default"
    from kubernetes_asyncio.config import list_kube_config_contexts

    with contextlib.suppress(Exception):
        contexts, current = list_kube_config_contexts(args.kubeconfig)
        if args.context:
            current = next((c for c in contexts if c.get("name") == args.context), current)
        namespace = ((current or {}).get("context") or {}).get("namespace")
        if isinstance(namespace, str) and namespace:
            return namespace
    return "default"


def _event_line(delta: Delta) -> str:
    obj = delta.obj.obj if isinstance(delta.obj, Tombstone) else delta.obj
    kind = {"added": "ADDED", "updated": "MODIFIED", "deleted": "DELETED"}[delta.type]
    initial = " (initial)" if delta.is_initial else ""
    return f"{kind:<8} {obj.key} rv={obj.resource_version}{initial}"


def _json_line(delta: Delta) -> bytes:
    obj = delta.obj.obj if isinstance(delta.obj, Tombstone) else delta.obj
    kind = {"added": "ADDED", "updated": "MODIFIED", "deleted": "DELETED"}[delta.type]
    return _encode({"type": kind, "object": obj.to_dict()}) + b"\n"


class _Printer:
    """Writes changes to stdout as lines or JSON, as they reach the handler."""

    def __init__(self, output: str) -> None:
        self.output = output

    def __call__(self, delta: Delta) -> None:
        if self.output == "json":
            sys.stdout.buffer.write(_json_line(delta))
            sys.stdout.buffer.flush()
        else:
            print(_event_line(delta), flush=True)


async def _probe_server_rv(
    transport: Transport,
    resource: Resource,
    namespace: str | None,
    monitor: InformerMonitor,
) -> None:
    """The server's current RV, every few seconds (a one-item consistent list), for the lag."""
    while True:
        with contextlib.suppress(Exception):
            page = await transport.list_page(resource, namespace=namespace, limit=1)
            monitor.lag.observe(monitor.parse_rv(page.resource_version))
        await asyncio.sleep(_SERVER_PROBE_INTERVAL)


def _kubeconfig_paths(args: argparse.Namespace) -> list[str] | None:
    """The kubeconfig files the connection reads; None in a pod without ``--kubeconfig``."""
    if args.kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    if args.kubeconfig is not None:
        return [args.kubeconfig]
    if os.environ.get("KUBECONFIG"):
        return [p for p in os.environ["KUBECONFIG"].split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


def _yaml_problem(error: Exception) -> str:
    """A YAML parse error in one line: what and where (its text spans several lines)."""
    problem = getattr(error, "problem", None) or type(error).__name__
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def _check_kubeconfig(paths: list[str]) -> None:
    """Fail with one line when no kubeconfig exists, or one is not a kubeconfig at all (before
    connecting: ``kubernetes_asyncio`` answers those with a traceback)."""
    existing = [p for p in paths if os.path.isfile(p)]
    if not existing:
        raise CliError(
            f"no kubeconfig: {os.pathsep.join(paths)} not found "
            "(pass --kubeconfig, set KUBECONFIG, or run in a pod)"
        )
    import yaml

    for path in existing:
        try:
            with open(path, encoding="utf-8") as f:
                content = yaml.safe_load(f)
        except OSError as exc:
            raise CliError(f"cannot read kubeconfig {path}: {exc.strerror or exc}") from exc
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise CliError(f"kubeconfig {path} is not valid YAML: {_yaml_problem(exc)}") from exc
        if content is None:
            raise CliError(f"kubeconfig {path} is empty")
        if not isinstance(content, dict):
            raise CliError(
                f"kubeconfig {path} is not a kubeconfig: a YAML mapping "
                f"(clusters, users, contexts) was expected, not a {type(content).__name__}"
            )


async def _connect(args: argparse.Namespace) -> Any:
    """``connect()``, with the kubeconfig checked first and its loading failures in one line."""
    paths = _kubeconfig_paths(args)
    if paths is not None:
        _check_kubeconfig(paths)
    try:
        return await connect(args.kubeconfig, args.context)
    except Exception as exc:
        if describe(exc) is not None:
            raise  # worded already (no usable kubeconfig, a missing file, ...)
        where = os.pathsep.join(paths) if paths is not None else "the in-cluster configuration"
        raise CliError(f"cannot use {where}: {type(exc).__name__}: {exc}") from exc


async def _main(args: argparse.Namespace) -> int:
    api = await _connect(args)
    try:
        return await _watch(args, api)
    finally:
        await api.close()


async def _watch(args: argparse.Namespace, api: Any) -> int:
    args.server = str(getattr(api.configuration, "host", "") or "") or None
    transport = ProgressTransport(api)
    probes = Transport(api)  # server RV probes, not counted as the informer's list progress
    resource = await discover(probes, args.resource)
    namespace = None
    if resource.namespaced and not args.all_namespaces:
        namespace = _default_namespace(args)
    # One small list first: RBAC, TLS and reachability fail here, at once, with their cause (the
    # informer itself would retry them with backoff forever).
    probe = await probes.list_page(
        resource,
        namespace=namespace,
        limit=1,
        label_selector=args.selector,
        field_selector=args.field_selector,
    )
    informer = Informer(
        transport,
        resource,
        namespace=namespace,
        label_selector=args.selector,
        field_selector=args.field_selector,
        options=ReflectorOptions(
            list_strategy="list", compression=Compression() if args.compress else None
        ),
    )
    scope = f"in {namespace}" if namespace else "in all namespaces"
    name = f"{resource.group_resource} {scope}" + (f" -l {args.selector}" if args.selector else "")
    output = args.output or ("table" if sys.stdout.isatty() else "events")
    if args.wait_for_rv is not None:
        output = args.output or "quiet"
    handlers = []
    if output in ("events", "json"):
        printer = _Printer(output)
        handlers.append(
            informer.add_handler(
                on_add=lambda obj, initial: printer(Delta("added", obj, None, initial)),
                on_update=lambda old, new: printer(Delta("updated", new, old)),
                on_delete=lambda obj: printer(Delta("deleted", obj, None)),
                name="cli",
            )
        )
    monitor = InformerMonitor(informer, name, transport=transport, handlers=handlers)
    monitor.lag.observe(monitor.parse_rv(probe.resource_version))
    if args.metrics_port is not None:
        from informer.metrics import register_metrics, serve_metrics

        register_metrics(informer)
        port = serve_metrics(args.metrics_port).server_port
        print(f"metrics: http://127.0.0.1:{port}/metrics", file=sys.stderr, flush=True)
    status = sys.stderr if output == "json" else sys.stdout
    async with informer:
        prober = asyncio.create_task(_probe_server_rv(probes, resource, namespace, monitor))
        try:
            if output == "table":
                from informer.cli._watch_view import live  # rich: only for this view

                return await live(informer, monitor, args.refresh)
            await _sync(informer, monitor, args, status)
            if args.wait_for_rv is not None:
                timeout = 60.0 if args.timeout is None else args.timeout
                await informer.wait_for_resource_version(args.wait_for_rv, timeout=timeout)
                print(
                    f"{name}: cache has seen RV {args.wait_for_rv} "
                    f"(cache RV {informer.store.resource_version})",
                    file=status,
                    flush=True,
                )
                return 0
            await asyncio.Event().wait()
            return 0
        finally:
            prober.cancel()


async def _sync(
    informer: Informer, monitor: InformerMonitor, args: argparse.Namespace, out: Any
) -> None:
    """Wait for the first list, printing progress lines."""
    start = time.monotonic()
    deadline = None if args.timeout is None else start + args.timeout
    while not informer.has_synced:
        print(f"{monitor.name}: sync {monitor.sample().progress}", file=out, flush=True)
        wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
        if wait <= 0:
            raise CliError(f"{monitor.name}: not synced after {args.timeout} s")
        with contextlib.suppress(TimeoutError):
            await informer.wait_for_sync(timeout=wait)
    print(
        f"{monitor.name}: synced {len(informer.store)} objects at RV "
        f"{informer.store.resource_version} in {time.monotonic() - start:.2f} s",
        file=out,
        flush=True,
    )
