"""The replicas of ``informer demo --replicas N``: ring members in this process, each with its own
ApiClient, sharded parents informer, children informer, controller and ``Ring`` member, and a
writer changing the parents; what every reconcile did, checked as it runs and at the end.

A parent is a ConfigMap ``role=parent`` whose ``data`` asks for ``replicas`` children carrying
its ``value``; the controller of the replica holding the parent's hash creates and updates them
(ConfigMaps ``role=child`` owned by the parent). Every reconcile records which replica reconciles
which parent, so an overlap (two replicas on one parent at once) is seen the moment it happens.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from informer.client import Client
from informer.controller import Controller, Request
from informer.errors import AlreadyExists, ApiError, TransportError
from informer.informer import Informer
from informer.reflector import ReflectorOptions
from informer.resource import CONFIGMAPS
from informer.ring import Ring, assign
from informer.shards import ShardSet, hash_value
from informer.testing import ApiServer

__all__ = [
    "NS",
    "Fleet",
    "ReplicaState",
    "Timings",
    "Writer",
    "cache_mismatches",
    "wrong_parents",
]

NS = "shop"
RING = "parents"


@dataclass(frozen=True, slots=True)
class Timings:
    """The ring's timings: short, so that a crash is taken over within seconds (a cluster's
    defaults are 15/10/2 s). ``bound``: a dead replica's ranges are reconciled again within it."""

    lease: float = 4.0
    renew: float = 3.0
    retry: float = 0.5
    handover: float = 0.8  # below lease - renew

    @property
    def bound(self) -> float:
        return self.lease + 2 * self.retry


class ReplicaState(enum.Enum):
    RUNNING = "running"
    CRASHED = "crashed"
    STOPPED = "stopped"


@dataclass
class World:
    """What every replica's reconciles did, checked as they run."""

    started: float = field(default_factory=time.monotonic)
    active: dict[str, str] = field(default_factory=dict)  # parent uid -> replica reconciling it
    overlaps: list[tuple[str, str, str]] = field(default_factory=list)  # (uid, one, other)
    last: dict[str, tuple[str, float]] = field(default_factory=dict)  # uid -> (replica, t)
    again: dict[str, float] = field(default_factory=dict)  # orphaned uid -> t reconciled again
    orphaned: set[str] = field(default_factory=set)  # the crashed replica's parents
    crashed: str | None = None
    crashed_at: float | None = None
    lost: ShardSet = field(default_factory=ShardSet)  # the crashed replica's ranges
    claimed_at: float | None = None  # when live replicas claimed all of ``lost``
    # how late this process ran between the crash and the claim: a loaded machine that does not
    # schedule it delays the ring's rounds (and its observations of the dead Lease) by as much
    late: float = 0.0
    covered_at: float | None = None  # when live replicas acted on all of ``lost`` again
    created: Counter[str] = field(default_factory=Counter)  # child -> successful creates
    reconciles: Counter[str] = field(default_factory=Counter)  # replica -> reconciles
    errors: Counter[str] = field(default_factory=Counter)  # replica -> failed reconciles

    def now(self) -> float:
        return time.monotonic() - self.started


@dataclass
class Replica:
    name: str
    ring: Ring
    controller: Controller
    parents: Informer
    children: Informer
    client: Client
    task: asyncio.Task[None]
    state: ReplicaState = ReplicaState.RUNNING


def _parent(i: int, rnd: random.Random) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p{i:04d}", "namespace": NS, "labels": {"role": "parent"}},
        "data": {"replicas": str(rnd.randint(1, 3)), "value": "v0"},
    }


