"""Sharded controllers over real HTTP: three replicas in one process (each with its own ApiClient,
informers, controller and ring member) reconcile parents with children while writers change the
parents; one replica crashes without releasing anything, one joins. No parent is ever reconciled
by two replicas at once, no child is created twice, every parent's children are right at the
end, and the crashed replica's parents are reconciled again within lease duration + 2 x retry
period (ring timings on a manual clock; controllers on real time)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import FAST

from informer import (
    CONFIGMAPS,
    NAMESPACES,
    AlreadyExists,
    Client,
    Controller,
    Informer,
    Request,
)
from informer.ring import Ring, RingState, assign
from informer.shards import ShardField, ShardSet, hash_value
from informer.testing import ApiServer, Fault
from tests.election_helpers import LEASE, RENEW, RETRY, SteppedClock

pytestmark = pytest.mark.asyncio

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
            options=FAST,
            shards=ShardSet() if self.sharded else None,  # the ring gives it ranges
        )
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

    async def crash(self, name: str) -> ShardSet:
        """Gone at once: no release, no more requests."""
        r = self.replicas.pop(name)
        acting = r.ring.acting
        r.ring._lease.release_on_cancel = False
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

    def __init__(self, server: ApiServer) -> None:
        self.client = Client(server.api_client(), field_manager="users")
        self.rnd = random.Random(7)
        self.pending: list[asyncio.Task[Any]] = []
        self.writes = 0

    def burst(self, count: int = 3) -> None:
        for _ in range(count):
            i = self.rnd.randrange(PARENTS)
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
async def fleet(api_server: ApiServer, sharded: bool) -> AsyncIterator[Fleet]:
    f = Fleet(api_server, World(SteppedClock()), sharded)
    try:
        yield f
    finally:
        await f.close()


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


@pytest.mark.parametrize(
    ("sharded", "server"),
    [(False, "on"), (True, "on"), (True, "off")],
    ids=[
        "parents-cached-whole",
        "sharded-parents-with-faults",
        "sharded-parents-server-ignores-selector",
    ],
)
async def test_sharded_replicas_crash_and_join_without_overlap(
    api_server: ApiServer, sharded: bool, server: str
) -> None:
    api_server.shard_selectors = server  # type: ignore[assignment]
    if sharded and server == "on":  # and faults: of the ring's reads and writes, of the watches
        for fault in (
            Fault(verb="list", resource="leases", status=500, nth=4, times=3),
            Fault(verb="update", resource="leases", status=409, reason="Conflict", nth=6, times=2),
            Fault(verb="update", resource="leases", status=200, text_body="[]", nth=9),
            Fault(verb="watch", resource="configmaps", status=410, nth=3),
            Fault(verb="watch", resource="configmaps", nth=5, after_events=1, cut_mid_line=True),
            Fault(verb="create", resource="configmaps", status=429, retry_after=0, nth=3, times=2),
        ):
            api_server.faults.add(fault)
    for i in range(PARENTS):
        api_server.create(CONFIGMAPS, parent(i))
    writers = Writers(api_server)
    async with fleet(api_server, sharded) as f:
        for name in "abc":
            await f.add(name)
        await f.settle()
        await f.until_converged(writers, limit=4 * RETRY)
        while children_right(api_server):
            await f.step(writers)
        caches_hold_their_ranges(f)

        crashed_at = f.clock.now()
        lost = await f.crash("b")
        assert lost.share > 0.2
        await f.until_converged(writers, limit=LEASE + 2 * RETRY)
        uids = {
            p["metadata"]["uid"]
            for p in api_server.list_objects(CONFIGMAPS, NS)
            if p["metadata"]["labels"].get("role") == "parent"
        }
        orphaned = {u for u in uids if lost.contains(hash_value(u))}
        again = {u: t for n, u, t in f.world.reconciled if t > crashed_at and u in orphaned}
        assert set(again) == orphaned  # every parent of the crashed replica reconciled again
        assert max(again.values()) <= crashed_at + LEASE + 2 * RETRY

        await f.add("d")
        await f.settle()
        # d sees the crashed member's Lease for the first time: it counts it live for a lease
        # duration (it cannot tell how long it has been dead), and leaves its ranges alone
        await f.until_converged(writers, limit=LEASE + 3 * RETRY)
        for _ in range(4):
            await f.step(writers)
        while children_right(api_server):
            await f.step()
        caches_hold_their_ranges(f)

    await writers.client.api_client.close()
    assert f.world.overlaps == []
    assert f.world.created and max(f.world.created.values()) == 1  # no child created twice
    assert f.world.already_existed == []  # no replica ever missed a child another one created
    assert writers.writes > 0
    assert all(fault.fired for fault in api_server.faults)
    selectors = [r for r in api_server.requests if r.query.get("shardSelector")]
    assert bool(selectors) is sharded  # the parents' lists and watches asked for their ranges


async def test_a_ring_sharding_by_namespace_reconciles_each_namespace_on_its_holder(
    api_server: ApiServer,
) -> None:
    # names that differ early: FNV-1a of names that differ only in their last characters
    # ("team-0", "team-1") differ in their low bits only, so they fall in one range
    namespaces = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for ns in namespaces:
        api_server.create(NAMESPACES, {"metadata": {"name": ns}})
    clock = SteppedClock()
    seen: list[tuple[str, str]] = []  # (replica, namespace)
    rings: list[Ring] = []
    parts: list[tuple[Client, Informer, Controller]] = []
    for name in "ab":
        client = Client(api_server.api_client(), field_manager=name)
        inf = Informer(
            client.api_client,
            CONFIGMAPS,
            label_selector="role=parent",
            options=FAST,
            shards=ShardSet(),
            shard_field=ShardField.NAMESPACE,
        )

        async def reconcile(request: Request, name: str = name) -> None:
            seen.append((name, request.namespace))

        controller = Controller(reconcile, for_=inf, client=client, name=name)
        ring = Ring(
            client,
            "teams",
            "default",
            identity=name,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            field=ShardField.NAMESPACE,
            clock=clock,
        )
        ring.shard(controller)
        inf.start()
        controller.start()
        rings.append(ring)
        parts.append((client, inf, controller))
    tasks = [asyncio.create_task(r.run()) for r in rings]
    try:
        expected = assign(["a", "b"])
        while not all(r.acting == expected[r.identity] for r in rings):
            clock.advance(0.5)
            await clock.settle(lambda: sum(2 if r.state is RingState.MEMBER else 1 for r in rings))
        for ns in namespaces:
            for i in range(3):
                meta = {"name": f"p{i}", "namespace": ns, "labels": {"role": "parent"}}
                api_server.create(CONFIGMAPS, {"metadata": meta})
        never = asyncio.Event()
        async with asyncio.timeout(20):
            while len({(ns, r) for r, ns in seen}) < len(namespaces):
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.01):
                        await never.wait()
        for replica, ns in seen:
            holder = next(r for r in rings if r.acts_on(hash_value(ns)))
            assert replica == holder.identity
        assert {r for r, _ in seen} == {"a", "b"}
        for ring, (_, inf, _) in zip(rings, parts, strict=True):  # caches: their namespaces only
            assert all(ring.acts_on(hash_value(o.namespace)) for o in inf.store.list())
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for client, inf, controller in parts:
            await controller.stop()
            await inf.stop()
            await client.api_client.close()
