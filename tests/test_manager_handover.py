"""Managers handing the Lease over at random moments, on the test API server.

Invariant: a replica reconciles only while the Lease names it. Every reconcile reads the Lease
from the server when it starts and when it ends (returns or is cancelled): both must name the
replica running it. A graceful stop (``Manager.stop``, what SIGTERM does) keeps it: the
controllers stop (reconciles in flight finish) while the elector still renews, and only then is
the Lease released, so the next holder starts after the last reconcile of the previous one.

Schedules (seeded): two or three replicas, sources created and changed while replicas are stopped
and started at random points (during sync, catch-up, a burst of reconciles or one reconcile in
flight; the leader or a standby), a failed release (the next holder waits for the Lease to
expire) and failed renewals within the renew deadline. Every schedule ends with every source
reconciled at its last version.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from informer import CONFIGMAPS, LEASES, NAMESPACES, LeaderElector, Manager, Request
from informer.testing import ApiServer, Fault
from tests.conftest import ELECTION, FAST

pytestmark = pytest.mark.asyncio

LEASE = "handover"


class Cluster:
    """Replicas of one operator on ``server``; every reconcile checks the invariant."""

    def __init__(self, server: ApiServer, rng: random.Random) -> None:
        self.server = server
        self.rng = rng
        self.api = server.api_client()
        self.replicas: dict[str, Manager] = {}
        self.runs: dict[str, asyncio.Task[None]] = {}
        self.violations: list[str] = []
        self.reconciled: dict[str, str] = {}  # source -> the RV last reconciled
        self.reconciles = 0
        self.started = asyncio.Event()  # set when a reconcile starts
        self._next = 0

    def holder(self) -> Any:
        lease = self.server.get(LEASES, LEASE, "default") or {}
        return (lease.get("spec") or {}).get("holderIdentity")

    def start(self) -> str:
        self._next += 1
        identity = f"r{self._next}"
        manager = Manager(
            self.api, port=None, options=FAST, close_client=False, registry=CollectorRegistry()
        )
        manager.elector = LeaderElector(
            manager.client, LEASE, "default", identity=identity, **ELECTION
        )
        sources = manager.informer(CONFIGMAPS, namespace="work")

        async def reconcile(request: Request) -> None:
            where = f"{identity} {request.name}"
            if self.holder() != identity:
                self.violations.append(f"{where} started while {self.holder()!r} held the Lease")
            self.started.set()
            try:
                await asyncio.sleep(self.rng.uniform(0.005, 0.05))  # work (not a synchronisation)
                source = sources.store.get(request.name, "work")
                if source is not None:
                    self.reconciled[request.name] = source.resource_version
                self.reconciles += 1
            finally:
                if self.holder() != identity:
                    self.violations.append(f"{where} ended while {self.holder()!r} held it")

        manager.controller(reconcile, for_=sources, shutdown_timeout=0.3)
        self.replicas[identity] = manager
        self.runs[identity] = asyncio.create_task(manager.run(handle_signals=False))
        return identity

    async def stop(self, identity: str) -> None:
        await self.replicas.pop(identity).stop()
        await self.runs.pop(identity)  # a clean stop: run() returns

    def leader(self) -> str | None:
        holder = self.holder()
        return holder if holder in self.replicas else None

    async def requests(self, n: int) -> None:
        """Until the server has answered ``n`` more requests (pacing without sleeping)."""
        target = len(self.server.requests) + n
        await self.server.wait_for_requests(lambda _: len(self.server.requests) >= target)

    def sources(self) -> dict[str, str]:
        return {
            o["metadata"]["name"]: o["metadata"]["resourceVersion"]
            for o in self.server.list_objects(CONFIGMAPS, "work")
        }


async def run_schedule(server: ApiServer, seed: int) -> Cluster:
    rng = random.Random(seed)
    server.create(NAMESPACES, {"metadata": {"name": "work"}})
    cluster = Cluster(server, rng)
    try:
        for _ in range(rng.randint(2, 3)):
            cluster.start()
        for step in range(rng.randint(3, 6)):
            for i in range(rng.randint(1, 4)):
                name = f"s{rng.randint(0, 6)}"
                data = {"data": {"v": f"{step}.{i}"}}
                if server.get(CONFIGMAPS, name, "work") is None:
                    server.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "work"}})
                else:
                    server.patch(CONFIGMAPS, name, data, "work")
            actions = [
                "stop-leader",
                "stop-mid-reconcile",
                "stop-any",
                "fail-release",
                "fail-renew",
            ]
            action = rng.choice([*actions, "none"])
            leader = cluster.leader()
            if action == "stop-mid-reconcile" and leader is not None:
                cluster.started.clear()  # until the leader reconciles a change, then stop it
                server.patch(CONFIGMAPS, name, {"data": {"v": f"{step}.mid"}}, "work")
                await asyncio.wait_for(cluster.started.wait(), 30)
                await cluster.stop(leader)
            if action == "fail-release":  # the release (or a renewal) fails: one failure only,
                # so a renewal is retried within the deadline; a failed release makes the next
                # holder wait for the Lease to expire
                server.faults.add(Fault(verb="update", resource="leases", status=500, times=1))
            if action == "fail-renew":  # one failed renewal, retried within the deadline
                server.faults.add(Fault(verb="update", resource="leases", status=503, times=1))
            if action in ("stop-leader", "fail-release") and cluster.leader() is not None:
                await cluster.stop(cluster.leader() or "")
            elif action == "stop-any" and cluster.replicas:
                await cluster.stop(rng.choice(sorted(cluster.replicas)))
            if len(cluster.replicas) < 2:
                cluster.start()
            await cluster.requests(rng.randint(1, 8))
        server.faults.clear()
        # liveness: one of the replicas leads and reconciles every source at its last version
        await server.wait_for_requests(
            lambda _: cluster.reconciled == cluster.sources(), timeout=30
        )
    finally:
        for identity in sorted(cluster.replicas):
            await cluster.stop(identity)
        await cluster.api.close()
    return cluster


def check(cluster: Cluster) -> None:
    assert cluster.violations == []
    assert cluster.reconciles > 0
    assert not cluster.holder()  # the last replica released it


@pytest.mark.parametrize("seed", range(3))
async def test_a_replica_reconciles_only_while_it_holds_the_lease(
    api_server: ApiServer, seed: int
) -> None:
    check(await run_schedule(api_server, seed))


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(3, 103))
async def test_a_replica_reconciles_only_while_it_holds_the_lease_soak(
    api_server: ApiServer, seed: int
) -> None:
    check(await run_schedule(api_server, seed))
