"""``informer demo --replicas N``: N ring members in this process share the parents' hash space
through Leases, reconciling parents into children while a writer changes the parents under the
demo's faults; one replica is killed without releasing anything (a crash) and one is added.

The live view shows per replica its ranges, share of the space, handovers (how many, and the
longest: from the round that saw its assignment change to the round that started the last of
it), parents cached and reconciles. The run ends with its checks: no parent reconciled by two
replicas at once, every parent's children right, no child created twice, the crashed replica's
parents reconciled again within lease duration + 2 x retry period, each replica's parents cache
holding exactly the parents of its ranges. The exit status is 0 only if they all hold.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import signal
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from informer.backoff import BackoffPolicy
from informer.cli._live import say, show
from informer.cli._replicas import (
    Fleet,
    Replica,
    ReplicaState,
    Timings,
    Writer,
    cache_mismatches,
    wrong_parents,
)
from informer.cli._view import header_panel
from informer.cli._workload import FaultSchedule
from informer.reflector import ReflectorOptions
from informer.testing import ApiServer

__all__ = ["run_replicas"]

_IDLE_TIMEOUT = 2.0
_SETTLE_TIMEOUT = 60.0
_EVENTS_SHOWN = 4
_TICK = 0.1  # how often the ring is looked at


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    text: str

    def line(self) -> str:
        return f"{'OK' if self.ok else 'FAILED':<8} {self.text}"


class ReplicasDemo:
    """One run: the fleet, its writer and faults, its timeline of crash and join, its view."""

    def __init__(self, args: argparse.Namespace, server: ApiServer) -> None:
        self.args = args
        self.server = server
        options = ReflectorOptions(
            idle_timeout=_IDLE_TIMEOUT,
            watch_timeout=(2, 5),  # short watches: faults apply to new requests
            backoff=BackoffPolicy(initial=0.1, maximum=1.0, reset_after=10.0),
        )
        self.fleet = Fleet(server, options, Timings())
        self.writer = Writer(server, args.objects, args.rate, args.seed)
        self.faults = FaultSchedule(
            server,
            args.fault_interval,
            idle_timeout=_IDLE_TIMEOUT,
            seed=args.seed,
            # the ConfigMaps' requests: the ring's bound (lease + 2 x retry) assumes its Lease
            # reads and writes are answered (a 429 with Retry-After: 1 on one delays a round)
            resource="configmaps",
        )
        self.events: list[str] = []
        self.collector: Any = None
        self._writes_at = (0.0, 0)
        self.ticked = asyncio.Event()  # set by every look at the ring
        self._seen: dict[str, tuple[int, int]] = {}  # replica -> (takeovers, handovers) noted

    def say(self, text: str) -> None:
        self.events.append(f"{self.fleet.world.now():5.1f}s {text}")

    def add(self, name: str) -> Replica:
        replica = self.fleet.add(name)
        if self.collector is not None:
            self.collector.add(replica.ring, replica.controller)
        return replica

    async def timeline(self) -> None:
        """Kill one replica at 35% of the run (once each holds its share); add one at 60%,
        once the others took the killed one's ranges over (a replica that joins earlier counts
        the dead one's Lease as live for a lease duration, as it cannot tell how long it has
        been dead, and leaves the part of its ranges it is assigned unserved until then)."""
        n = self.args.replicas
        duration = self.args.duration
        loop = asyncio.get_running_loop()
        crash_at = loop.time() + 0.35 * duration
        while not self.fleet.converged() or loop.time() < crash_at:  # each holds its share
            self.ticked.clear()
            await self.ticked.wait()
        victim = self.fleet.live()[min(1, len(self.fleet.live()) - 1)]
        share = victim.ring.acting.share
        await self.fleet.crash(victim.name)
        self.say(f"{victim.name} killed, nothing released ({share:.0%} of the space)")
        join_at = loop.time() + 0.25 * duration
        while not self.fleet.converged() or loop.time() < join_at:
            self.ticked.clear()
            await self.ticked.wait()
        name = f"r{n + 1}"
        self.add(name)
        self.say(f"{name} added")

    async def observe(self) -> None:
        """Look at the ring every 0.1 s (it has no event to await across members), and note how
        late each look comes: the time this process was not run when its timers were due."""
        loop = asyncio.get_running_loop()
        while True:
            self.watch_ring()
            self.fleet.note_cover()
            self.ticked.set()
            asked = loop.time()
            await asyncio.sleep(_TICK)
            self.fleet.note_late(loop.time() - asked - _TICK)

    def watch_ring(self) -> None:
        """Note ranges taken over and handovers finished since the last look."""
        for r in self.fleet.live():
            s = r.ring.statistics()
            seen = self._seen.get(r.name, (0, 0))
            if s.taken_over > seen[0]:
                self.say(f"{r.name} took over a dead member's ranges (now {s.acting:.0%})")
            if s.handover.count > seen[1]:
                longest = s.handover.max
                self.say(f"{r.name} holds its target {s.target:.0%} (longest: {longest:.1f}s)")
            self._seen[r.name] = (s.taken_over, s.handover.count)

    # -- the view -----------------------------------------------------------------------------

    def facts(self) -> dict[str, str]:
        w = self.fleet.world
        now = w.now()
        then, writes = self._writes_at
        rate = (self.writer.writes - writes) / (now - then) if now > then else 0.0
        self._writes_at = (now, self.writer.writes)
        return {
            "t": f"{now:.0f}/{self.args.duration:.0f}s",
            "members": str(len(self.fleet.live())),
            "parents": str(self.fleet.parents),
            "writes/s": f"{rate:.0f}",
            "faults": f"{self.faults.fired} on configmaps" if self.args.faults else "off",
            "overlaps": str(len(w.overlaps)),
            "shardSelector": self.server.shard_selectors.value,
        }

    def rows(self) -> list[list[str]]:
        out = []
        w = self.fleet.world
        for r in self.fleet.replicas.values():
            s = r.ring.statistics()
            state = s.state.value if r.state is ReplicaState.RUNNING else r.state.value.upper()
            h = s.handover
            out.append(
                [
                    r.name,
                    state,
                    str(s.ranges),
                    f"{s.acting:.1%}",
                    str(len(r.parents.store)),
                    f"{h.count} max {h.max:.1f}s" if h.count else "0",
                    str(w.reconciles[r.name]),
                ]
            )
        return out

    HEADERS = ("replica", "state", "ranges", "share", "cached", "handovers", "reconciles")

    def render(self) -> Group:
        table = Table(
            title="ring members (parents cached, reconciles)",
            title_justify="left",
            expand=True,
        )
        for i, h in enumerate(self.HEADERS):
            table.add_column(h, justify="left" if i < 2 else "right", no_wrap=True)
        for row in self.rows():
            style = "red" if row[1] == "CRASHED" else None
            table.add_row(*row, style=style)
        events = Text("\n".join(self.events[-_EVENTS_SHOWN:]) or "(none yet)")
        return Group(
            header_panel(f"informer demo --replicas {self.args.replicas}", self.facts()),
            table,
            Text("ring events", style="bold"),
            events,
        )

    def plain(self) -> list[str]:
        head = " ".join(
            f"{k.replace(' ', '_')}={v.replace(' ', '')}" for k, v in self.facts().items()
        )
        lines = [head]
        for row in self.rows():
            fields = zip(self.HEADERS[1:], row[1:], strict=True)
            lines.append(f"  {row[0]}: " + " ".join(f"{k}={v.replace(' ', '')}" for k, v in fields))
        return lines

    # -- the end ------------------------------------------------------------------------------

    async def settle(self) -> bool:
        """Until the live replicas act on their assignment, their queues are empty and every
        parent's children are right (or ``_SETTLE_TIMEOUT``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_SETTLE_TIMEOUT):
                quiet = 0
                while quiet < 3:
                    good = (
                        self.fleet.converged()
                        and self.fleet.quiet()
                        and not wrong_parents(self.server)
                    )
                    quiet = quiet + 1 if good else 0
                    await asyncio.sleep(0.2)  # the ring and the queues have no event to await
                return True
        return False

    def checks(self, settled: bool) -> list[Check]:
        fleet, w, t = self.fleet, self.fleet.world, self.fleet.timings
        wrong = wrong_parents(self.server)
        twice = [c for c, n in w.created.items() if n > 1]
        checks = [
            Check(
                settled,
                "the live replicas hold the whole space, as assigned, their queues empty"
                if settled
                else f"the ring did not settle within {_SETTLE_TIMEOUT:.0f} s",
            ),
            Check(
                not w.overlaps,
                f"no parent reconciled by two replicas at once ({sum(w.reconciles.values())} "
                f"reconciles; {len(w.overlaps)} overlaps)",
            ),
            Check(
                not wrong,
                f"every parent's children right: {fleet.parents - len(wrong)}/{fleet.parents}",
            ),
            Check(
                not twice,
                f"no child created twice ({sum(w.created.values())} created, {len(twice)} twice)",
            ),
        ]
        if w.crashed is not None and w.crashed_at is not None:
            claimed = None if w.claimed_at is None else w.claimed_at - w.crashed_at
            covered = None if w.covered_at is None else w.covered_at - w.crashed_at
            # the bound holds in the time the process was run: a machine too loaded to run it
            # when its timers are due (seen as late looks at the ring) delays every round
            late = round(w.late, 1)
            checks.append(
                Check(
                    claimed is not None and covered is not None and claimed <= t.bound + late,
                    f"{w.crashed}'s ranges claimed by the others "
                    + ("never" if claimed is None else f"{claimed:.1f} s after the crash")
                    + f" (bound: lease {t.lease:.0f} s + 2 x retry {t.retry:.1f} s = "
                    f"{t.bound:.0f} s"
                    + (f", + {late:.1f} s this process ran late meanwhile" if late else "")
                    + ", as observed every 0.1 s), acted on "
                    + ("never" if covered is None else f"after {covered:.1f} s")
                    + " (their caches listed them first, through the faults)",
                )
            )
            missing = w.orphaned - set(w.again)
            worst = max((at - w.crashed_at for at in w.again.values()), default=0.0)
            checks.append(
                Check(
                    not missing,
                    f"{w.crashed}'s {len(w.orphaned)} parents all reconciled again, the last "
                    f"{worst:.1f} s after the crash (its reconciles queued behind the others')"
                    + (f"; {len(missing)} never" if missing else ""),
                )
            )
        for r in fleet.live():
            extra, absent = cache_mismatches(fleet, r)
            share = r.ring.acting.share
            cached = len(r.parents.store)
            expected = share * fleet.parents
            off = (cached - expected) / expected if expected else 0.0
            checks.append(
                Check(
                    not extra and not absent,
                    f"{r.name} caches the parents of its ranges only: {cached} for a share of "
                    f"{share:.1%} ({expected:.0f} expected, {off:+.0%})"
                    + (f"; {extra} outside, {absent} missing" if extra or absent else ""),
                )
            )
        return checks


