"""A sharded reflector merges the lanes of ranges taken at different times into one lane, through
real HTTP, against a server with the gate on, off, and without its watch cache.

What a merge must keep (``informer.reflector._sharded``): the handlers see a history (no change
twice, none lost, no key back in time; nothing for an object whose RV did not change), the store
holds exactly its ranges' objects, freshness waits keep their meaning, and afterwards one lane
lists and watches the union (one selector in the canonical spelling).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from informer.reflector import ShardedReflector, ShardStats
from informer.resource import CONFIGMAPS
from informer.shards import ShardRange, ShardSelector, ShardSet, hash_value, parse_selector
from informer.store import Delta, Store
from informer.testing import ApiServer, Fault, RecordedRequest
from informer.transport import Transport
from tests.conftest import FAST, cm, running_informer, wait_until
from tests.test_store_partitions import Handlers

MODES = ["on", "off", "no-watch-cache"]
Q = ShardRange.split(4)
FIRST, SECOND, THIRD = ShardSet([Q[0]]), ShardSet([Q[2]]), ShardSet([Q[3]])
MERGE_AT_ONCE = replace(FAST, lane_merge_delay=0.0)


class Recorded(Handlers):
    """Every delta the reflector hands over, checked as a history as it comes."""

    def __init__(self, check: bool = True) -> None:
        super().__init__()
        self.deltas: list[Delta] = []
        self.check = check  # (the history's RVs are compared: not with opaque RVs)
        self.violations: list[str] = []  # (an exception here would be logged and swallowed)

    def follow(self, shards: ShardSet) -> None:
        """Ranges given up leave the cache with no delta: they leave the view too."""
        for key, obj in list(self.view.items()):
            if not shards.contains(hash_value(obj.uid)):
                del self.view[key]
                self.last_rv.pop(key, None)

    def __call__(self, deltas: list[Delta]) -> None:
        self.deltas.extend(deltas)
        if self.check:
            try:
                self.see(deltas)
            except AssertionError as exc:
                self.violations.append(str(exc))


def expected(server: ApiServer, shards: ShardSet) -> dict[str, str]:
    return {
        f"default/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in server.list_objects(CONFIGMAPS, "default")
        if shards.contains(hash_value(o["metadata"]["uid"]))
    }


def held(store: Store) -> dict[str, str]:
    return {o.key: o.resource_version for o in store.list()}


def selector_of(r: RecordedRequest) -> ShardSet | None:
    text = r.query.get("shardSelector")
    return None if text is None else parse_selector(text).shard_set


@contextlib.asynccontextmanager
async def sharded(
    server: ApiServer, shards: ShardSet, options: Any = MERGE_AT_ONCE
) -> AsyncIterator[tuple[ShardedReflector, Recorded]]:
    api = server.api_client()
    seen = Recorded(check=not server.options.opaque)
    reflector = ShardedReflector(
        Transport(api), CONFIGMAPS, Store(), shards=shards, options=options, on_deltas=seen
    )
    task = asyncio.create_task(reflector.run())
    try:
        async with asyncio.timeout(10):
            await reflector.lanes_synced.wait()
        yield reflector, seen
        assert seen.violations == []
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api.close()


async def take(reflector: ShardedReflector, shards: ShardSet) -> None:
    reflector.set_shards(reflector.shards | shards)
    async with asyncio.timeout(10):
        await reflector.lanes_synced.wait()


def merged(reflector: ShardedReflector, merges: int = 1) -> bool:
    stats = reflector.shard_statistics()
    return stats.merges >= merges and stats.lanes <= 1 and not stats.merging


async def caught_up(server: ApiServer, reflector: ShardedReflector) -> None:
    if not reflector.shards:  # no range, no lane: nothing moves the RV (an informer answers)
        return
    await reflector.parent_store.wait_for_resource_version(str(server.revision), timeout=10)


@pytest.fixture(params=MODES)
async def server(request: pytest.FixtureRequest) -> Any:
    async with ApiServer(bookmark_interval=0.2, shard_selectors=request.param) as srv:
        yield srv


async def test_lanes_taken_at_different_times_become_one_lane_with_no_change_seen(
    server: ApiServer,
) -> None:
    for i in range(40):
        server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
    async with sharded(server, FIRST) as (reflector, seen):
        await take(reflector, SECOND)
        await take(reflector, THIRD)
        before = len(seen.deltas)
        await wait_until(lambda: merged(reflector))
        assert len(seen.deltas) == before  # nothing changed: the merge is no change
        union = FIRST | SECOND | THIRD
        assert reflector.shards == union
        assert held(reflector.parent_store) == expected(server, union)
        assert len(reflector.parent_store.partitions) == 1
        at = len(server.requests)
        late = [server.create(CONFIGMAPS, cm(f"late-{i}")) for i in range(10)]
        server.patch(CONFIGMAPS, "cm-001", {"data": {"k": "2"}}, "default")
        server.delete(CONFIGMAPS, "cm-002", "default")
        await caught_up(server, reflector)
        assert held(reflector.parent_store) == expected(server, union)
        assert seen.view == {o.key: o for o in reflector.parent_store.list()}
        for o in late:  # read-your-writes through the merged lane
            got = await reflector.parent_store.wait_for_write(o, timeout=10)
            assert (got is not None) == union.contains(hash_value(o["metadata"]["uid"]))
        server.disrupt_watches(Fault(close_after_events=0))  # the merged lane watches again
        await server.wait_for_requests(
            lambda r: r.verb == "watch" and r in server.requests[at:], timeout=10
        )
    merge_lists = [r for r in server.requests if r.verb == "list" and selector_of(r) == union]
    assert merge_lists  # one list of the union, in the canonical spelling
    assert all(r.query["shardSelector"] == str(ShardSelector.of(union)) for r in merge_lists)
    watches = [r for r in server.requests[at:] if r.verb == "watch"]
    assert watches and all(selector_of(r) == union for r in watches)  # one lane from then on
    assert reflector.shard_statistics().merges == 1


async def test_changes_the_old_lanes_had_not_seen_arrive_once_at_the_merge(
    server: ApiServer,
) -> None:
    for i in range(30):
        server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
    async with sharded(server, FIRST) as (reflector, seen):
        await server.wait_for_requests(lambda r: r.verb == "watch", timeout=10)
        # the first lane's watch goes silent: it misses what follows, the merge's list has it
        server.disrupt_watches(Fault(stall=30))
        for i in range(30):
            if i % 3 == 0:
                server.delete(CONFIGMAPS, f"cm-{i:03}", "default")
            else:
                server.patch(CONFIGMAPS, f"cm-{i:03}", {"data": {"k": "2"}}, "default")
        for i in range(10):
            server.create(CONFIGMAPS, cm(f"new-{i}"))
        await take(reflector, SECOND)
        await wait_until(lambda: merged(reflector))
        union = FIRST | SECOND
        assert held(reflector.parent_store) == expected(server, union)  # before any watch event
        assert seen.view == {o.key: o for o in reflector.parent_store.list()}
        await caught_up(server, reflector)
        assert held(reflector.parent_store) == expected(server, union)


async def test_changes_the_old_lanes_saw_are_not_delivered_again_after_the_merge(
    server: ApiServer,
) -> None:
    for i in range(20):
        server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
    async with sharded(server, FIRST) as (reflector, seen):
        for i in range(20):
            if i % 4 == 0:
                server.delete(CONFIGMAPS, f"cm-{i:03}", "default")
            else:
                server.patch(CONFIGMAPS, f"cm-{i:03}", {"data": {"k": "2"}}, "default")
        for i in range(6):
            server.create(CONFIGMAPS, cm(f"new-{i}"))
        await caught_up(server, reflector)
        union = FIRST | SECOND

        def of_the_merge(r: RecordedRequest) -> bool:
            return r.page == 1 and selector_of(r) == union

        # the merge's list is served 30 revisions old: its watch replays what the lanes applied
        server.faults.add(Fault(verb="list", predicate=of_the_merge, list_lag=30))
        await take(reflector, SECOND)
        await wait_until(lambda: merged(reflector))
        server.create(CONFIGMAPS, cm("after"))
        await caught_up(server, reflector)
        assert held(reflector.parent_store) == expected(server, union)
        assert seen.view == {o.key: o for o in reflector.parent_store.list()}
        assert reflector.parent_store.partitions[0].ahead == []
    assert reflector.statistics().duplicate_events_dropped > 0


async def test_a_change_of_ranges_abandons_a_merge_which_starts_again_once_quiet() -> None:
    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(20):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        union = FIRST | SECOND

        def of_the_merge(r: RecordedRequest) -> bool:
            return r.verb == "list" and selector_of(r) == union

        refused = server.faults.add(Fault(predicate=of_the_merge, status=500, times=None))
        async with sharded(server, FIRST) as (reflector, seen):
            await take(reflector, SECOND)
            await server.wait_for_requests(of_the_merge, timeout=10)
            assert reflector.shard_statistics().merging
            await take(reflector, THIRD)  # a handover: the merge of two lanes is abandoned
            stats = reflector.shard_statistics()
            assert stats.merges_abandoned == 1
            server.faults.remove(refused)
            await wait_until(lambda: merged(reflector))
            everything = FIRST | SECOND | THIRD
            assert held(reflector.parent_store) == expected(server, everything)
            assert seen.view == {o.key: o for o in reflector.parent_store.list()}
            reflector.set_shards(SECOND)  # giving ranges up narrows the merged lane
            seen.follow(SECOND)
            assert held(reflector.parent_store) == expected(server, SECOND)
            server.create(CONFIGMAPS, cm("late"))
            await caught_up(server, reflector)
            assert held(reflector.parent_store) == expected(server, SECOND)


async def test_lanes_are_not_merged_while_the_ranges_are_not_quiet() -> None:
    async with ApiServer(bookmark_interval=0.2) as server:
        server.create(CONFIGMAPS, cm("a"))
        never = replace(FAST, lane_merge_delay=None)
        async with sharded(server, FIRST, never) as (reflector, _):
            await take(reflector, SECOND)
            assert reflector.shard_statistics().lanes == 2
            assert not reflector.shard_statistics().merging
        slow = replace(FAST, lane_merge_delay=3600.0)
        async with sharded(server, FIRST, slow) as (reflector, _):
            await take(reflector, SECOND)
            assert reflector.shard_statistics().merging  # waiting for an hour of quiet
            reflector.set_shards(FIRST)
            stats = reflector.shard_statistics()
            assert stats.lanes == 1 and stats.merges == 0 and stats.merges_abandoned == 0


async def test_with_opaque_resource_versions_lanes_stay_apart() -> None:
    async with ApiServer(personality="opaque-rv", bookmark_interval=0.2) as server:
        for i in range(10):
            server.create(CONFIGMAPS, cm(f"cm-{i}"))
        async with sharded(server, FIRST) as (reflector, _):
            await take(reflector, SECOND)
            await take(reflector, THIRD)
            stats = reflector.shard_statistics()
            assert stats.lanes == 3 and stats.merges == 0 and not stats.merging
            server.create(CONFIGMAPS, cm("late"))
            everything = FIRST | SECOND | THIRD
            await wait_until(lambda: held(reflector.parent_store) == expected(server, everything))
            assert reflector.shard_statistics().lanes == 3


async def test_metrics_count_the_merges_and_show_one_lane() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from informer.metrics import register_metrics

    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(10):
            server.create(CONFIGMAPS, cm(f"cm-{i}"))
        async with running_informer(server, shards=FIRST, lane_merge_delay=0.0) as inf:
            inf.set_shards(FIRST | SECOND)
            await inf.wait_for_shards(timeout=10)
            await wait_until(lambda: merged(inf.reflector))  # type: ignore[arg-type]
            registry = CollectorRegistry()
            register_metrics(inf, registry=registry)
            text = generate_latest(registry).decode()
    lines = {line.split("{")[0]: line for line in text.splitlines() if not line.startswith("#")}
    assert lines["informer_shard_lanes"].endswith(" 1.0")
    assert lines["informer_shard_lane_merges_total"].endswith(" 1.0")


SLICES = ShardRange.split(8)
FAULTS: list[dict[str, Any] | None] = [
    None,  # every open watch cut
    {"verb": "watch", "status": 410, "reason": "Expired", "message": "too old", "times": 1},
    {"verb": "list", "status": 500, "times": 1},
    {"verb": "list", "status": 429, "retry_after": 0, "times": 1},
    {"verb": "list", "page": 2, "status": 410, "reason": "Expired", "message": "gone", "times": 1},
    {"verb": "list", "page": 1, "list_lag": 5, "times": 1},  # a list served 5 revisions old
    {"verb": "watch", "status": 503, "times": 1},
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [1, 2])
async def test_merges_under_random_schedules_keep_the_history_and_the_ranges(
    mode: str, seed: int
) -> None:
    """Ranges taken and given up at random (merges started, abandoned, finished in between),
    objects written, recreated and deleted, watches cut, lists failed or served old."""
    await random_schedule(mode, seed)


@pytest.mark.soak
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", range(3, 3 + int(os.environ.get("LANE_MERGE_SCHEDULES", "60"))))
async def test_merges_under_random_schedules_keep_the_history_and_the_ranges_soak(
    mode: str, seed: int
) -> None:
    await random_schedule(mode, seed)


async def random_schedule(mode: str, seed: int) -> ShardStats:
    rng = random.Random(seed)
    names = [f"cm-{i}" for i in range(24)]
    async with ApiServer(bookmark_interval=0.1, shard_selectors=mode) as server:
        for name in names[:16]:
            server.create(CONFIGMAPS, cm(name))
        first = ShardSet([rng.choice(SLICES)])
        async with sharded(server, first, replace(MERGE_AT_ONCE, page_size=3)) as (r, seen):
            for _ in range(40):
                roll = rng.random()
                if roll < 0.25:
                    shards = r.shards
                    for piece in map(ShardSet, ([s] for s in SLICES)):
                        if rng.random() < 0.25:  # taken if not held, given up if held
                            shards = shards - piece if piece.issubset(shards) else shards | piece
                    r.set_shards(shards)
                    seen.follow(shards)
                    if rng.random() < 0.5:
                        async with asyncio.timeout(10):
                            await r.lanes_synced.wait()
                elif roll < 0.35:
                    fault = rng.choice(FAULTS)
                    if fault is None:
                        server.disrupt_watches(Fault(close_after_events=0))
                    else:
                        server.faults.add(Fault(**fault))
                else:
                    name = rng.choice(names)
                    if server.get(CONFIGMAPS, name, "default") is None:
                        server.create(CONFIGMAPS, cm(name))
                    elif rng.random() < 0.4:
                        server.delete(CONFIGMAPS, name, "default")
                    else:
                        server.patch(
                            CONFIGMAPS, name, {"data": {"k": str(rng.random())}}, "default"
                        )
                if rng.random() < 0.2:  # the lanes and merges run between steps, or not
                    await caught_up(server, r)
                for obj in r.parent_store.list():
                    assert r.shards.contains(hash_value(obj.uid)), obj.key
                assert seen.violations == []
            async with asyncio.timeout(10):
                await r.lanes_synced.wait()
            await wait_until(lambda: merged(r, 0))
            await caught_up(server, r)
            assert held(r.parent_store) == expected(server, r.shards)
            assert seen.view == {o.key: o for o in r.parent_store.list()}
            return r.shard_statistics()


async def test_lanes_are_merged_only_while_their_union_fits_one_selector() -> None:
    """A merged lane holds at most MAX_MERGED_RANGES disjoint ranges (a selector's size is
    limited): lanes whose union would hold more stay apart."""
    from informer.reflector._sharded import MAX_MERGED_RANGES

    tiny = ShardRange.split(512)
    a = ShardSet(tiny[i] for i in range(0, 160, 4))  # 40 disjoint ranges
    b = ShardSet(tiny[i] for i in range(2, 160, 4))  # 40 more, none adjacent to a's
    c = ShardSet(tiny[i] for i in range(200, 220, 2))  # 10 more
    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(30):
            server.create(CONFIGMAPS, cm(f"cm-{i}"))
        async with sharded(server, a) as (reflector, seen):
            await take(reflector, b)
            await take(reflector, c)
            await wait_until(lambda: reflector.shard_statistics().merges == 1)
            await wait_until(lambda: not reflector.shard_statistics().merging)
            stats = reflector.shard_statistics()
            assert stats.lanes == 2  # a and c merged (50 ranges); b with them would be 90
            assert sorted(len(p.shards) for p in reflector.parent_store.partitions) == [40, 50]
            await caught_up(server, reflector)
            assert held(reflector.parent_store) == expected(server, a | b | c)
            assert seen.view == {o.key: o for o in reflector.parent_store.list()}
    sent = [selector_of(r) for r in server.requests if r.verb in ("list", "watch")]
    assert max(len(s) for s in sent if s is not None) <= MAX_MERGED_RANGES
