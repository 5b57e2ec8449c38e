"""Sharded controllers over real HTTP: three replicas in one process (each with its own ApiClient,
informers, controller and ring member) reconcile parents with children while writers change the
parents; one replica crashes without releasing anything, one joins. No parent is ever reconciled
by two replicas at once, no child is created twice, every parent's children are right at the
end, and the crashed replica's parents are reconciled again within lease duration + 2 x retry
period (ring timings on a manual clock; controllers on real time)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from conftest import FAST

from informer import CONFIGMAPS, NAMESPACES, Client, Controller, Informer, Request
from informer.ring import Ring, RingState, assign
from informer.shards import ShardField, ShardSet, hash_value
from informer.testing import ApiServer, Fault
from tests.election_helpers import LEASE, RENEW, RETRY, SteppedClock
from tests.ring_fleet import (
    NS,
    PARENTS,
    Writers,
    caches_hold_their_ranges,
    children_right,
    fleet,
    parent,
)

pytestmark = pytest.mark.asyncio


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
