"""Shared by the leader election and ring tests: a manual clock that knows when every
campaigner is idle, and a set of candidates campaigning for one Lease over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from informer import LEASES, Client, LeaderElector
from informer.testing import ApiServer
from informer.workqueue import ManualClock

LEASE, RENEW, RETRY = 15.0, 10.0, 2.0


class SteppedClock(ManualClock):
    """A manual clock that knows how many sleepers are waiting for a time not yet reached, so a
    test can advance time and then wait until every elector is idle again."""

    def __init__(self) -> None:
        super().__init__()
        self.asleep = 0
        self._changed = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        done = asyncio.get_running_loop().create_future()
        counted = [True]

        def uncount() -> None:
            if counted[0]:
                counted[0] = False
                self.asleep -= 1
                self._changed.set()

        def wake() -> None:
            uncount()
            if not done.done():
                done.set_result(None)

        self.asleep += 1
        self._changed.set()
        timer = self.call_at(self.now() + seconds, wake)
        try:
            await done
        finally:
            timer.cancel()
            uncount()

    async def idle(self, sleepers: int, stuck: Callable[[], int] = lambda: 0) -> None:
        """Wait until ``sleepers`` callers sleep, counting as asleep those ``stuck`` in a request
        that only the clock can end (a stalled server)."""
        async with asyncio.timeout(10):
            while self.asleep + stuck() != sleepers:
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.01):  # stuck() changes without notice
                        await self._changed.wait()

    async def settle(self, expected: Callable[[], int]) -> None:
        """Wait until as many callers sleep as ``expected()`` says (re-evaluated as they move)."""
        async with asyncio.timeout(10):
            while self.asleep != expected():
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.01):
                        await self._changed.wait()


@dataclass
class Candidate:
    elector: LeaderElector
    task: asyncio.Task[None] | None = None
    events: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class Election:
    server: ApiServer
    clock: SteppedClock
    candidates: dict[str, Candidate]
    # (identity, started|work_cancelled|work_done|stopped|run_returned, time)
    log: list[tuple[str, str, float]]
    running: int = 0
    stuck: Callable[[], int] = lambda: 0
    logged: asyncio.Event = field(default_factory=asyncio.Event)

    def record(self, name: str, what: str) -> None:
        self.log.append((name, what, self.clock.now()))
        self.logged.set()

    async def wait_logged(self, name: str, what: str) -> None:
        while not self.times(name, what):
            self.logged.clear()
            await self.logged.wait()

    def start(self, name: str, drain: asyncio.Event | None = None) -> None:
        """Campaign as ``name``; its work, once cancelled, waits for ``drain`` (a controller
        finishing its reconciles in flight) before it ends."""
        c = self.candidates[name]

        async def work() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.record(name, "work_cancelled")
                if drain is not None:
                    await drain.wait()
                    self.record(name, "work_done")
                raise

        async def started() -> None:
            leaders = [n for n, o in self.candidates.items() if n != name and o.elector.is_leader]
            assert leaders == [], f"{name} leads while {leaders} lead"
            self.record(name, "started")
            await work()

        def stopped() -> None:
            self.record(name, "stopped")

        c.task = asyncio.create_task(c.elector.run(started, stopped))
        c.task.add_done_callback(lambda _: self.record(name, "run_returned"))
        self.running += 1

    async def stop(self, name: str) -> None:
        task = self.candidates[name].task
        assert task is not None
        task.cancel()
        await asyncio.wait({task})
        self.running -= 1

    async def step(self, seconds: float) -> None:
        """Advance time in half-second steps, letting every elector settle after each."""
        for _ in range(int(seconds / 0.5)):
            self.clock.advance(0.5)
            await self.clock.idle(self.running, self.stuck)

    def leaders(self) -> list[str]:
        return [n for n, c in self.candidates.items() if c.elector.is_leader]

    def times(self, name: str, what: str) -> list[float]:
        return [t for n, w, t in self.log if n == name and w == what]

    def history(self, name: str) -> list[str]:
        return [w for n, w, _ in self.log if n == name]


@asynccontextmanager
async def election(api_server: ApiServer, names: str) -> AsyncIterator[Election]:
    clock = SteppedClock()
    api = api_server.api_client()
    candidates = {
        name: Candidate(
            LeaderElector(
                Client(api, field_manager=name),
                "op",
                "default",
                identity=name,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                clock=clock,
                rng=random.Random(i),
            )
        )
        for i, name in enumerate(names)
    }
    e = Election(api_server, clock, candidates, [])
    try:
        yield e
    finally:
        for c in candidates.values():
            if c.task is not None:
                c.task.cancel()
        await asyncio.wait([c.task for c in candidates.values() if c.task] or [asyncio.sleep(0)])
        await api.close()


def holder(server: ApiServer) -> str | None:
    lease = server.get(LEASES, "op", "default")
    assert lease is not None
    return lease["spec"].get("holderIdentity")
