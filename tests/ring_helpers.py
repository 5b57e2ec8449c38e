"""Shared by the ring tests: members on a manual clock over real HTTP, each with a participant
that records what it acts on, and any overlap between two members the moment it happens."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from informer import Client
from informer.ring import Ring, RingState, assign
from informer.shards import ShardSet
from informer.testing import ApiServer
from tests.election_helpers import LEASE, RENEW, RETRY, SteppedClock


@dataclass
class Acting:
    """What each member acts on, as its participant saw it: from ``started`` until its ``stop``
    returned. Any overlap between two members is recorded."""

    now: dict[str, ShardSet] = field(default_factory=dict)
    overlaps: list[tuple[str, str, float]] = field(default_factory=list)


class Recorder:
    def __init__(self, name: str, acting: Acting, clock: SteppedClock) -> None:
        self.name, self.acting, self.clock = name, acting, clock

    async def prepare(self, ranges: ShardSet) -> None:
        return None

    def started(self, ranges: ShardSet) -> None:
        for other, held in self.acting.now.items():
            if other != self.name and held & ranges:
                self.acting.overlaps.append((self.name, other, self.clock.now()))
        self.acting.now[self.name] = self.acting.now.get(self.name, ShardSet()) | ranges

    async def stop(self, ranges: ShardSet, timeout: float) -> None:
        self.acting.now[self.name] = self.acting.now.get(self.name, ShardSet()) - ranges


@dataclass
class Cluster:
    server: ApiServer
    clock: SteppedClock
    acting: Acting
    rings: dict[str, Ring] = field(default_factory=dict)
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    clients: list[Client] = field(default_factory=list)

    def add(self, name: str) -> Ring:
        api = self.server.api_client()
        client = Client(api, field_manager=name)
        self.clients.append(client)
        ring = Ring(
            client,
            "ops",
            "default",
            identity=name,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            clock=self.clock,
            rng=random.Random(name),
        )
        ring.attach(Recorder(name, self.acting, self.clock))
        self.rings[name] = ring
        self.tasks[name] = asyncio.create_task(ring.run())
        return ring

    async def crash(self, name: str) -> None:
        """Gone without a word: its Lease is left as it was."""
        self.rings[name]._lease.release_on_cancel = False
        await self.remove(name)

    async def remove(self, name: str) -> None:
        task = self.tasks.pop(name)
        task.cancel()
        await asyncio.wait({task})
        del self.rings[name]

    def sleepers(self) -> int:
        # a member sleeps in its renew loop and in its rounds; a joining one in its retries
        return sum(2 if r.state is RingState.MEMBER else 1 for r in self.rings.values())

    async def step(self, seconds: float = 0.5) -> None:
        for _ in range(round(seconds / 0.5)):
            self.clock.advance(0.5)
            await self.clock.settle(self.sleepers)

    def converged(self) -> bool:
        members = set(self.rings)
        if any(set(r.members) != members for r in self.rings.values()):
            return False
        expected = assign(members)
        return all(self.acting.now.get(n, ShardSet()) == expected[n] for n in members)

    async def until_converged(self, limit: float) -> float:
        """Step until every member acts on its assignment; the clock time it took."""
        started = self.clock.now()
        while not self.converged():
            assert self.clock.now() - started <= limit, self.describe()
            await self.step()
        return self.clock.now() - started

    def describe(self) -> str:
        return "; ".join(
            f"{n}: {r.state.value} members={r.members} acting={r.acting.share:.3f}"
            for n, r in self.rings.items()
        )


@asynccontextmanager
async def cluster(api_server: ApiServer, names: str) -> AsyncIterator[Cluster]:
    c = Cluster(api_server, SteppedClock(), Acting())
    try:
        for name in names:
            c.add(name)
        await c.clock.settle(c.sleepers)
        yield c
    finally:
        for task in c.tasks.values():
            task.cancel()
        await asyncio.wait(list(c.tasks.values()) or [asyncio.sleep(0)])
        for client in c.clients:
            await client.api_client.close()
