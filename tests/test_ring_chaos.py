"""Sharded controllers under random schedules: membership changes at random times (crashes,
clean leaves, joins, members that cannot write their Lease for a while) on top of server faults
(watch 410s and cuts, failed Lease reads, 429s on creates), with the server filtering shard
selectors, ignoring them, or filtering lists only (no watch cache), and the parents cached whole
or sharded. Invariants: no parent reconciled by two replicas at once, no child created twice or
found existing by a creator, every parent's children right once the faults are over, every
sharded cache holding exactly its member's ranges. A sharded cache merges its lanes as soon as
its ranges are quiet (most schedules) or never: what it hands its handlers stays a history (no
change twice or lost, no key back in time) through takeovers, releases and merges, and its lanes
end merged into one. Two schedules in the suite; ``-m soak`` runs 40 (``RING_CHAOS_SCHEDULES``)."""

from __future__ import annotations

import os
import random

import pytest

from informer import CONFIGMAPS
from informer.testing import ApiServer, Fault
from tests.election_helpers import LEASE, RETRY
from tests.ring_fleet import (
    PARENTS,
    Writers,
    caches_hold_their_ranges,
    children_right,
    fleet,
    lanes_merged,
    parent,
)

pytestmark = pytest.mark.asyncio


def lease_writes_of(name: str) -> Fault:
    lease = f"parents-{name}"
    return Fault(
        status=500,
        times=None,
        predicate=lambda r: r.name == lease and r.verb in ("update", "create", "delete"),
    )


async def run_schedule(seed: int) -> None:
    rnd = random.Random(seed)
    mode = rnd.choice(["on", "off", "no-watch-cache"])
    sharded = rnd.random() < 0.7
    merge_delay = 0.0 if rnd.random() < 0.8 else None
    async with ApiServer(shard_selectors=mode, bookmark_interval=0.2) as server:
        for i in range(PARENTS):
            server.create(CONFIGMAPS, parent(i))
        for fault in (
            Fault(verb="watch", resource="configmaps", status=410, nth=rnd.randint(2, 8)),
            Fault(
                verb="watch",
                resource="configmaps",
                nth=rnd.randint(2, 8),
                after_events=1,
                cut_mid_line=True,
            ),
            Fault(verb="list", resource="leases", status=500, nth=rnd.randint(3, 30), times=2),
            Fault(verb="create", resource="configmaps", status=429, retry_after=0, nth=3),
        ):
            server.faults.add(fault)
        writers = Writers(server)
        cuts: dict[str, Fault] = {}
        joined = 0
        try:
            async with fleet(server, sharded, merge_delay) as f:
                for name in "abc":
                    await f.add(name)
                await f.settle()
                for _ in range(rnd.randint(4, 9)):
                    event = rnd.choice(["step", "step", "crash", "leave", "join", "cut", "heal"])
                    names = sorted(f.replicas)
                    name = rnd.choice(names)
                    if event == "step" or (event in ("crash", "leave") and len(names) < 2):
                        for _ in range(rnd.randint(1, 24)):
                            await f.step(writers)
                    elif event in ("crash", "leave"):
                        await f.crash(name, release=event == "leave")
                        cut = cuts.pop(name, None)
                        if cut is not None:
                            server.faults.remove(cut)
                    elif event == "join":
                        joined += 1
                        await f.add(f"n{joined}")
                        await f.settle()
                    elif event == "cut" and name not in cuts:
                        cuts[name] = server.faults.add(lease_writes_of(name))
                    elif event == "heal" and cuts:
                        server.faults.remove(cuts.pop(rnd.choice(sorted(cuts))))
                    assert f.world.overlaps == [], (seed, f.world.overlaps)
                    assert f.world.broken_histories == [], (seed, f.world.broken_histories)
                for cut in cuts.values():
                    server.faults.remove(cut)
                await f.until_converged(writers, limit=2 * LEASE + 8 * RETRY)
                for _ in range(60):
                    if not children_right(server):
                        break
                    await f.step()
                assert children_right(server) == [], seed
                caches_hold_their_ranges(f)
                await lanes_merged(f)
                caches_hold_their_ranges(f)
        finally:
            await writers.client.api_client.close()
    assert f.world.overlaps == [], seed
    assert max(f.world.created.values(), default=1) == 1, seed
    assert f.world.already_existed == [], seed
    assert f.world.broken_histories == [], seed


@pytest.mark.parametrize("seed", [0, 1])
async def test_random_sharded_schedule_keeps_every_invariant(seed: int) -> None:
    await run_schedule(seed)


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(2, 2 + int(os.environ.get("RING_CHAOS_SCHEDULES", "40"))))
async def test_random_sharded_schedule_keeps_every_invariant_soak(seed: int) -> None:
    await run_schedule(seed)