class Fleet:
    """The replicas of one run and their shared record (``world``)."""

    def __init__(self, server: ApiServer, options: ReflectorOptions, timings: Timings) -> None:
        self.server = server
        self.options = options
        self.timings = timings
        self.world = World()
        self.replicas: dict[str, Replica] = {}  # every replica ever started, in order
        self.parents = 0

    def seed(self, parents: int, seed: int) -> None:
        rnd = random.Random(seed)
        for i in range(parents):
            self.server.create(CONFIGMAPS, _parent(i, rnd))
        self.parents = parents

    def live(self) -> list[Replica]:
        return [r for r in self.replicas.values() if r.state is ReplicaState.RUNNING]

    def add(self, name: str) -> Replica:
        api = self.server.api_client()
        client = Client(api, field_manager=name)
        parents = Informer(
            api,
            CONFIGMAPS,
            namespace=NS,
            label_selector="role=parent",
            options=self.options,
            shards=ShardSet(),  # nothing until the ring gives it ranges
        )
        children = Informer(
            api, CONFIGMAPS, namespace=NS, label_selector="role=child", options=self.options
        )
        controller = Controller(
            self._reconcile(name, client, parents, children),
            for_=parents,
            owns=[children],
            workers=4,
            client=client,
            name=name,
        )
        t = self.timings
        ring = Ring(
            client,
            RING,
            NS,
            identity=name,
            lease_duration=t.lease,
            renew_deadline=t.renew,
            retry_period=t.retry,
            handover_timeout=t.handover,
        )
        ring.shard(controller)
        parents.start()
        children.start()
        controller.start()
        task = asyncio.create_task(ring.run(), name=f"ring {name}")
        replica = Replica(name, ring, controller, parents, children, client, task)
        self.replicas[name] = replica
        return replica

    def _reconcile(self, name: str, client: Client, parents: Informer, children: Informer) -> Any:
        world = self.world

        async def reconcile(request: Request) -> None:
            p = parents.store.get(request.name, request.namespace)
            if p is None:
                return
            uid = p.uid
            if uid in world.active:
                world.overlaps.append((uid, world.active[uid], name))
            world.active[uid] = name
            now = world.now()
            world.last[uid] = (name, now)
            world.reconciles[name] += 1
            if uid in world.orphaned and uid not in world.again and name != world.crashed:
                world.again[uid] = now
            try:
                await _children(client, p, children, world)
            except (ApiError, TransportError):
                world.errors[name] += 1
                raise  # retried by the controller
            finally:
                if world.active.get(uid) == name:
                    del world.active[uid]

        return reconcile

    async def crash(self, name: str) -> None:
        """Gone at once, as a killed process: nothing released, its Lease left to expire."""
        r = self.replicas[name]
        world = self.world
        world.crashed, world.crashed_at = name, world.now()
        lost = world.lost = r.ring.acting
        world.orphaned = {
            p["metadata"]["uid"]
            for p in self.server.list_objects(CONFIGMAPS, NS)
            if p["metadata"]["labels"].get("role") == "parent"
            and lost.contains(hash_value(p["metadata"]["uid"]))
        }
        r.ring.release_on_cancel = False
        await self._close(r)
        r.state = ReplicaState.CRASHED

    async def close(self) -> None:
        """Stop every replica still running, cleanly (Leases released)."""
        for r in self.live():
            await self._close(r)
            r.state = ReplicaState.STOPPED

    @staticmethod
    async def _close(r: Replica) -> None:
        r.task.cancel()
        await asyncio.gather(r.task, return_exceptions=True)
        await r.controller.stop()
        await r.parents.stop()
        await r.children.stop()
        await r.client.api_client.close()

    def note_late(self, seconds: float) -> None:
        """The event loop ran ``seconds`` later than asked (counted from the crash to the
        claim: the bound on the claim assumes the process runs when its timers are due)."""
        w = self.world
        if w.crashed_at is not None and w.claimed_at is None and seconds > 0:
            w.late += seconds

    def note_cover(self) -> None:
        """Note when the live replicas act on all of the crashed one's ranges again."""
        w = self.world
        if w.crashed_at is None or w.covered_at is not None:
            return
        held, acting = ShardSet(), ShardSet()
        for r in self.live():
            held, acting = held | r.ring.held, acting | r.ring.acting
        if w.claimed_at is None and not w.lost - held:
            w.claimed_at = w.now()
        if not w.lost - acting:
            w.covered_at = w.now()

    def converged(self) -> bool:
        """Every live replica sees the same members and acts on exactly its assignment."""
        live = self.live()
        names = {r.name for r in live}
        expected = assign(names, live[0].ring.partitions) if live else {}
        return all(
            set(r.ring.members) == names and r.ring.acting == expected.get(r.name, ShardSet())
            for r in live
        )

    def quiet(self) -> bool:
        for r in self.live():
            q = r.controller.statistics().queue
            if q.depth + q.processing + q.waiting:
                return False
        return True


async def _children(client: Client, p: Any, children: Informer, world: World) -> None:
    data = p.get("data") or {}
    want, value = int(data.get("replicas", "0")), data.get("value", "")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": p.name, "uid": p.uid}
    for i in range(want):
        name = f"{p.name}-{i}"
        child = children.store.get(name, NS)
        if child is None:
            body = {
                "metadata": {
                    "name": name,
                    "namespace": NS,
                    "labels": {"role": "child"},
                    "ownerReferences": [{**ref, "controller": True}],
                },
                "data": {"value": value},
            }
            try:
                await client.create(CONFIGMAPS, body)
            except AlreadyExists:
                pass  # our cache was behind: the next event brings it
            else:
                world.created[name] += 1
        elif (child.get("data") or {}).get("value") != value:
            await client.patch(CONFIGMAPS, name, {"data": {"value": value}}, namespace=NS)


class Writer:
    """Users changing parents (a new value, another number of children) at ``rate`` per s."""

    def __init__(self, server: ApiServer, parents: int, rate: float, seed: int) -> None:
        self.server, self.parents, self.rate = server, parents, rate
        self.random = random.Random(seed + 2)
        self.writes = 0

    async def run(self) -> None:
        while self.parents:
            await asyncio.sleep(1 / self.rate)
            i = self.random.randrange(self.parents)
            self.writes += 1
            data = {"value": f"v{self.writes}", "replicas": str(self.random.randint(1, 3))}
            self.server.patch(CONFIGMAPS, f"p{i:04d}", {"data": data}, NS)


def wrong_parents(server: ApiServer) -> list[str]:
    """The parents whose children are not what they ask for (each child ``<parent>-<i>`` for
    ``i < replicas`` with the parent's value; children never shrink here)."""
    cms = server.list_objects(CONFIGMAPS, NS)
    kids = {c["metadata"]["name"]: c for c in cms if c["metadata"]["labels"].get("role") == "child"}
    wrong = []
    for p in cms:
        if p["metadata"]["labels"].get("role") != "parent":
            continue
        name, data = p["metadata"]["name"], p.get("data") or {}
        for i in range(int(data.get("replicas", "0"))):
            child = kids.get(f"{name}-{i}")
            if child is None or (child.get("data") or {}).get("value") != data.get("value"):
                wrong.append(name)
                break
    return wrong


def cache_mismatches(fleet: Fleet, r: Replica) -> tuple[int, int]:
    """(parents cached outside the replica's ranges, parents of its ranges not cached)."""
    cached = {o.uid for o in r.parents.store.list()}
    mine = {
        p["metadata"]["uid"]
        for p in fleet.server.list_objects(CONFIGMAPS, NS)
        if p["metadata"]["labels"].get("role") == "parent"
        and r.ring.acting.contains(hash_value(p["metadata"]["uid"]))
    }
    return len(cached - mine), len(mine - cached)
