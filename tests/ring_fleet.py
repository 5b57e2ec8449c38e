"""Shared by the sharded controller tests: replicas in one process (each with its own ApiClient,
informers, controller and ring member, the ring on a manual clock), a reconcile that creates and
updates a parent's children and records every overlap the moment it happens, writers changing
the parents, and the checks of the end state."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from informer import CONFIGMAPS, AlreadyExists, Client, Controller, Informer, Request
from informer.ring import Ring, RingState, assign
from informer.shards import ShardSet, hash_value
from informer.store import Delta
from informer.testing import ApiServer
from tests.conftest import FAST
from tests.election_helpers import LEASE, RENEW, RETRY, SteppedClock
from tests.test_store_partitions import Handlers

PARENTS = 32
NS = "default"


def parent(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p{i:03d}", "namespace": NS, "labels": {"role": "parent"}},
        "data": {"replicas": "1", "value": "v0"},
    }


@dataclass
class World:
    """What every replica's reconciles did, checked as they run."""

    clock: SteppedClock
    active: dict[str, str] = field(default_factory=dict)  # parent uid -> replica reconciling it
    overlaps: list[tuple[str, str, str]] = field(default_factory=list)
    reconciled: list[tuple[str, str, float]] = field(default_factory=list)  # (replica, uid, t)
    created: Counter[str] = field(default_factory=Counter)  # child -> successful creates
    already_existed: list[str] = field(default_factory=list)  # creates of a child that existed
    # what each sharded parents cache handed its handlers, not a history (a change twice, one
    # lost, a key back in time): through takeovers, releases and merges of lanes
    broken_histories: list[str] = field(default_factory=list)


class History(Handlers):
    """The deltas a sharded informer hands over, checked as a history as they come; ranges
    given up leave it with the cache (no deltas: a handler follows ``inf.shards``)."""

    def __init__(self, name: str, world: World, informer: Informer) -> None:
        super().__init__()
        self.name, self.world, self.informer = name, world, informer
        sink = informer.reflector.on_deltas
        assert sink is not None
        self.sink = sink
        set_shards = informer.set_shards

        def follow(shards: ShardSet | Any) -> None:
            set_shards(shards)
            held = informer.shards or ShardSet()
            for key, obj in list(self.view.items()):
                if not held.contains(hash_value(obj.uid)):
                    del self.view[key]
                    self.last_rv.pop(key, None)

        informer.set_shards = follow  # type: ignore[method-assign]
        informer.reflector.on_deltas = self

    def __call__(self, deltas: list[Delta]) -> None:
        try:
            self.see(deltas)
        except AssertionError as exc:
            self.world.broken_histories.append(f"{self.name}: {exc}")
        self.sink(deltas)


@dataclass
class Replica:
    name: str
    ring: Ring
    controller: Controller
    informers: list[Informer]
    tasks: list[asyncio.Task[Any]]
    client: Client


def make_reconcile(
    name: str, world: World, client: Client, parents: Informer, children: Informer
) -> Any:
    async def reconcile(request: Request) -> None:
        p = parents.store.get(request.name, request.namespace)
        if p is None:
            return
        uid = p.uid
        if uid in world.active:
            world.overlaps.append((uid, world.active[uid], name))
        world.active[uid] = name
        world.reconciled.append((name, uid, world.clock.now()))
        try:
            data = p.get("data") or {}
            want, value = int(data["replicas"]), data["value"]
            ref = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": p.name,
                "uid": uid,
                "controller": True,
            }
            for i in range(want):
                child_name = f"{p.name}-{i}"
                child = children.store.get(child_name, NS)
                if child is None:
                    body = {
                        "metadata": {
                            "name": child_name,
                            "namespace": NS,
                            "labels": {"role": "child"},
                            "ownerReferences": [ref],
                        },
                        "data": {"value": value},
                    }
                    try:
                        await client.create(CONFIGMAPS, body)
                    except AlreadyExists:
                        world.already_existed.append(child_name)
                    else:
                        world.created[child_name] += 1
                elif (child.get("data") or {}).get("value") != value:
                    await client.patch(
                        CONFIGMAPS, child_name, {"data": {"value": value}}, namespace=NS
                    )
        finally:
            if world.active.get(uid) == name:
                del world.active[uid]

    return reconcile


