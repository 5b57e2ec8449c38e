"""Sharded controllers at the issue's scale, over real HTTP: three replicas in one process (each
its own ApiClient, informers, controller and ring member; the ring on a manual clock) reconcile
about 2,000 parents with their children while writers change the parents; one replica crashes
without releasing anything, one joins. No parent is reconciled by two replicas at once, no child
is created twice, every parent's children are right at the end, the crashed replica's parents
are reconciled again within lease duration + 2 x retry period, and each replica caches its
share's part of the parents within +-20% (the space is shared by hash: a share of 1/3 of 2,000
parents is 667 +- 21, one standard deviation). The same against a server that ignores
``shardSelector`` (the replicas filter by themselves).

Under ``-m soak``: about 30-40 s each on a loaded 2-core machine (the suite runs the same
scenario with 32 parents in ``tests/test_ring_controllers.py``, where +-20% is no test: uids are
random, and 11 parents per replica vary by more)."""

from __future__ import annotations

import pytest

from informer import CONFIGMAPS
from informer.shards import hash_value
from informer.testing import ApiServer
from tests.election_helpers import LEASE, RETRY
from tests.ring_fleet import (
    NS,
    Writers,
    caches_hold_their_ranges,
    caches_within_their_share,
    children_right,
    fleet,
    parent,
)

pytestmark = pytest.mark.asyncio

PARENTS = 2000


@pytest.mark.soak
@pytest.mark.parametrize("server", ["on", "off"], ids=["server-filters", "server-ignores"])
async def test_three_replicas_share_2000_parents_through_a_crash_and_a_join(
    api_server: ApiServer, server: str
) -> None:
    api_server.shard_selectors = server  # type: ignore[assignment]
    for i in range(PARENTS):
        api_server.create(CONFIGMAPS, parent(i))
    writers = Writers(api_server, PARENTS)
    async with fleet(api_server, sharded=True) as f:
        for name in "abc":
            await f.add(name)
        await f.settle()
        await f.until_converged(writers, limit=4 * RETRY)
        while children_right(api_server):
            await f.step(writers)
        caches_hold_their_ranges(f)
        caches_within_their_share(f)

        crashed_at = f.clock.now()
        lost = await f.crash("b")
        await f.until_converged(writers, limit=LEASE + 2 * RETRY)
        orphaned = {
            p["metadata"]["uid"]
            for p in api_server.list_objects(CONFIGMAPS, NS)
            if p["metadata"]["labels"].get("role") == "parent"
            and lost.contains(hash_value(p["metadata"]["uid"]))
        }
        assert len(orphaned) > PARENTS // 5
        again = {u: t for n, u, t in f.world.reconciled if t > crashed_at and u in orphaned}
        assert set(again) == orphaned  # every parent of the crashed replica reconciled again
        assert max(again.values()) <= crashed_at + LEASE + 2 * RETRY
        caches_within_their_share(f)

        await f.add("d")
        await f.settle()
        await f.until_converged(writers, limit=LEASE + 3 * RETRY)
        for _ in range(2):
            await f.step(writers)
        while children_right(api_server):
            await f.step()
        caches_hold_their_ranges(f)
        caches_within_their_share(f)

    await writers.client.api_client.close()
    assert f.world.overlaps == []
    assert f.world.created and max(f.world.created.values()) == 1  # no child created twice
    assert f.world.already_existed == []
    assert writers.writes > 0
    selectors = [r for r in api_server.requests if r.query.get("shardSelector")]
    assert selectors  # the parents' lists and watches asked for their ranges
