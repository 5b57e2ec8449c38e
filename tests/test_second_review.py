"""Second review: races, lifecycle, statistics, waiters across a restore, index consistency, logs.

Each test shows a bug found in the second review (it failed before its fix). Waits are on events
or counters; ``asyncio.timeout`` only bounds a hang, nothing asserts timing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from conftest import cm, running_informer, wait_until
from structlog.testing import capture_logs

from informer.errors import StaleCacheError
from informer.objects import KubeObject
from informer.resource import CONFIGMAPS
from informer.store import CacheWentBackwards, Store
from informer.testing import ApiServer, Fault


# -- statistics -----------------------------------------------------------------------------------
async def test_one_restore_counts_one_backwards() -> None:
    # The probe after the watch ended finds the server behind (counted), then the consistent relist
    # comes back older as expected: that is the same restore, not a second one.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        backup = server.revision
        for i in range(3, 6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            server.restore(backup)
            await wait_until(lambda: inf.statistics().relists >= 1)
            assert inf.statistics().backwards == 1


async def test_consistent_list_410_counts_one_expired() -> None:
    # A 410 on a consistent list was counted by the list phase and again by the run loop.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=410, times=2))
        async with running_informer(server) as inf:
            stats = inf.statistics()
    assert [r.status for r in server.requests if r.verb == "list"] == [410, 410, 200]
    assert stats.expired == 2


# -- freshness waiters across a restore ----------------------------------------------------------
async def test_waiter_above_a_restored_cache_rv_gets_a_clear_outcome() -> None:
    # The cache relists at an older RV (etcd restore): an RV of the lost timeline will be reused by
    # other writes, so a pending wait for it must not hang, nor later claim it was reached.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        backup = server.revision
        for i in range(3, 6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            wanted = str(int(inf.store.resource_version) + 1)
            waiter = asyncio.create_task(inf.wait_for_resource_version(wanted))
            await asyncio.sleep(0)  # a yield: the waiter is registered
            server.restore(backup)
            await wait_until(lambda: inf.statistics().relists >= 1)
            async with asyncio.timeout(5):  # bounds a hang only
                with pytest.raises(StaleCacheError) as info:
                    await waiter
            assert info.value.wanted_rv == wanted
            assert info.value.cache_rv == inf.store.resource_version
            assert isinstance(info.value, CacheWentBackwards)
            assert "went back" in str(info.value)


# -- store indexes --------------------------------------------------------------------------------
def _obj(name: str, rv: str) -> KubeObject:
    body = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"u-{name}",
            "resourceVersion": rv,
        },
    }
    return KubeObject.from_raw(msgspec.json.encode(body))


def test_index_function_raising_midway_leaves_no_dangling_key() -> None:
    # An index function that yields a value and then raises left the key in that bucket; after
    # the object was deleted, by_index raised KeyError for every reader of that value.
    def values(obj: KubeObject) -> Any:
        yield "x"
        raise RuntimeError("broken index")

    store = Store()
    store.add_index("by-x", values)
    store.replace([], "1")
    with capture_logs():
        store.apply_event("ADDED", _obj("a", "2"))
        store.apply_event("DELETED", _obj("a", "3"))
        assert store.by_index("by-x", "x") == []
        assert store.index_values("by-x") == []
        store.replace([_obj("b", "4")], "4")
        assert store.by_index("by-x", "x") == []
        store.apply_event("DELETED", _obj("b", "5"))
        assert store.by_index("by-x", "x") == []


# -- informer lifecycle ---------------------------------------------------------------------------
async def test_run_while_running_is_refused() -> None:
    # A second run() started a second reflector on the same store; when either ended, it stopped
    # the handlers of the other one.
    async with ApiServer(too_large_wait=0.01) as server, running_informer(server) as inf:
        await server.wait_for_watchers(1)
        async with asyncio.timeout(5):  # bounds a hang only
            with pytest.raises(RuntimeError, match="already running"):
                await inf.run()
        assert server.watcher_count(CONFIGMAPS) == 1


async def test_stop_right_after_start_allows_a_new_start() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False) as inf:
            await inf.stop()  # the task never ran
            inf.start()
            await inf.wait_for_sync(timeout=10)
            assert inf.store.keys() == ["default/a"]


async def test_stop_then_start_redelivers_what_a_handler_was_interrupted_in() -> None:
    # stop() cancels a handler in the middle of a delivery: that change was taken off its queue
    # and, after a restart, never came again (the cache already holds it, so no relist delta).
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False) as inf:
            started = asyncio.Event()
            release = asyncio.Event()
            done: list[str] = []

            async def on_add(obj: Any, initial: bool) -> None:
                started.set()
                await release.wait()
                done.append(obj.name)

            handler = inf.add_handler(on_add)
            async with asyncio.timeout(10):
                await started.wait()
            await inf.stop()  # interrupts the delivery of "a"
            release.set()
            inf.start()
            async with asyncio.timeout(10):
                await handler.wait_idle()
                while not done:  # noqa: ASYNC110 - the handler appends after wait_idle's wakeup
                    await asyncio.sleep(0)
            assert done == ["a"]
