"""The cache-freshness API: resolved by events and bookmarks, typed timeouts, nothing unseen."""

from __future__ import annotations

import asyncio

import pytest
from conftest import cm, running_informer, three_then_backup_then_three, wait_until
from kubernetes_asyncio import client as k8s

from informer.errors import StaleCacheError
from informer.resource import CONFIGMAPS, SECRETS
from informer.store import CacheWentBackwards
from informer.testing import ApiServer


async def test_wait_resolved_by_an_event() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = server.create(CONFIGMAPS, cm("a"))
            rv = made["metadata"]["resourceVersion"]
            assert not inf.store.is_fresh(rv)
            await inf.wait_for_resource_version(rv, timeout=10)
            assert inf.store.is_fresh(rv)
            assert inf.store.get("a", "default") is not None


async def test_wait_resolved_by_a_bookmark() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server, namespace="mine") as inf:
            await server.wait_for_watchers(1)
            # a write elsewhere: this watch sees no event, only a bookmark can tell it caught up
            other = server.create(CONFIGMAPS, cm("x", "other"))
            rv = other["metadata"]["resourceVersion"]
            waiter = asyncio.create_task(inf.wait_for_resource_version(rv, timeout=10))
            await asyncio.sleep(0)
            assert not waiter.done()
            assert server.send_bookmarks(force=True) == 1
            await waiter
            stats = inf.statistics()
            assert stats.bookmarks >= 1 and stats.events_applied == 0
            assert stats.cache_resource_version == rv
            freshness = inf.store.freshness()
            assert freshness.resource_version == rv and freshness.seconds_since_progress is not None


async def test_wait_times_out_with_typed_error() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server) as inf:
            cache_rv = inf.store.resource_version
            wanted = str(int(cache_rv) + 100)
            with pytest.raises(StaleCacheError) as err:
                await inf.wait_for_resource_version(wanted, timeout=0.01)
            assert err.value.cache_rv == cache_rv and err.value.wanted_rv == wanted


async def test_quiet_resource_gets_no_bookmark_and_claims_no_freshness() -> None:
    # real servers send bookmarks only after an event newer than the watch's start RV
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server, namespace="mine") as inf:
            await server.wait_for_watchers(1)
            # a write to another resource: configmaps stay quiet, so the quirk holds bookmarks back
            other = server.create(SECRETS, {"metadata": {"name": "s", "namespace": "mine"}})
            assert server.send_bookmarks() == 1
            rv = other["metadata"]["resourceVersion"]
            with pytest.raises(StaleCacheError):
                await inf.wait_for_resource_version(rv, timeout=0.05)
            assert not inf.store.is_fresh(rv)


async def test_read_your_own_writes() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server) as inf:
            made = server.create(CONFIGMAPS, cm("a"))
            cached = await inf.wait_for_write(made, timeout=10)
            assert cached is not None and cached.uid == made["metadata"]["uid"]
            patched = server.patch(CONFIGMAPS, "a", {"data": {"k": "v2"}}, namespace="default")
            cached = await inf.wait_for_write(patched, timeout=10)
            assert cached is not None and cached["data"] == {"k": "v2"}
            gone = server.delete(CONFIGMAPS, "a", namespace="default")
            await inf.wait_for_deletion(gone, timeout=10)
            assert inf.store.get("a", "default") is None


async def test_many_waiters_resolve_in_order() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = [server.create(CONFIGMAPS, cm(f"c{i}")) for i in range(20)]
            rvs = [m["metadata"]["resourceVersion"] for m in made]
            await asyncio.gather(*(inf.wait_for_resource_version(rv, timeout=10) for rv in rvs))
            assert inf.store.resource_version == rvs[-1]


async def test_wait_for_deletion_accepts_the_status_a_delete_returns() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        made = server.create(CONFIGMAPS, cm("a", "ns1"))
        async with running_informer(server, namespace="ns1") as inf:
            await inf.wait_for_write(made, timeout=10)
            server.delete(CONFIGMAPS, "a", namespace="ns1")
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {"name": "a", "kind": "configmaps", "uid": made["metadata"]["uid"]},
            }
            await inf.wait_for_deletion(status, timeout=10)
            assert inf.store.get("a", "ns1") is None


async def test_wait_for_deletion_waits_until_the_cache_has_seen_the_delete() -> None:
    # Read-your-writes for a delete: when wait_for_deletion returns, the cache must have caught up
    # to the delete. Here the cache has not even seen the create yet: it returns at once, and the
    # object then appears in the cache (ADDED) after the caller was told it is gone.
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            server.create(CONFIGMAPS, cm("a"))
            deleted = server.delete(CONFIGMAPS, "a", namespace="default")
            await inf.wait_for_deletion(deleted, timeout=10)
            assert inf.store.is_fresh(deleted["metadata"]["resourceVersion"]), (
                f"returned with cache RV {inf.store.resource_version}, delete at "
                f"{deleted['metadata']['resourceVersion']}"
            )


async def test_wait_above_a_restored_cache_rv_fails_with_cache_went_backwards() -> None:
    # The cache relists at an older RV (etcd restore): an RV of the lost timeline will be reused by
    # other writes, so a pending wait for it must not hang, nor later claim it was reached.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        backup = three_then_backup_then_three(server)
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


async def test_wait_for_deletion_by_status_waits_for_the_uid_in_all_namespaces() -> None:
    # The Status a DELETE answers names the object and its uid, not its namespace: the wait
    # identifies the object by uid, so an all-namespaces cache still holding it is not "gone".
    async with ApiServer(too_large_wait=0.01) as server:
        made = server.create(CONFIGMAPS, cm("a", "ns1"))
        server.create(CONFIGMAPS, cm("a", "ns2"))  # same name, other uid: must not matter
        async with running_informer(server) as inf:  # all namespaces
            await inf.wait_for_write(made, timeout=10)
            await inf.stop()  # the cache keeps "ns1/a" until the informer runs again
            api = server.api_client()
            try:
                status = await k8s.CoreV1Api(api).delete_namespaced_config_map("a", "ns1")
            finally:
                await api.close()
            assert status.kind == "Status" and status.details.uid == made["metadata"]["uid"]
            waiter = asyncio.create_task(inf.wait_for_deletion(status, timeout=10))
            await asyncio.sleep(0)  # a yield: the wait looks at the cache and registers
            assert not waiter.done(), "reported gone while the cache holds that uid"
            inf.start()
            await waiter
            assert inf.store.get("a", "ns1") is None
            assert inf.store.get("a", "ns2") is not None
