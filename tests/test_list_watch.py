"""List + watch basics: paginated consistent first list, watch from the list's RV, changes flow."""

from __future__ import annotations

from conftest import Recorder, cm, running_informer

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer


async def test_first_list_is_paginated_consistent_read_then_watch_from_list_rv() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(5):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        list_rv = server.format_resource_version(server.revision)
        async with running_informer(server) as inf:
            assert sorted(o.name for o in inf.store.list()) == [f"c{i}" for i in range(5)]
            assert inf.store.resource_version == list_rv
            watch = (await server.wait_for_requests(lambda r: r.verb == "watch"))[0]
        lists = [r for r in server.requests if r.verb == "list"]
        assert len(lists) == 3  # 5 objects, pages of 2
        first, *rest = lists
        assert first.query == {"limit": "2"}  # RV unset: a consistent read
        for page in rest:
            assert set(page.query) == {"limit", "continue"}  # only continue: no RV, no RVM
        assert watch.query["resourceVersion"] == list_rv
        assert watch.query["allowWatchBookmarks"] == "true"
        assert watch.query["watch"] == "true"
        assert int(watch.query["timeoutSeconds"]) == 30


async def test_changes_reach_handlers_and_cache() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server) as inf:
            rec = Recorder()
            rec.attach(inf)
            await rec.wait(lambda calls: len(calls) == 1)
            assert rec.calls[0][0] == "add" and rec.calls[0][2] is True  # initial
            created = server.create(CONFIGMAPS, cm("b"))
            await rec.wait(lambda calls: len(calls) == 2)
            patched = server.patch(CONFIGMAPS, "a", {"data": {"k": "new"}}, namespace="default")
            await rec.wait(lambda calls: len(calls) == 3)
            deleted = server.delete(CONFIGMAPS, "b", namespace="default")
            await inf.wait_for_resource_version(deleted["metadata"]["resourceVersion"], timeout=10)
            await rec.wait(lambda calls: len(calls) == 4)
            kinds = [c[0] for c in rec.calls]
            assert kinds == ["add", "add", "update", "delete"]
            assert rec.calls[1][1].resource_version == created["metadata"]["resourceVersion"]
            assert rec.calls[2][2]["data"] == {"k": "new"}
            assert rec.calls[2][1]["data"] == {"k": "a"}
            assert rec.calls[2][2].resource_version == patched["metadata"]["resourceVersion"]
            assert inf.store.get("a", "default")["data"]["k"] == "new"  # type: ignore[index]
            assert inf.store.get("b", "default") is None
        assert [r.verb for r in server.requests].count("list") == 1  # never relisted


async def test_any_initial_list_asks_resource_version_zero() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, initial_list="any") as inf:
            assert len(inf.store) == 1
        first = next(r for r in server.requests if r.verb == "list")
        assert first.query["resourceVersion"] == "0"


async def test_namespace_and_selectors_are_sent_on_every_request() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a", "ns1", app="x"))
        server.create(CONFIGMAPS, cm("b", "ns1", app="y"))
        server.create(CONFIGMAPS, cm("c", "ns2", app="x"))
        server.create(CONFIGMAPS, cm("d", "ns1", app="x"))
        server.create(CONFIGMAPS, cm("e", "ns1", app="x"))
        async with running_informer(server, namespace="ns1", label_selector="app=x") as inf:
            assert sorted(o.name for o in inf.store.list()) == ["a", "d", "e"]
            await server.wait_for_requests(lambda r: r.verb == "watch")
        for r in server.requests:
            if r.verb in ("list", "watch"):
                assert r.namespace == "ns1"
                assert r.query["labelSelector"] == "app=x"
