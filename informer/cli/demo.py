"""``informer demo``: shared informers and a controller against a busy, misbehaving API server.

Everything runs in this process, nothing else is needed: the embedded test API server (pick its
``--personality``), a synthetic workload (ConfigMaps created, updated, relabelled and deleted
across namespaces, node Leases renewed) with history compaction so that 410s happen, and with
``--faults`` (on by default) dropped, cut and stalled watches, 429s, lagging lists and stale
replays. Shared informers watch it, and a small controller mirrors every ConfigMap into a Secret
with read-your-own-writes. A live view shows sync progress, events/s, each cache's RV against the
server's, relists, 410s, stale events dropped, freshness waits and queues; plain lines when stdout
is not a terminal. After ``--duration`` seconds (or Ctrl-C) the summary checks that every cache
equals the server's state, and the exit status says whether it does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import signal
import sys
import time
from typing import Any

from rich.console import Console, Group

from informer.backoff import BackoffPolicy
from informer.cli._common import (
    HelpFormatter,
    add_common_options,
    non_negative_int,
    positive_float,
    positive_int,
    run_command,
)
from informer.cli._convergence import catch_up, check_cache
from informer.cli._live import say as _say_line
from informer.cli._live import show
from informer.cli._mirror import mirror_controller, mirrors_converged
from informer.cli._monitor import InformerMonitor
from informer.cli._progress import ProgressTransport
from informer.cli._view import freshness_table, header_panel, plain_line
from informer.cli._workload import FaultSchedule, Workload, percentile
from informer.client import Client
from informer.controller import Controller
from informer.informer import Informer, SharedInformerFactory
from informer.objects import KubeObject
from informer.reflector import ReflectorOptions
from informer.resource import CONFIGMAPS, LEASES, SECRETS
from informer.store import Compression
from informer.testing import PERSONALITIES, ApiServer, ShardSelectorMode

_PROG = "informer demo"
_IDLE_TIMEOUT = 2.0


DESCRIPTION = """\
Shared informers and a controller against a busy, misbehaving API server, all in this process:
nothing else is needed.

The embedded test API server (--personality picks its kind) takes a synthetic workload (ConfigMaps
created, updated, relabelled and deleted across namespaces, node Leases renewed) and keeps a short
history, so that 410s happen. With --faults (on by default) it also drops, cuts and stalls
watches, answers 429s, serves lagging lists and replays stale events. Shared informers watch it,
and a small controller mirrors every ConfigMap into a Secret, reading its own writes.

On a terminal a live view shows each informer's sync progress, events/s, cache RV against the
server's, relists, 410s, stale events dropped and errors, with the freshness waits and the work
queue above; otherwise plain lines every --interval seconds. After --duration seconds (or Ctrl-C)
the summary checks that every cache equals the server's state; the exit status is 0 only if so.
"""


def register(commands: Any, help: str) -> None:
    """Add the ``demo`` sub-command to ``commands`` (an argparse sub-parsers action)."""
    demo: argparse.ArgumentParser = commands.add_parser(
        "demo",
        help=help,
        description=DESCRIPTION,
        formatter_class=HelpFormatter,
    )
    demo.add_argument(
        "--duration",
        type=positive_float,
        default=30.0,
        metavar="SECONDS",
        help="how long the workload runs (default: %(default)s)",
    )
    demo.add_argument(
        "--rate",
        type=positive_float,
        default=40.0,
        metavar="N",
        help="writes per second (default: %(default)s)",
    )
    demo.add_argument(
        "--objects",
        type=non_negative_int,
        default=200,
        metavar="N",
        help="ConfigMaps created before the informers start (default: %(default)s)",
    )
    demo.add_argument(
        "--personality",
        choices=PERSONALITIES,
        default="modern",
        help="the kind of API server (default: %(default)s)",
    )
    demo.add_argument(
        "--faults",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="inject dropped, cut and stalled watches, 429s, lagging lists and stale replays "
        "(default: on)",
    )
    demo.add_argument(
        "--fault-interval",
        type=positive_float,
        default=0.7,
        metavar="SECONDS",
        help="one fault every SECONDS (default: %(default)s)",
    )
    demo.add_argument(
        "--compaction-window",
        type=positive_int,
        default=60,
        metavar="N",
        help="revisions of history the server keeps; small, so that 410s happen "
        "(default: %(default)s)",
    )
    demo.add_argument(
        "--no-controller",
        dest="controller",
        action="store_false",
        help="informers only, no mirror controller",
    )
    demo.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the workload and the faults: the same seed, the same run "
        "(default: %(default)s)",
    )
    demo.add_argument(
        "--interval",
        type=positive_float,
        default=2.0,
        metavar="SECONDS",
        help="period of the plain lines when the output is not a terminal (default: %(default)s)",
    )
    demo.add_argument(
        "--replicas",
        type=positive_int,
        default=1,
        metavar="N",
        help="with 2 or more: N replicas of a sharded controller in this process share "
        "--objects parents through Leases (informer.ring), reconciling them into children; one "
        "is killed at 35%% of the run without releasing anything and one added at 60%%; the "
        "run ends with the ring's checks (default: %(default)s, the shared informers demo)",
    )
    demo.add_argument(
        "--shard-selectors",
        choices=[m.value for m in ShardSelectorMode],
        default=None,
        help="how the server treats shardSelector: on (a v1.36 server with the gate on), off "
        "(ignores it: the replicas filter by themselves), no-watch-cache (filters lists, not "
        "watches) (default: the personality's, on for modern)",
    )
    # testing aids: make a cache diverge (the check must fail); keep serving metrics afterwards
    demo.add_argument("--diverge", action="store_true", help=argparse.SUPPRESS)
    demo.add_argument("--hold", action="store_true", help=argparse.SUPPRESS)
    demo.add_argument(
        "--compress",
        action="store_true",
        help="hold the cache's objects compressed (a zstd dictionary trained on them; needs "
        "the compression extra); the live view shows the cache's bytes and their ratio to "
        "the JSON either way",
    )
    add_common_options(demo)
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns the exit status (0 when every cache equals the server's state)."""
    return run_command(_PROG, args, _main)


