"""SharedInformerFactory through real HTTP: one informer and one list+watch per distinct key."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from informer.informer import SharedInformerFactory
from informer.resource import CONFIGMAPS, SECRETS
from informer.testing import ApiServer, Fault
from informer.transport import Transport
from tests.conftest import FAST, cm


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    async with ApiServer(too_large_wait=0.01, bookmark_interval=60.0) as srv:
        yield srv


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[Any]:
    api = server.api_client()
    try:
        yield api
    finally:
        await api.close()


def strip(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("data", None)
    return obj


def other_strip(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


def scope(r: Any) -> tuple[str, str | None, str | None]:
    return (r.resource, r.namespace, r.query.get("labelSelector"))


async def test_one_informer_and_one_list_watch_per_key(server: ApiServer, api: Any) -> None:
    server.create(CONFIGMAPS, cm("a1", "a", app="x"))
    server.create(CONFIGMAPS, cm("b1", "b"))
    server.create(SECRETS, {"metadata": {"name": "s", "namespace": "a"}})
    factory = SharedInformerFactory(Transport(api), options=FAST)
    everything = factory.informer(CONFIGMAPS)
    assert factory.informer(CONFIGMAPS) is everything
    in_a = factory.informer(CONFIGMAPS, namespace="a")
    assert factory.informer(CONFIGMAPS, namespace="a") is in_a
    labelled = factory.informer(CONFIGMAPS, label_selector="app=x")
    assert factory.informer(CONFIGMAPS, label_selector="app=x") is labelled
    stripped = factory.informer(CONFIGMAPS, transform=strip)
    assert factory.informer(CONFIGMAPS, transform=strip) is stripped
    assert factory.informer(CONFIGMAPS, transform=other_strip) is not stripped
    secrets = factory.informer(SECRETS)
    distinct = {id(i) for i in (everything, in_a, labelled, stripped, secrets)}
    assert len(distinct) == 5 and len(factory.informers) == 6
    async with factory:
        await factory.wait_for_sync(timeout=5)
        assert all(inf.has_synced for inf in factory.informers)
        await server.wait_for_watchers(6)
        assert sorted(everything.store.keys()) == ["a/a1", "b/b1"]
        assert sorted(in_a.store.keys()) == ["a/a1"]
        assert sorted(labelled.store.keys()) == ["a/a1"]
        assert [o.get("data") for o in stripped.store.list()] == [None, None]
        assert [o["data"] for o in everything.store.list()] == [{"k": "a1"}, {"k": "b1"}]
        assert sorted(secrets.store.keys()) == ["a/s"]
        # a change reaches every informer that covers it, each through its own watch
        created = server.create(CONFIGMAPS, cm("a2", "a", app="x"))
        for inf in (everything, in_a, labelled, stripped):
            assert await inf.wait_for_write(created, timeout=5) is not None
        stats = [inf.statistics() for inf in factory.informers]
    # exactly one list and one watch per informer; the two transforms share a scope, not a stream
    lists = Counter(scope(r) for r in server.requests if r.verb == "list" and r.page == 1)
    watches = Counter(scope(r) for r in server.requests if r.verb == "watch")
    expected = {
        ("configmaps", None, None): 3,  # plain, strip, other_strip
        ("configmaps", "a", None): 1,
        ("configmaps", None, "app=x"): 1,
        ("secrets", None, None): 1,
    }
    assert lists == expected
    assert watches == expected
    assert all(s.lists == 1 and s.watches == 1 and s.relists == 0 for s in stats)


async def test_informer_created_after_start_is_started(server: ApiServer, api: Any) -> None:
    server.create(SECRETS, {"metadata": {"name": "s"}})
    async with SharedInformerFactory(Transport(api), options=FAST) as factory:
        first = factory.informer(CONFIGMAPS)
        await factory.wait_for_sync(timeout=5)
        late = factory.informer(SECRETS)
        assert factory.informer(SECRETS) is late
        await factory.wait_for_sync(timeout=5)
        assert late.has_synced and first.has_synced
        assert sorted(late.store.keys()) == ["default/s"]
        await server.wait_for_watchers(1, SECRETS)
    assert [r.verb for r in server.requests if r.resource == "secrets"] == ["list", "watch"]


async def test_factory_wait_for_sync_waits_for_all(server: ApiServer, api: Any) -> None:
    fault = server.faults.add(Fault(verb="list", resource="secrets", status=500, times=None))
    async with SharedInformerFactory(Transport(api), options=FAST) as factory:
        cms = factory.informer(CONFIGMAPS)
        secrets = factory.informer(SECRETS)
        await cms.wait_for_sync(timeout=5)
        await server.wait_for_requests(
            lambda r: r.resource == "secrets" and r.status == 500, count=2
        )
        with pytest.raises(TimeoutError):
            await factory.wait_for_sync(timeout=0.05)
        assert cms.has_synced and not secrets.has_synced
        server.faults.remove(fault)
        await factory.wait_for_sync(timeout=5)
        assert secrets.has_synced
    assert len([r for r in server.requests if r.resource == "configmaps" and r.verb == "list"]) == 1


async def test_factory_stop_leaves_no_task_and_no_watch(server: ApiServer, api: Any) -> None:
    before = {
        t
        for t in asyncio.all_tasks()
        if not t.get_coro().__qualname__.startswith("RequestHandler.")  # type: ignore[union-attr]
    }
    factory = SharedInformerFactory(Transport(api), options=FAST)
    factory.informer(CONFIGMAPS)
    factory.informer(CONFIGMAPS, namespace="a")
    factory.start()
    await factory.wait_for_sync(timeout=5)
    await server.wait_for_watchers(2, CONFIGMAPS)
    await factory.stop()
    after = {
        t
        for t in asyncio.all_tasks()
        if not t.get_coro().__qualname__.startswith("RequestHandler.")  # type: ignore[union-attr]
    }
    assert after == before
    await server.wait_for_requests(lambda _: server.watcher_count(CONFIGMAPS) == 0, timeout=5)


async def test_factory_accepts_an_api_client(server: ApiServer) -> None:
    api = k8s.ApiClient(configuration=server.configuration())
    try:
        factory = SharedInformerFactory(api, options=FAST)
        async with factory:
            inf = factory.informer(CONFIGMAPS)
            await factory.wait_for_sync(timeout=5)
            assert inf.has_synced
    finally:
        await api.close()


async def test_factory_stop_then_start_resumes_and_late_informers_wait_for_start() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        api = server.api_client()
        try:
            factory = SharedInformerFactory(api, options=FAST)
            inf = factory.informer(CONFIGMAPS)
            factory.start()
            await factory.wait_for_sync(timeout=10)
            await factory.stop()
            made = server.create(CONFIGMAPS, cm("b"))
            late = factory.informer(CONFIGMAPS, namespace="default")
            assert not late.has_synced
            factory.start()
            await inf.wait_for_write(made, timeout=10)
            await factory.wait_for_sync(timeout=10)
            assert sorted(late.store.keys()) == ["default/a", "default/b"]
            await factory.stop()
        finally:
            await api.close()


async def test_none_and_empty_namespace_or_selector_are_one_scope(
    server: ApiServer, api: Any
) -> None:
    factory = SharedInformerFactory(api, options=FAST)
    everything = factory.informer(CONFIGMAPS)
    assert factory.informer(CONFIGMAPS, namespace="") is everything
    assert factory.informer(CONFIGMAPS, label_selector="", field_selector="") is everything
    in_a = factory.informer(CONFIGMAPS, namespace="a", label_selector="")
    assert factory.informer(CONFIGMAPS, namespace="a", field_selector=None) is in_a
    assert len(factory.informers) == 2
    async with factory:
        await factory.wait_for_sync(timeout=5)
        await server.wait_for_watchers(2)
    assert Counter(scope(r) for r in server.requests if r.verb == "watch") == {
        ("configmaps", None, None): 1,
        ("configmaps", "a", None): 1,
    }
