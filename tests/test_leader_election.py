"""Leader election over real HTTP with a manual clock: one leader at a time, handover within the
lease duration after a crash, at once after a release, 409s survived, a leader whose renewals
fail or hang steps down before anyone else can take over."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from informer import LEASES, Client, ElectionState, LeaderElector
from informer.leader_election import JITTER_FACTOR
from informer.testing import ApiServer, Fault
from tests.election_helpers import (
    LEASE,
    RENEW,
    RETRY,
    Candidate,
    SteppedClock,
    election,
    holder,
)

pytestmark = pytest.mark.asyncio


async def test_three_candidates_one_leader_and_handover_after_a_crash(
    api_server: ApiServer,
) -> None:
    async with election(api_server, "abc") as e:
        for name in "abc":
            e.start(name)
        await e.clock.idle(3)
        [first] = e.leaders()
        assert holder(api_server) == first
        await e.step(3 * LEASE)  # many renewals: nobody else ever leads
        assert e.leaders() == [first]
        assert [w for n, w, _ in e.log] == ["started"]
        # the leader dies without releasing (a crash: its lease is left to expire)
        e.candidates[first].elector.release_on_cancel = False
        killed_at = e.clock.now()
        await e.stop(first)
        assert holder(api_server) == first
        while not e.leaders():
            await e.step(0.5)
        [second] = e.leaders()
        took_over = e.times(second, "started")[0]
        assert took_over - killed_at <= LEASE + RETRY * (1 + JITTER_FACTOR)
        assert took_over - killed_at >= LEASE - RETRY  # not before the lease expired
        assert holder(api_server) == second
        lease = api_server.get(LEASES, "op", "default")
        assert lease is not None and lease["spec"]["leaseTransitions"] == 1
        await e.step(2 * LEASE)
        assert e.leaders() == [second]


async def test_clean_shutdown_releases_the_lease(api_server: ApiServer) -> None:
    async with election(api_server, "ab") as e:
        e.start("a")
        await e.clock.idle(1)
        assert e.leaders() == ["a"]
        e.start("b")
        await e.clock.idle(2)
        await e.step(RETRY)
        assert e.leaders() == ["a"]
        released_at = e.clock.now()
        await e.stop("a")
        assert e.candidates["a"].elector.state is ElectionState.STOPPED
        assert e.history("a") == ["started", "work_cancelled", "stopped", "run_returned"]
        assert holder(api_server) is None
        while not e.leaders():
            await e.step(0.5)
        assert e.leaders() == ["b"]
        # b did not wait for the lease to expire: its next retry took it
        assert e.times("b", "started")[0] - released_at <= RETRY * (1 + JITTER_FACTOR)


@pytest.mark.parametrize("failure", ["error", "stall"])
async def test_a_leader_whose_renewals_fail_steps_down_before_a_takeover(
    api_server: ApiServer, failure: str
) -> None:
    async with election(api_server, "ab") as e:
        e.start("a")
        await e.clock.idle(1)
        e.start("b")
        await e.clock.idle(2)
        await e.step(RETRY * 2)
        assert e.leaders() == ["a"]
        a = e.candidates["a"].elector
        renewals = [r for r in api_server.requests if r.verb == "update"]
        action: dict[str, Any] = {"status": 500} if failure == "error" else {"latency": 3600.0}
        renewals_fail = Fault(
            verb="update",
            resource="leases",
            times=None,
            predicate=lambda r: r.query.get("fieldManager") == "a",
            **action,
        )
        api_server.faults.add(renewals_fail)
        if failure == "stall":

            def stuck() -> int:
                hung = [r for r in api_server.requests if r.fault is not None and r.status == 0]
                return len(hung) - a.attempt_timeouts

            e.stuck = stuck
        last_renewal = e.clock.now()  # a renewed at most this recently
        while a.is_leader:
            await e.step(0.5)
        stepped_down = e.times("a", "stopped")[0]
        assert e.times("a", "work_cancelled") == [stepped_down]  # its workers stopped at once
        assert stepped_down - last_renewal <= RENEW
        assert a.renew_failures >= 1 and len(renewals) >= 2
        assert (a.attempt_timeouts >= 1) is (failure == "stall")
        while not e.leaders():
            await e.step(0.5)
        assert e.leaders() == ["b"]
        assert e.times("b", "started")[0] > stepped_down
        assert e.times("b", "started")[0] - last_renewal >= LEASE - RETRY
        api_server.faults.remove(renewals_fail)  # a's release on shutdown is answered


async def test_conflicts_on_the_lease_are_retried(api_server: ApiServer) -> None:
    # the first create loses a race (409 AlreadyExists), a renewal gets a 409 Conflict
    api_server.faults.add(
        Fault(verb="create", resource="leases", status=409, reason="AlreadyExists")
    )
    async with election(api_server, "ab") as e:
        e.start("a")
        await e.clock.idle(1)
        assert e.leaders() == []
        await e.step(RETRY * (1 + JITTER_FACTOR) + 0.5)
        assert e.leaders() == ["a"]
        e.start("b")
        await e.clock.idle(2)
        api_server.faults.add(
            Fault(verb="update", resource="leases", status=409, reason="Conflict")
        )
        await e.step(4 * RETRY)
        assert e.leaders() == ["a"]  # it read the Lease again, saw itself, renewed
        assert [w for n, w, _ in e.log] == ["started"]
        statuses = [(r.verb, r.status) for r in api_server.requests if r.resource == "leases"]
        assert ("create", 409) in statuses and ("update", 409) in statuses
        # two followers racing for an expired lease: one wins, the other sees 409 and follows
        e.candidates["a"].elector.release_on_cancel = False
        e.candidates["c"] = Candidate(
            LeaderElector(
                Client(e.candidates["a"].elector.client.api_client, field_manager="c"),
                "op",
                "default",
                identity="c",
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                clock=e.clock,
                rng=random.Random(1),  # the same jitter as b: they try at the same moments
            )
        )
        e.start("c")
        await e.clock.idle(3)
        await e.stop("a")
        while not e.leaders():
            await e.step(0.5)
        await e.step(2 * RETRY)
        assert len(e.leaders()) == 1


async def test_work_that_raises_ends_the_campaign_and_releases(api_server: ApiServer) -> None:
    api = api_server.api_client()
    clock = SteppedClock()
    elector = LeaderElector(
        Client(api), "op", "default", identity="a", clock=clock, rng=random.Random(0)
    )
    failed = asyncio.Event()

    async def work() -> None:
        await failed.wait()
        raise RuntimeError("controller bug")

    stopped: list[str] = []
    task = asyncio.create_task(elector.run(work, lambda: stopped.append("stopped")))
    await elector.wait_until_leading()
    await clock.idle(1)
    failed.set()
    with pytest.raises(RuntimeError, match="controller bug"):
        await task
    assert stopped == ["stopped"] and elector.state is ElectionState.STOPPED
    assert holder(api_server) is None
    with pytest.raises(ValueError):
        LeaderElector(Client(api), "op", "default", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElector(Client(api), "op", "default", renew_deadline=2, retry_period=2)
    await api.close()