def _say(console: Console, line: str) -> None:
    """One line of the summary (``say``), its continuation lines under the line's text."""
    indent = 9 if line.startswith(("OK ", "FAILED ")) else len(line) - len(line.lstrip()) + 4
    say(console, line, indent)


async def run_replicas(args: argparse.Namespace, server: ApiServer, console: Console) -> int:
    """The ``--replicas`` run; its exit status (0 when every check holds)."""
    demo = ReplicasDemo(args, server)
    demo.fleet.seed(args.objects, args.seed)
    if args.metrics_port is not None:
        from informer.metrics import register_metrics, serve_metrics

        port = serve_metrics(args.metrics_port).server_port
        demo.collector = register_metrics()
        console.print(f"metrics: http://127.0.0.1:{port}/metrics")
    t = demo.fleet.timings
    console.print(
        f"informer demo: {args.replicas} replicas sharing {args.objects} parents through "
        f"Leases (lease {t.lease:.0f} s, renew {t.renew:.0f} s, retry {t.retry:.1f} s) on a "
        f"{server.personality} API server at {server.url}, {args.rate:.0f} writes/s, faults "
        f"{'on' if args.faults else 'off'}, {args.duration:.0f} s (Ctrl-C ends it early)"
    )
    for i in range(args.replicas):
        demo.add(f"r{i + 1}")
    demo.say(f"{args.replicas} replicas started")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, stop.set)
    tasks = [
        asyncio.create_task(demo.writer.run()),
        asyncio.create_task(demo.observe()),
        asyncio.create_task(demo.timeline()),
    ]
    if args.faults:
        tasks.append(asyncio.create_task(demo.faults.run()))
    view = asyncio.create_task(show(demo, stop, console))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), args.duration)
    timeline = tasks[2]
    if not timeline.done() and not stop.is_set():  # a short run: the join comes first
        demo.say("the run is over, waiting for the replica to join")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(timeline), _SETTLE_TIMEOUT)
    stop.set()
    await view
    with contextlib.suppress(NotImplementedError):
        loop.remove_signal_handler(signal.SIGINT)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    demo.faults.clear()
    console.print("stopping the writer; letting the ring settle, then checking ...")
    try:
        settled = await demo.settle()
        demo.watch_ring()
        checks = demo.checks(settled)
    finally:
        await demo.fleet.close()
    say = functools.partial(_say, console)
    for line in demo.events:
        say(f"  {line}")
    for r in demo.fleet.replicas.values():
        s = r.ring.statistics()
        say(
            f"  {r.name}: {r.state.value}, {s.started} ranges started, {s.stopped} stopped, "
            f"{s.taken_over} takeovers, {s.conflicts} conflicts, {s.fenced} fencings, "
            f"{s.round_errors} failed rounds; handovers {s.handover.count} (p50 "
            f"{s.handover.p50:.1f} s, max {s.handover.max:.1f} s)"
        )
    for check in checks:
        say(check.line())
    ok = all(c.ok for c in checks)
    console.print(
        "every check holds" if ok else "FAILED: a check does not hold",
        style="bold green" if ok else "bold red",
    )
    return 0 if ok else 1