@dataclass
class Fleet:
    server: ApiServer
    world: World
    sharded: bool  # parents cached by range (a sharded informer) or all of them
    replicas: dict[str, Replica] = field(default_factory=dict)
    lane_merge_delay: float | None = 0.0  # a sharded cache merges its lanes at once

    @property
    def clock(self) -> SteppedClock:
        return self.world.clock

    async def add(self, name: str) -> Replica:
        api = self.server.api_client()
        client = Client(api, field_manager=name)
        parents = Informer(
            api,
            CONFIGMAPS,
            namespace=NS,
            label_selector="role=parent",
            options=replace(FAST, lane_merge_delay=self.lane_merge_delay),
            shards=ShardSet() if self.sharded else None,  # the ring gives it ranges
        )
        if self.sharded:
            History(name, self.world, parents)
        children = Informer(
            api, CONFIGMAPS, namespace=NS, label_selector="role=child", options=FAST
        )
        reconcile = make_reconcile(name, self.world, client, parents, children)
        controller = Controller(
            reconcile,
            for_=parents,
            owns=[children],
            workers=4,
            client=client,
            name=name,
            freshness_timeout=2.0,
        )
        ring = Ring(
            client,
            "parents",
            NS,
            identity=name,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            clock=self.clock,
            rng=random.Random(name),
        )
        ring.shard(controller)
        for inf in (parents, children):
            inf.start()
        controller.start()
        tasks = [asyncio.create_task(ring.run())]
        replica = Replica(name, ring, controller, [parents, children], tasks, client)
        self.replicas[name] = replica
        return replica

    async def crash(self, name: str, release: bool = False) -> ShardSet:
        """Gone at once: no release (unless ``release``: a clean shutdown), no more requests."""
        r = self.replicas.pop(name)
        acting = r.ring.acting
        r.ring._lease.release_on_cancel = release
        for task in r.tasks:
            task.cancel()
        await asyncio.wait(r.tasks)
        await r.controller.stop()
        for inf in r.informers:
            await inf.stop()
        await r.client.api_client.close()
        return acting

    async def close(self) -> None:
        for name in list(self.replicas):
            r = self.replicas.pop(name)
            for task in r.tasks:
                task.cancel()
            await asyncio.wait(r.tasks)
            await r.controller.stop()
            for inf in r.informers:
                await inf.stop()
            await r.client.api_client.close()

    def sleepers(self) -> int:
        return sum(2 if r.ring.state is RingState.MEMBER else 1 for r in self.replicas.values())

    def quiet(self) -> bool:
        for r in self.replicas.values():
            s = r.controller.statistics()
            if len(r.controller.queue) or s.active:
                return False
        return True

    async def settle(self) -> None:
        await self.clock.settle(self.sleepers)
        never = asyncio.Event()
        async with asyncio.timeout(20):
            while not self.quiet():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.01):
                        await never.wait()
        await self.clock.settle(self.sleepers)

    async def step(self, writers: Writers | None = None) -> None:
        self.clock.advance(0.5)
        if writers is not None:
            writers.burst()
        await self.settle()
        if writers is not None:
            await writers.join()
            await self.settle()

    def converged(self) -> bool:
        names = set(self.replicas)
        expected = assign(names)
        return all(
            set(r.ring.members) == names and r.ring.acting == expected[n]
            for n, r in self.replicas.items()
        )

    async def until_converged(self, writers: Writers, limit: float) -> None:
        started = self.clock.now()
        while not self.converged():
            assert self.clock.now() - started <= limit
            await self.step(writers)


