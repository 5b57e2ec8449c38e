"""A sharded informer under random schedules: ranges taken and given up at random moments,
objects created, updated, deleted and recreated under their names, watches cut, against a
server with the gate on, off, and without its watch cache.

Invariants: the cache never holds an object outside the ranges held (checked after every step);
once every range is listed and the cache has reached the server's RV, it holds exactly the
objects of its ranges, each at its newest version. No range kept is listed again when ranges
change (checked until a fault that may make a lane relist is injected).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.shards import ShardRange, ShardSet, hash_value, parse_selector
from informer.testing import ApiServer, Fault
from tests.conftest import cm, running_informer

SLICES = ShardRange.split(8)
FAULTS: list[dict[str, Any] | None] = [
    None,  # every open watch cut
    {"verb": "watch", "status": 410, "reason": "Expired", "message": "too old", "times": 1},
    {"verb": "list", "status": 500, "times": 1},
    {"verb": "list", "status": 429, "retry_after": 0, "times": 1},
    {"verb": "list", "page": 2, "status": 410, "reason": "Expired", "message": "gone", "times": 1},
    {"verb": "watch", "status": 503, "times": 1},
]


def random_shards(rng: random.Random) -> ShardSet:
    return ShardSet(r for r in SLICES if rng.random() < 0.5)


def expected(server: ApiServer, shards: ShardSet) -> dict[str, str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in server.list_objects(CONFIGMAPS)
        if shards.contains(hash_value(o["metadata"]["uid"]))
    }


def check_in_range(inf: Any) -> None:
    shards = inf.shards
    for obj in inf.store.list():
        assert shards.contains(hash_value(obj.uid)), obj.key


@pytest.mark.parametrize("mode", ["on", "off", "no-watch-cache"])
@pytest.mark.parametrize("seed", [1, 2])
async def test_a_sharded_informer_follows_random_schedules(mode: str, seed: int) -> None:
    rng = random.Random(seed)
    names = [f"cm-{i}" for i in range(24)]
    async with ApiServer(
        too_large_wait=0.01, bookmark_interval=0.1, shard_selectors=mode
    ) as server:
        for name in names[:16]:
            server.create(CONFIGMAPS, cm(name))
        async with running_informer(server, shards=random_shards(rng)) as inf:
            faulted = False
            for _ in range(30):
                roll = rng.random()
                if roll < 0.2:
                    before = {id(r) for r in server.requests if r.verb == "list" and r.page == 1}
                    held = inf.shards
                    inf.set_shards(random_shards(rng))
                    check_in_range(inf)
                    await inf.wait_for_shards(timeout=10)
                    for r in server.requests if not faulted else ():  # a kept range: no list
                        text = r.query.get("shardSelector")
                        if r.verb == "list" and r.page == 1 and id(r) not in before and text:
                            assert not (parse_selector(text).shard_set & held & inf.shards)
                elif roll < 0.3:
                    fault = rng.choice(FAULTS)
                    if fault is None:
                        server.disrupt_watches(Fault(close_after_events=0))
                    else:  # a relist of a lane it hits is legitimate from now on
                        server.faults.add(Fault(**fault))
                        faulted = True
                else:
                    name = rng.choice(names)
                    current = server.get(CONFIGMAPS, name, "default")
                    if current is None:
                        server.create(CONFIGMAPS, cm(name))
                    elif rng.random() < 0.4:
                        server.delete(CONFIGMAPS, name, "default")
                    else:
                        server.patch(
                            CONFIGMAPS, name, {"data": {"k": str(rng.random())}}, "default"
                        )
                check_in_range(inf)
                if rng.random() < 0.2:
                    await inf.wait_for_shards(timeout=10)
                    await inf.wait_for_resource_version(str(server.revision), timeout=10)
                    held = {o.key: o.resource_version for o in inf.store.list()}
                    assert held == expected(server, inf.shards)
            await inf.wait_for_shards(timeout=10)
            await inf.wait_for_resource_version(str(server.revision), timeout=10)
            held = {o.key: o.resource_version for o in inf.store.list()}
            assert held == expected(server, inf.shards)
