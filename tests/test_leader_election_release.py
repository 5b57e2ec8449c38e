"""A candidate whose term ended while the Lease still names it (its renewals failed until the
renew deadline) releases the Lease when it is stopped before it takes it again, as client-go's
release does (it goes by the holder it observed, not by whether a term runs): else every other
replica waits for the Lease to expire although nobody acts on it."""

from __future__ import annotations

import pytest

from informer.testing import ApiServer, Fault
from tests.election_helpers import election, holder

pytestmark = pytest.mark.asyncio


async def test_a_lease_still_naming_a_stopped_follower_is_released(api_server: ApiServer) -> None:
    async with election(api_server, "a") as e:
        e.start("a")
        await e.clock.idle(1)
        a = e.candidates["a"].elector
        assert a.is_leader
        failing = api_server.faults.add(
            Fault(verb="update", resource="leases", status=500, times=None)
        )
        while a.is_leader:  # renewals fail until the renew deadline: the term ends
            await e.step(0.5)
        assert holder(api_server) == "a"  # nobody wrote over it
        api_server.faults.remove(failing)
        await e.stop("a")  # SIGTERM before its next attempt
        assert e.history("a") == ["started", "work_cancelled", "stopped", "run_returned"]
        assert holder(api_server) is None