def _diverging(obj: dict[str, Any]) -> dict[str, Any]:
    """A transform with a bug (for tests of the check): it adds a label to what it caches."""
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), "demo/diverged": "true"}
    return obj


class _Demo:
    """The server, workload, informers and controller of one run, and their monitors."""

    def __init__(self, args: argparse.Namespace, server: ApiServer, api: Any) -> None:
        self.args = args
        self.server = server
        self.transport = ProgressTransport(api)
        options = ReflectorOptions(
            idle_timeout=_IDLE_TIMEOUT,
            watch_timeout=(2, 5),  # short watches: faults apply to new requests
            backoff=BackoffPolicy(initial=0.1, maximum=1.0, reset_after=10.0),
            compression=Compression() if args.compress else None,
        )
        self.factory = SharedInformerFactory(self.transport, options=options)
        f = self.factory
        self.configmaps = f.informer(CONFIGMAPS)
        self.informers: list[tuple[str, Informer]] = [
            ("configmaps (all namespaces)", self.configmaps),
            (
                "configmaps team-a app=web",
                f.informer(
                    CONFIGMAPS,
                    namespace="team-a",
                    label_selector="app=web",
                    transform=_diverging if args.diverge else None,
                ),
            ),
            ("leases nodes", f.informer(LEASES, namespace="nodes")),
        ]
        self.controller: Controller | None = None
        if args.controller:
            secrets = f.informer(SECRETS)
            self.informers.append(("secrets (mirrors)", secrets))
            self.client = Client(api, field_manager="informer-demo")
            self.controller = mirror_controller(self.client, self.configmaps, secrets)
        self.monitors: list[InformerMonitor] = []
        for name, inf in self.informers:
            counter = inf.add_handler(on_add=_noop_add, on_update=_noop_update, name="demo")
            self.monitors.append(
                InformerMonitor(
                    inf,
                    name,
                    transport=self.transport,
                    handlers=[counter],
                    parse_rv=self._parse_rv,
                )
            )
        self.workload = Workload(
            server,
            args.rate,
            freshness_probe=self.configmaps,
            on_writes=self.observe_server,
            seed=args.seed,
        )
        self.faults = FaultSchedule(
            server, args.fault_interval, idle_timeout=_IDLE_TIMEOUT, seed=args.seed
        )
        self.started = time.monotonic()
        self._writes_at: tuple[float, int] = (self.started, 0)

    def _parse_rv(self, rv: str) -> int | None:
        try:
            return self.server.parse_resource_version(rv) if rv else None
        except Exception:
            return None

    def facts(self) -> dict[str, str]:
        now = time.monotonic()
        then, writes = self._writes_at
        rate = (self.workload.writes - writes) / (now - then) if now > then else 0.0
        self._writes_at = (now, self.workload.writes)
        waits = list(self.workload.freshness_waits)
        facts = {
            "t": f"{now - self.started:.0f}/{self.args.duration:.0f}s",
            "server": self.server.personality,
            "server RV": self.server.format_resource_version(self.server.revision),
            "writes/s": f"{rate:.0f}",
            "freshness waits p50/p99": (
                f"{percentile(waits, 0.5) * 1000:.0f}/{percentile(waits, 0.99) * 1000:.0f} ms"
                f" (n={len(waits)})"
            ),
            "faults": f"{self.faults.fired} fired" if self.args.faults else "off",
        }
        if self.controller is not None:
            c = self.controller.statistics()
            facts["work queue"] = str(c.queue.depth + c.queue.processing)
            facts["reconciles"] = f"{c.reconciles} ({c.errors} errors, {c.stale_skips} stale skips)"
        return facts

    def observe_server(self) -> None:
        """Note the server's revision now (the lag in seconds is measured from these)."""
        for monitor in self.monitors:
            monitor.lag.observe(self.server.revision)

    def sample(self) -> list[Any]:
        self.observe_server()
        return [m.sample() for m in self.monitors]

    def render(self) -> Group:
        facts = self.facts()
        return Group(
            header_panel("informer demo", facts),
            freshness_table(self.sample(), title="informers (shared, one watch each)"),
        )

    def plain(self) -> list[str]:
        facts = self.facts()
        head = " ".join(f"{k.replace(' ', '_')}={v.replace(' ', '')}" for k, v in facts.items())
        return [head, *(f"  {plain_line(row)}" for row in self.sample())]


