"""Ring members over real HTTP with a manual clock: members converge on the assignment with no
hash acted on by two members at any moment; a crashed member's ranges are acted on again within
lease duration + 2 x retry period; a member joining takes its share by handover; a member that
cannot renew fences itself before anyone takes its ranges; a clean shutdown hands over at once."""

from __future__ import annotations

import asyncio

import pytest

from informer import LEASES, Client
from informer.ring import Ring, assign
from informer.shards import ShardSet
from informer.testing import ApiServer, Fault
from tests.election_helpers import LEASE, RETRY
from tests.ring_helpers import cluster

pytestmark = pytest.mark.asyncio


async def test_members_converge_take_over_a_crash_and_share_with_a_joiner(
    api_server: ApiServer,
) -> None:
    async with cluster(api_server, "abc") as c:
        await c.until_converged(limit=3 * RETRY)
        assert c.acting.overlaps == []
        shares = {n: r.acting.share for n, r in c.rings.items()}
        assert all(abs(s * 3 - 1) <= 0.15 for s in shares.values())

        def moves() -> dict[str, tuple[int, int, int]]:
            return {
                n: (r.statistics().started, r.statistics().stopped, r.epoch)
                for n, r in c.rings.items()
            }

        before = moves()
        await c.step(3 * LEASE)  # renewals: nothing moves
        assert c.converged() and c.acting.overlaps == []
        assert moves() == before

        crashed_at = c.clock.now()
        await c.crash("b")
        took = await c.until_converged(limit=LEASE + 2 * RETRY)
        assert took >= LEASE - RETRY  # not before its Lease could have expired
        assert c.acting.overlaps == []
        assert sum(r.statistics().taken_over for r in c.rings.values()) >= 1
        assert all(r.statistics().handover.count >= 2 for r in c.rings.values())
        assert max(r.statistics().handover.max for r in c.rings.values()) <= LEASE + 2 * RETRY
        await c.step(2 * LEASE)  # the crashed member's Lease is collected
        assert api_server.get(LEASES, "ops-b", "default") is None
        assert c.clock.now() - crashed_at >= LEASE

        c.add("d")
        await c.clock.settle(c.sleepers)
        await c.until_converged(limit=4 * RETRY + 4.0)
        assert c.acting.overlaps == []


async def test_a_clean_shutdown_hands_over_at_once(api_server: ApiServer) -> None:
    async with cluster(api_server, "ab") as c:
        await c.until_converged(limit=3 * RETRY)
        await c.remove("a")
        assert api_server.get(LEASES, "ops-a", "default") is None  # left: Lease deleted
        await c.until_converged(limit=2 * RETRY)
        assert c.acting.now["b"] == ShardSet.full() and c.acting.overlaps == []


async def test_a_member_that_cannot_renew_stops_before_its_ranges_move(
    api_server: ApiServer,
) -> None:
    async with cluster(api_server, "ab") as c:
        await c.until_converged(limit=3 * RETRY)
        a = c.rings["a"]
        api_server.faults.add(
            Fault(
                verb="update",
                resource="leases",
                status=500,
                times=None,
                predicate=lambda r: r.name == "ops-a",
            )
        )
        fenced = None
        while c.acting.now.get("b") != ShardSet.full():
            await c.step()
            if fenced is None and not c.acting.now.get("a"):
                fenced = c.clock.now()
                assert c.acting.now["b"] != ShardSet.full()  # a stopped first
        assert fenced is not None and a.statistics().fenced >= 1
        assert c.acting.overlaps == []


async def test_a_member_whose_claims_cannot_be_read_is_assumed_to_claim_everything(
    api_server: ApiServer,
) -> None:
    api_server.create(
        LEASES,
        {
            "metadata": {
                "name": "ops-zombie",
                "namespace": "default",
                "labels": {"ring.kube-informer.io/name": "ops"},
                "annotations": {"ring.kube-informer.io/held": "not ranges"},
            },
            "spec": {"holderIdentity": "zombie", "leaseDurationSeconds": int(LEASE)},
        },
    )
    async with cluster(api_server, "ab") as c:
        await c.step(LEASE - 2 * RETRY)  # the zombie counts as live: nothing may start
        assert not c.acting.now.get("a") and not c.acting.now.get("b")
        assert all("zombie" in r.members for r in c.rings.values())
        await c.until_converged(limit=2 * RETRY + 1)  # it expired: never renewed
        assert c.acting.overlaps == []
        await c.step(LEASE + RETRY)
        assert api_server.get(LEASES, "ops-zombie", "default") is None  # collected