class Writers:
    """Users changing parents (a new value, one more child) while the replicas reconcile."""

    def __init__(self, server: ApiServer, parents: int = PARENTS) -> None:
        self.client = Client(server.api_client(), field_manager="users")
        self.parents = parents
        self.rnd = random.Random(7)
        self.pending: list[asyncio.Task[Any]] = []
        self.writes = 0

    def burst(self, count: int = 3) -> None:
        for _ in range(count):
            i = self.rnd.randrange(self.parents)
            self.writes += 1
            replicas = str(self.rnd.randint(1, 3))
            patch = {"data": {"value": f"v{self.writes}", "replicas": replicas}}
            self.pending.append(
                asyncio.create_task(self.client.patch(CONFIGMAPS, f"p{i:03d}", patch, namespace=NS))
            )

    async def join(self) -> None:
        if self.pending:
            await asyncio.gather(*self.pending)
        self.pending.clear()


def children_right(server: ApiServer) -> list[str]:
    """The parents whose children differ from what they ask for (children never shrink here)."""
    cms = server.list_objects(CONFIGMAPS, NS)
    kids = {c["metadata"]["name"]: c for c in cms if c["metadata"]["labels"].get("role") == "child"}
    wrong = []
    for p in cms:
        if p["metadata"]["labels"].get("role") != "parent":
            continue
        name, data = p["metadata"]["name"], p["data"]
        have = {k: c for k, c in kids.items() if k.rsplit("-", 1)[0] == name}
        need = {f"{name}-{i}" for i in range(int(data["replicas"]))}
        if not need <= set(have) or any(have[k]["data"]["value"] != data["value"] for k in need):
            wrong.append(name)
    return wrong


@asynccontextmanager
async def fleet(
    api_server: ApiServer, sharded: bool, lane_merge_delay: float | None = 0.0
) -> AsyncIterator[Fleet]:
    f = Fleet(api_server, World(SteppedClock()), sharded, lane_merge_delay=lane_merge_delay)
    try:
        yield f
    finally:
        await f.close()


def caches_within_their_share(f: Fleet, tolerance: float = 0.2) -> dict[str, float]:
    """Each replica caches (sharded parents) or reconciles (parents cached whole) the parents
    of its share of the space within ``tolerance`` (relative) of that share's part of all
    parents; returns each replica's relative deviation."""
    parents = [
        p["metadata"]["uid"]
        for p in f.server.list_objects(CONFIGMAPS, NS)
        if p["metadata"]["labels"].get("role") == "parent"
    ]
    deviations = {}
    for name, r in f.replicas.items():
        expected = r.ring.acting.share * len(parents)
        if f.sharded:
            held = len(r.informers[0].store)
        else:
            held = sum(r.ring.acting.contains(hash_value(u)) for u in parents)
        deviations[name] = (held - expected) / expected
    assert all(abs(d) <= tolerance for d in deviations.values()), deviations
    return deviations


async def lanes_merged(f: Fleet, timeout: float = 20) -> None:
    """Until every sharded parents cache holds its ranges in one lane (quiet ranges merged)."""
    if not f.sharded or f.lane_merge_delay is None:
        return

    def one_lane() -> bool:
        stats = [r.informers[0].shard_statistics() for r in f.replicas.values()]
        return all(s is not None and s.lanes <= 1 and not s.merging for s in stats)

    never = asyncio.Event()
    async with asyncio.timeout(timeout):
        while not one_lane():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.01):
                    await never.wait()


def caches_hold_their_ranges(f: Fleet) -> None:
    """A sharded parents cache holds exactly the parents of the ranges its member acts on."""
    if not f.sharded:
        return
    for r in f.replicas.values():
        cached = {o.uid for o in r.informers[0].store.list()}
        mine = {
            p["metadata"]["uid"]
            for p in f.server.list_objects(CONFIGMAPS, NS)
            if p["metadata"]["labels"].get("role") == "parent"
            and r.ring.acting.contains(hash_value(p["metadata"]["uid"]))
        }
        assert cached == mine
