"""Lane merges at their edges, through real HTTP: the merged lane's watch expiring at once with
its relists served older than what the old lanes had seen, and the reflector stopped while a
merge lists aside (nothing of it left running)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import pytest

from informer import Compression
from informer.reflector import ShardedReflector
from informer.resource import CONFIGMAPS
from informer.store import Delta, Store
from informer.testing import ApiServer, Fault, RecordedRequest
from informer.transforms import DropFields
from informer.transport import Transport
from tests.conftest import cm, wait_until
from tests.test_sharded_lane_merge import (
    FIRST,
    MERGE_AT_ONCE,
    MODES,
    SECOND,
    Recorded,
    caught_up,
    expected,
    held,
    merged,
    selector_of,
    sharded,
    take,
)


@pytest.mark.parametrize("mode", MODES)
async def test_an_expired_merged_watch_relisting_older_than_the_lanes_loses_and_repeats_nothing(
    mode: str,
) -> None:
    async with ApiServer(bookmark_interval=0.2, shard_selectors=mode) as server:
        for i in range(20):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        union = FIRST | SECOND

        def of_the_union(r: RecordedRequest) -> bool:
            return selector_of(r) == union or (mode != "on" and r.verb == "watch")

        async with sharded(server, FIRST) as (reflector, seen):
            for i in range(20):
                if i % 4 == 0:
                    server.delete(CONFIGMAPS, f"cm-{i:03}", "default")
                else:
                    server.patch(CONFIGMAPS, f"cm-{i:03}", {"data": {"k": "2"}}, "default")
            await caught_up(server, reflector)
            # every list of the union is 25 revisions old, and its first watch expires at once
            server.faults.add(
                Fault(verb="list", page=1, predicate=of_the_union, list_lag=25, times=None)
            )
            server.faults.add(Fault(verb="watch", predicate=of_the_union, status=410, times=2))
            await take(reflector, SECOND)
            await wait_until(lambda: merged(reflector))
            server.delete(CONFIGMAPS, "cm-001", "default")
            server.create(CONFIGMAPS, cm("after"))
            await caught_up(server, reflector)
            assert held(reflector.parent_store) == expected(server, union)
            assert seen.view == {o.key: o for o in reflector.parent_store.list()}


async def test_a_reflector_stopped_while_a_merge_lists_leaves_no_task_and_no_watch() -> None:
    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(10):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        union = FIRST | SECOND

        def of_the_merge(r: RecordedRequest) -> bool:
            return r.verb == "list" and selector_of(r) == union

        server.faults.add(Fault(predicate=of_the_merge, answer_latency=30, times=None))
        api = server.api_client()
        seen = Recorded()
        reflector = ShardedReflector(
            Transport(api),
            CONFIGMAPS,
            Store(),
            shards=FIRST,
            options=MERGE_AT_ONCE,
            on_deltas=seen,
        )
        before = set(asyncio.all_tasks())
        task = asyncio.create_task(reflector.run())
        try:
            async with asyncio.timeout(10):
                await reflector.lanes_synced.wait()
            await take(reflector, SECOND)
            await server.wait_for_requests(of_the_merge, timeout=10)
            assert reflector.shard_statistics().merging
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await api.close()
        left = [t for t in asyncio.all_tasks() - before if not t.done()]
        left = [t for t in left if t is not asyncio.current_task()]
        assert [t.get_name() for t in left if t.get_name().startswith("reflector")] == []
        assert seen.violations == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_merge_keeps_the_label_selector_the_trim_and_the_compression(mode: str) -> None:
    small = Compression(min_objects=4, train_objects=16, batch=5, in_thread=False)
    options = replace(MERGE_AT_ONCE, compression=small, transform=DropFields("data"))
    async with ApiServer(bookmark_interval=0.2, shard_selectors=mode) as server:
        for i in range(40):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}", app="x" if i % 2 else "y"))
        union = FIRST | SECOND
        api = server.api_client()
        seen = Recorded()
        store = Store(compression=small)
        reflector = ShardedReflector(
            Transport(api),
            CONFIGMAPS,
            store,
            shards=FIRST,
            options=options,
            label_selector="app=x",
            on_deltas=seen,
        )
        task = asyncio.create_task(reflector.run())
        try:
            async with asyncio.timeout(10):
                await reflector.lanes_synced.wait()
            await take(reflector, SECOND)
            await wait_until(lambda: merged(reflector))
            server.patch(CONFIGMAPS, "cm-001", {"data": {"k": "2"}}, "default")
            server.create(CONFIGMAPS, cm("late-x", app="x"))
            server.create(CONFIGMAPS, cm("late-y", app="y"))
            await caught_up(server, reflector)
            want = {
                k: rv
                for k, rv in expected(server, union).items()
                if server.get(CONFIGMAPS, k.split("/")[1], "default")["metadata"]["labels"]["app"]
                == "x"
            }
            assert held(store) == want
            assert seen.view == {o.key: o for o in store.list()}
            assert all("data" not in o for o in store.list())
            await store.compact()
            assert all(o.compressed for o in store.list())
            assert seen.violations == []
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await api.close()


@pytest.mark.parametrize("mode", MODES)
async def test_the_store_never_claims_an_rv_before_holding_every_change_up_to_it_across_a_merge(
    mode: str,
) -> None:
    async with ApiServer(bookmark_interval=0.2, shard_selectors=mode) as server:
        for i in range(30):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        union = FIRST | SECOND

        def of_the_union(r: RecordedRequest) -> bool:
            return r.verb == "list" and r.page == 1 and selector_of(r) == union

        async with sharded(server, FIRST) as (reflector, seen):
            await server.wait_for_requests(lambda r: r.verb == "watch", timeout=10)
            server.disrupt_watches(Fault(stall=30))  # the first lane misses what follows
            for i in range(30):
                if i % 3 == 0:
                    server.delete(CONFIGMAPS, f"cm-{i:03}", "default")
                else:
                    server.patch(CONFIGMAPS, f"cm-{i:03}", {"data": {"k": "2"}}, "default")
            written = server.revision
            server.faults.add(Fault(predicate=of_the_union, list_lag=5, times=None))
            store = reflector.parent_store
            waiter = asyncio.create_task(store.wait_for_resource_version(str(written), timeout=10))
            reflector.set_shards(reflector.shards | SECOND)
            claims = 0
            async with asyncio.timeout(10):
                while not (merged(reflector) and waiter.done()):
                    rv = store.resource_version
                    if rv and int(rv) >= written:  # it claims every change up to `written`
                        claims += 1
                        assert held(store) == expected(server, reflector.shards)
                    await asyncio.sleep(0)
            await waiter
            assert claims > 0
            assert held(store) == expected(server, union)
            assert seen.view == {o.key: o for o in store.list()}


@pytest.mark.parametrize("mode", MODES)
async def test_objects_recreated_across_ranges_one_behind_and_one_ahead_of_the_merge_list(
    mode: str,
) -> None:
    async with ApiServer(bookmark_interval=0.2, shard_selectors=mode) as server:
        names = [f"re-{i:02}" for i in range(24)]
        for name in names:
            server.create(CONFIGMAPS, cm(name))
        union = FIRST | SECOND

        def of_the_union(r: RecordedRequest) -> bool:
            return r.verb == "list" and r.page == 1 and selector_of(r) == union

        async with sharded(server, FIRST) as (reflector, seen):
            await server.wait_for_requests(lambda r: r.verb == "watch", timeout=10)
            server.disrupt_watches(Fault(stall=30))  # the first lane stays behind
            for round_ in range(3):  # each name recreated: a new uid, most often another range
                for name in names[round_::2]:
                    server.delete(CONFIGMAPS, name, "default")
                    server.create(CONFIGMAPS, cm(name))
            # the second lane lists now; the merge's list is 4 revisions older than that
            server.faults.add(Fault(predicate=of_the_union, list_lag=4, times=None))
            await take(reflector, SECOND)
            await wait_until(lambda: merged(reflector))
            assert seen.violations == []
            assert seen.view == {o.key: o for o in reflector.parent_store.list()}
            await caught_up(server, reflector)
            assert held(reflector.parent_store) == expected(server, union)
            assert seen.view == {o.key: o for o in reflector.parent_store.list()}


async def test_a_handler_raising_on_the_merge_deltas_does_not_stop_the_merged_lane() -> None:
    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(40):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        union = FIRST | SECOND
        async with sharded(server, FIRST) as (reflector, seen):
            await server.wait_for_requests(lambda r: r.verb == "watch", timeout=10)
            server.disrupt_watches(Fault(stall=30))  # the merge brings what this lane missed
            for i in range(40):
                server.patch(CONFIGMAPS, f"cm-{i:03}", {"data": {"k": "2"}}, "default")
            record = reflector.on_deltas
            assert record is not None
            raised: list[int] = []

            def failing(deltas: list[Delta]) -> None:
                record(deltas)
                raised.append(len(deltas))
                raise RuntimeError("a handler failed")  # every time: the merge's deltas too

            reflector.on_deltas = failing
            await take(reflector, SECOND)
            await wait_until(lambda: merged(reflector))
            for i in range(64):  # until one lands in the union (each: one chance in two)
                server.create(CONFIGMAPS, cm(f"after-{i}"))
                if any(k.startswith("default/after-") for k in expected(server, union)):
                    break
            await caught_up(server, reflector)
            assert len(raised) >= 3  # the second lane's list, the merge's changes, an "after-"
            # (40 objects: a quarter of the hash space holds none of them once in 10^5 runs)
            assert held(reflector.parent_store) == expected(server, union)
            assert seen.view == {o.key: o for o in reflector.parent_store.list()}
            assert reflector.statistics().errors >= 1