async def test_ranges_start_only_once_every_participant_is_prepared(api_server: ApiServer) -> None:
    class NotReady:
        """Fails its first two preparations (an informer that could not list)."""

        def __init__(self) -> None:
            self.failures = 2

        async def prepare(self, ranges: ShardSet) -> None:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("not ready")

        def started(self, ranges: ShardSet) -> None:
            return None

        async def stop(self, ranges: ShardSet, timeout: float) -> None:
            return None

    async with cluster(api_server, "") as c:
        a = c.add("a")
        a._participants.insert(0, NotReady())
        await c.clock.settle(c.sleepers)
        assert not a.acting and a.held == ShardSet.full()  # claimed, not started
        await c.step(RETRY)
        assert not a.acting
        await c.until_converged(limit=2 * RETRY)
        assert c.acting.now["a"] == ShardSet.full()


async def test_members_on_the_monotonic_clock_share_the_space(api_server: ApiServer) -> None:
    """The same protocol on real time (short durations): two members converge, one leaves."""
    clients = [Client(api_server.api_client(), field_manager=n) for n in "ab"]
    rings = [
        Ring(c, "rt", "default", identity=n, lease_duration=3, renew_deadline=2, retry_period=0.2)
        for c, n in zip(clients, "ab", strict=True)
    ]
    tasks = [asyncio.create_task(r.run()) for r in rings]
    try:
        expected = assign(["a", "b"])
        for r in rings:
            await r.wait_for(lambda r: r.acting == expected[r.identity], timeout=30)
        tasks[0].cancel()
        await asyncio.wait({tasks[0]})
        await rings[1].wait_for(lambda r: r.acting == ShardSet.full(), timeout=30)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for c in clients:
            await c.api_client.close()


class FailsOnce:
    """A participant whose first ``prepare`` once armed fails (a catch-up list refused)."""

    def __init__(self) -> None:
        self.armed = False

    async def prepare(self, ranges: ShardSet) -> None:
        if self.armed:
            self.armed = False
            raise RuntimeError("catch-up failed")

    def started(self, ranges: ShardSet) -> None:
        return None

    async def stop(self, ranges: ShardSet, timeout: float) -> None:
        return None


async def test_a_takeover_whose_start_is_retried_is_counted_once(api_server: ApiServer) -> None:
    async with cluster(api_server, "abc") as c:
        await c.until_converged(limit=3 * RETRY)
        failing = {n: FailsOnce() for n in "ac"}
        for n, p in failing.items():
            c.rings[n].attach(p)
            p.armed = True
        await c.crash("b")
        await c.until_converged(limit=LEASE + 4 * RETRY)
        assert not any(p.armed for p in failing.values())  # each start was tried again
        assert all(c.rings[n].statistics().taken_over == 1 for n in "ac"), [
            c.rings[n].statistics() for n in "ac"
        ]


class FailsWhileArmed:
    """A participant whose ``prepare`` fails while armed (its catch-up list refused for long)."""

    def __init__(self) -> None:
        self.armed = False
        self.failed = 0

    async def prepare(self, ranges: ShardSet) -> None:
        if self.armed:
            self.failed += 1
            raise RuntimeError("catch-up failed")

    def started(self, ranges: ShardSet) -> None:
        return None

    async def stop(self, ranges: ShardSet, timeout: float) -> None:
        return None


async def test_a_takeover_started_after_the_dead_members_lease_was_collected_is_counted(
    api_server: ApiServer,
) -> None:
    async with cluster(api_server, "abc") as c:
        await c.until_converged(limit=3 * RETRY)
        failing = {n: FailsWhileArmed() for n in "ac"}
        for n, p in failing.items():
            c.rings[n].attach(p)
            p.armed = True
        await c.crash("b")
        while api_server.get(LEASES, "ops-b", "default") is not None:  # collected meanwhile
            await c.step(RETRY)
        assert all(p.failed for p in failing.values())
        assert all(c.rings[n].statistics().taken_over == 0 for n in "ac")
        for p in failing.values():
            p.armed = False
        await c.until_converged(limit=4 * RETRY)
        assert c.acting.overlaps == []
        assert all(c.rings[n].statistics().taken_over == 1 for n in "ac"), [
            c.rings[n].statistics() for n in "ac"
        ]