def _noop_add(obj: KubeObject, initial: bool) -> None:
    return None


def _noop_update(old: KubeObject, new: KubeObject) -> None:
    return None


async def _drain(controller: Controller, timeout: float) -> None:
    """Until the controller has nothing queued or in flight (or ``timeout``), twice in a row
    0.1 s apart: a change its caches just applied may still be on its way to the queue."""
    idle = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while idle < 2:
                q = controller.statistics().queue
                idle = idle + 1 if q.depth + q.processing + q.waiting == 0 else 0
                await asyncio.sleep(0.1)  # the queue has no event to await


async def _main(args: argparse.Namespace) -> int:
    server = ApiServer(
        args.personality,
        compaction_window=args.compaction_window,
        bookmark_interval=1.0,
        too_large_wait=0.5,
        shard_selectors=args.shard_selectors,
    )
    if args.replicas > 1:
        from informer.cli._ring_demo import run_replicas

        async with server:
            return await run_replicas(args, server, _console())
    async with server, server.api_client() as api:
        return await _run(args, server, api)


def _console() -> Console:
    console = Console()
    if not console.is_terminal:
        console = Console(soft_wrap=True)  # whole lines for logs and pipes
    return console


async def _run(args: argparse.Namespace, server: ApiServer, api: Any) -> int:
    console = _console()
    demo = _Demo(args, server, api)
    demo.workload.seed_objects(args.objects)
    if args.metrics_port is not None:
        from informer.metrics import register_metrics, serve_metrics

        sources: list[Any] = [demo.factory]
        if demo.controller is not None:
            sources.append(demo.controller)
        port = serve_metrics(args.metrics_port).server_port
        register_metrics(*sources)
        console.print(f"metrics: http://127.0.0.1:{port}/metrics")
    console.print(
        f"informer demo: {server.personality} API server at {server.url}, "
        f"{args.rate:.0f} writes/s, faults {'on' if args.faults else 'off'}, "
        f"{args.duration:.0f} s (Ctrl-C ends it early)"
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, stop.set)
    demo.factory.start()
    if demo.controller is not None:
        demo.controller.start()
    tasks = [asyncio.create_task(demo.workload.run())]
    if args.faults:
        tasks.append(asyncio.create_task(demo.faults.run()))
    view = asyncio.create_task(show(demo, stop, console))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), args.duration)
    stop.set()
    await view
    with contextlib.suppress(NotImplementedError):
        loop.remove_signal_handler(signal.SIGINT)
    return await _finish(demo, tasks, console)


async def _finish(demo: _Demo, tasks: list[asyncio.Task[None]], console: Console) -> int:
    """Stop the writers, let everything settle, check every cache against the server."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    demo.faults.clear()
    console.print("stopping the workload; checking every cache against the server ...")
    informers = [inf for _, inf in demo.informers]

    async def settle() -> bool:
        revision = demo.server.revision
        demo.workload.flush(demo.server.stale_lag + 1)  # a lagging replica's view passes revision
        return await catch_up(demo.server, informers, revision, 30.0)

    caught_up = await settle()
    if demo.controller is not None:
        # only now has the controller been told of the workload's last changes: let it finish
        # them, then let the caches see its own last writes
        await _drain(demo.controller, 15.0)
        await demo.controller.stop()
        caught_up = await settle() and caught_up
    checks = [check_cache(demo.server, inf, name) for name, inf in demo.informers]
    await demo.factory.stop()  # the statistics printed are final (and what metrics then show)
    _summary(demo, console)
    for check in checks:
        console.print(check.line(), highlight=False)
    if demo.controller is not None:
        good, total = mirrors_converged(
            demo.server.list_objects(CONFIGMAPS), demo.server.list_objects(SECRETS)
        )
        console.print(f"controller: {good}/{total} ConfigMaps have an up-to-date Secret mirror")
    ok = caught_up and all(c.equal for c in checks)
    if not caught_up:
        console.print("FAILED: not every cache reached the server's revision within 30 s")
    console.print(
        "every cache equals the server's state"
        if ok
        else "MISMATCH: a cache differs from the server's state",
        style="bold green" if ok else "bold red",
    )
    if demo.args.hold:
        console.print("holding (close stdin to exit)")
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    return 0 if ok else 1


def _count(n: int, what: str, plural: str | None = None) -> str:
    """``1 list``, ``2 lists``."""
    return f"{n} {what if n == 1 else plural or what + 's'}"


def _summary(demo: _Demo, console: Console) -> None:
    """What happened, per informer and controller, and what the figures mean."""
    w = demo.workload
    waits = list(w.freshness_waits)
    injected = ", ".join(f"{n} {k}" for k, n in sorted(demo.faults.injected.items())) or "none"
    say = functools.partial(_say_line, console)
    say(
        f"ran {time.monotonic() - demo.started:.1f} s: {w.writes} writes; faults injected: "
        f"{injected} ({demo.faults.fired} fired)"
    )
    for monitor in demo.monitors:
        s = monitor.informer.statistics()
        say(
            f"  {monitor.name}: {_count(s.lists, 'list')} ({_count(s.relists, 'relist')}), "
            f"{_count(s.watches, 'watch', 'watches')}, {s.expired} 410s, "
            f"{_count(s.stale_lists, 'stale list')} refused, "
            f"{_count(s.stale_events_dropped, 'stale event')} dropped, "
            f"{_count(s.events_applied, 'event')} applied, {_count(s.errors, 'error')}"
        )
    say(
        "  errors: requests and watch streams that failed (a connection cut mid-event, an "
        "unexpected answer), each retried after a backoff; none loses an event: the next watch "
        "resumes from the cache RV, or a relist repairs the cache"
    )
    controller = demo.controller.statistics() if demo.controller is not None else None
    if controller is not None:
        c = controller
        say(
            f"  controller mirror: {_count(c.reconciles, 'reconcile')}, "
            f"{_count(c.errors, 'error')}, {_count(c.stale_skips, 'stale skip')}; left in its "
            f"queue: {c.queue.depth} ready, {c.queue.waiting} waiting, "
            f"{c.queue.processing} in flight"
        )
    say("freshness, measured two ways:")
    say(
        f"  write to cache: {len(waits)} of the workload's writes timed until the configmaps "
        f"cache showed them: p50 {percentile(waits, 0.5) * 1000:.1f} ms, p99 "
        f"{percentile(waits, 0.99) * 1000:.1f} ms; the tail is watches the faults stalled or "
        "cut, until the informer noticed and resumed"
    )
    if controller is not None:
        wait = controller.freshness_wait
        say(
            f"  read-your-own-writes: {_count(wait.count, 'reconcile')} of keys the controller "
            f"had just written first waited for the caches to show that write: p99 "
            f"{wait.p99 * 1000:.1f} ms; lower, because a key mostly comes back through the "
            "event of that very write, so the cache has it already"
        )
