"""Informer behaviour through real HTTP against the test API server.

Handlers (sync and async), ``events()``, slow and raising handlers, late handlers, sync and
timeouts, statistics, the transform hook, wrong-kind objects, read-your-writes, logs and
cancellation. Every test asserts the server's request log as well as the client's state.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from informer._handler import _merge
from informer._log import capture_logs
from informer.informer import Informer
from informer.objects import KubeObject
from informer.resource import CONFIGMAPS, SECRETS, Resource
from informer.store import Delta, Tombstone
from informer.testing import ApiServer, Fault, RecordedRequest
from informer.transport import Transport
from tests.conftest import FAST, cm, running_informer

SECRET = "secret-token-xyz"

GONE = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "too old resource version: 1 (2)",
    "reason": "Expired",
    "code": 410,
}


# -- helpers ------------------------------------------------------------------------------------
@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    # no periodic bookmarks: the tests send them when they want them
    async with ApiServer(too_large_wait=0.01, bookmark_interval=60.0) as srv:
        yield srv


@asynccontextmanager
async def api_client(server: ApiServer, token: str | None = None) -> AsyncIterator[Any]:
    configuration = server.configuration()
    if token is not None:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    api = k8s.ApiClient(configuration=configuration)
    try:
        yield api
    finally:
        await api.close()


def requests(server: ApiServer, verb: str, resource: str = "configmaps") -> list[RecordedRequest]:
    return [r for r in server.requests if r.verb == verb and r.resource == resource]


def first_pages(server: ApiServer, resource: str = "configmaps") -> list[RecordedRequest]:
    return [r for r in requests(server, "list", resource) if r.page == 1]


def rv_of(obj: Any) -> int:
    if isinstance(obj, KubeObject):
        return int(obj.resource_version)
    return int(obj["metadata"]["resourceVersion"])


def server_rv(server: ApiServer) -> str:
    return server.format_resource_version(server.revision)


async def no_watchers(server: ApiServer, resource: Resource | str | None = None) -> None:
    """Until the server has no open watch (re-checked on every server change)."""
    await server.wait_for_requests(lambda _: server.watcher_count(resource) == 0, timeout=5)


async def bump_and_bookmark(server: ApiServer, inf: Informer) -> str:
    """Write elsewhere, then force a bookmark at that revision and wait for the cache to reach it.

    Everything the configmaps watch sent before the bookmark has then been processed.
    """
    await server.wait_for_watchers(1, CONFIGMAPS)
    server.create(SECRETS, {"metadata": {"name": f"bump-{server.revision}"}})
    rv = server_rv(server)
    assert server.send_bookmarks(CONFIGMAPS, force=True) >= 1
    await inf.wait_for_resource_version(rv, timeout=5)
    return rv


class Calls:
    """Handler calls, recordable from sync and async callables; ``await wait(pred)``."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, ...]] = []
        self._changed = asyncio.Event()

    def add(self, *call: Any) -> None:
        self.items.append(call)
        self._changed.set()

    def sync_handlers(self) -> dict[str, Any]:
        return {
            "on_add": lambda obj, initial: self.add("add", obj, initial),
            "on_update": lambda old, new: self.add("update", old, new),
            "on_delete": lambda obj: self.add("delete", obj),
        }

    def async_handlers(self) -> dict[str, Any]:
        async def on_add(obj: KubeObject, initial: bool) -> None:
            self.add("add", obj, initial)

        async def on_update(old: KubeObject, new: KubeObject) -> None:
            self.add("update", old, new)

        async def on_delete(obj: KubeObject | Tombstone) -> None:
            self.add("delete", obj)

        return {"on_add": on_add, "on_update": on_update, "on_delete": on_delete}

    async def wait(self, pred: Callable[[list[tuple[Any, ...]]], bool], timeout: float = 5) -> None:
        async with asyncio.timeout(timeout):
            while not pred(self.items):
                self._changed.clear()
                await self._changed.wait()

    async def wait_len(self, n: int) -> None:
        await self.wait(lambda items: len(items) >= n)

    def view(self) -> dict[str, int]:
        """name -> RV, as a handler that applies the calls in order would hold it."""
        out: dict[str, int] = {}
        for call in self.items:
            if call[0] == "add":
                out[call[1].name] = rv_of(call[1])
            elif call[0] == "update":
                out[call[2].name] = rv_of(call[2])
            else:
                obj = call[1].obj if isinstance(call[1], Tombstone) else call[1]
                out.pop(obj.name, None)
        return out

    def summary(self) -> list[tuple[Any, ...]]:
        """(type, name, detail): detail is is_initial for adds, (old RV, new RV) for updates."""
        out: list[tuple[Any, ...]] = []
        for call in self.items:
            if call[0] == "add":
                out.append(("add", call[1].name, call[2]))
            elif call[0] == "update":
                out.append(("update", call[2].name, (rv_of(call[1]), rv_of(call[2]))))
            else:
                obj = call[1]
                name = obj.obj.name if isinstance(obj, Tombstone) else obj.name
                out.append(("delete", name, type(obj).__name__))
        return out


# -- handlers -----------------------------------------------------------------------------------
async def test_sync_and_async_handlers_get_add_update_delete(server: ApiServer) -> None:
    a = server.create(CONFIGMAPS, cm("a"))
    server.create(CONFIGMAPS, cm("b"))
    sync_calls, async_calls = Calls(), Calls()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        inf.add_handler(**sync_calls.sync_handlers(), name="sync")
        inf.add_handler(**async_calls.async_handlers(), name="async")
        async with inf:
            await inf.wait_for_sync(timeout=5)
            list_rv = inf.statistics().cache_resource_version
            c = server.create(CONFIGMAPS, cm("c"))
            a2 = server.patch(CONFIGMAPS, "a", {"data": {"k": "a2"}}, namespace="default")
            b_gone = server.delete(CONFIGMAPS, "b", namespace="default")
            for calls in (sync_calls, async_calls):
                await calls.wait_len(5)
    expected = [
        ("add", "a", True),
        ("add", "b", True),
        ("add", "c", False),
        ("update", "a", (rv_of(a), rv_of(a2))),
        ("delete", "b", "KubeObject"),
    ]
    for calls in (sync_calls, async_calls):
        assert calls.summary() == expected
        # the objects handed over are the server's objects (read-only mappings)
        assert calls.items[2][1]["data"] == {"k": "c"}
        assert rv_of(calls.items[2][1]) == rv_of(c)
        assert calls.items[3][2]["data"] == {"k": "a2"}
        assert rv_of(calls.items[4][1]) == rv_of(b_gone)
    # one list (2 objects, page size 2: one page), one watch from the list's RV
    assert [r.query.get("resourceVersion") for r in first_pages(server)] == [None]
    watches = requests(server, "watch")
    assert len(watches) == 1
    assert watches[0].query["resourceVersion"] == list_rv
    assert watches[0].query["allowWatchBookmarks"] == "true"


async def test_handler_gets_tombstone_for_deletion_seen_only_by_relist(server: ApiServer) -> None:
    server.create(CONFIGMAPS, cm("a"))
    server.create(CONFIGMAPS, cm("b"))
    calls = Calls()
    watch_no = 0

    def delete_b_and_compact(request: RecordedRequest) -> bool:
        # runs when the second watch arrives: b goes while nobody watches, history is compacted
        nonlocal watch_no
        watch_no += 1
        if watch_no == 2:
            server.delete(CONFIGMAPS, "b", namespace="default")
            server.compact()
        return False

    server.faults.add(Fault(verb="watch", close_after_events=1, times=1))
    server.faults.add(Fault(verb="watch", predicate=delete_b_and_compact))
    async with running_informer(server) as inf:
        inf.add_handler(**calls.async_handlers())
        await calls.wait_len(2)  # the current objects, as initial adds
        server.patch(CONFIGMAPS, "a", {"data": {"k": "a2"}}, namespace="default")
        await calls.wait(lambda items: any(c[0] == "delete" for c in items))
        assert sorted(inf.store.keys()) == ["default/a"]
        stats = inf.statistics()
    assert calls.summary()[-1] == ("delete", "b", "Tombstone")
    tombstone = calls.items[-1][1]
    assert tombstone.key == "default/b" and tombstone.obj.name == "b"
    assert stats.expired == 1 and stats.relists == 1
    # the second watch got 410, the relist asked NotOlderThan the last RV, then a third watch
    lists = first_pages(server)
    assert lists[0].query.get("resourceVersion") is None  # the first sync: a consistent read
    # after the 410 the reflector relisted, not older than what it had (a probe may come first)
    assert [r.query.get("resourceVersion") for r in lists[1:]][-1] is not None
    assert lists[-1].query["resourceVersionMatch"] == "NotOlderThan"
    assert len(requests(server, "watch")) >= 2


async def test_events_iterator_yields_deltas(server: ApiServer) -> None:
    server.create(CONFIGMAPS, cm("a"))
    seen: list[Delta] = []
    got_initial = asyncio.Event()
    async with running_informer(server) as inf:

        async def consume() -> None:
            async with contextlib.aclosing(inf.events()) as events:  # type: ignore[type-var]
                async for delta in events:
                    seen.append(delta)
                    if len(seen) == 1:
                        got_initial.set()
                    if delta.type == "deleted":
                        return

        consumer = asyncio.create_task(consume())
        async with asyncio.timeout(5):
            await got_initial.wait()
        server.create(CONFIGMAPS, cm("b"))
        server.patch(CONFIGMAPS, "b", {"data": {"k": "b2"}}, namespace="default")
        await inf.wait_for_write(server.delete(CONFIGMAPS, "a", namespace="default"), timeout=5)
        async with asyncio.timeout(5):
            await consumer
        # the generator's handler is gone with it: no handler task left for it
        assert not [t for t in asyncio.all_tasks() if "events" in t.get_name()]
    assert [(d.type, d.obj.name if isinstance(d.obj, KubeObject) else None) for d in seen] in (
        [("added", "a"), ("added", "b"), ("updated", "b"), ("deleted", "a")],
        # the consumer may fall behind: b's add and update coalesce into one add of the newest
        [("added", "a"), ("added", "b"), ("deleted", "a")],
    )
    assert seen[0].is_initial is True
    assert seen[1].is_initial is False
    b_last = [d.obj for d in seen if isinstance(d.obj, KubeObject) and d.obj.name == "b"][-1]
    assert b_last["data"] == {"k": "b2"}


async def test_events_iterator_consumer_that_falls_behind_gets_coalesced_state(
    server: ApiServer,
) -> None:
    async with running_informer(server) as inf:
        events = inf.events()
        first = asyncio.ensure_future(anext(events))
        server.create(CONFIGMAPS, cm("a"))
        delta = await asyncio.wait_for(first, 5)
        assert (delta.type, delta.obj.name) == ("added", "a")  # type: ignore[union-attr]
        # nobody reads now: three more changes of b, and a's removal
        server.create(CONFIGMAPS, cm("b"))
        server.patch(CONFIGMAPS, "b", {"data": {"k": "b2"}}, namespace="default")
        last = server.patch(CONFIGMAPS, "b", {"data": {"k": "b3"}}, namespace="default")
        await inf.wait_for_write(last, timeout=5)
        await inf.wait_for_deletion(server.delete(CONFIGMAPS, "a", namespace="default"), timeout=5)
        rest: list[Delta] = []
        async with asyncio.timeout(5):
            while len(rest) < 4:  # until a's removal: b's changes arrive coalesced before it
                rest.append(await anext(events))
                if rest[-1].type == "deleted":
                    break
        await events.aclose()  # type: ignore[attr-defined]
    kinds = [(d.type, d.obj.name, d.obj.get("data")) for d in rest]  # type: ignore[union-attr]
    # at most one delta per key is pending; b's last state arrives; a ends deleted
    assert ("deleted", "a", {"k": "a"}) == kinds[-1]
    assert len(rest) <= 3  # b: at most one in flight and one coalesced pending entry
    b_deltas = [k for k in kinds if k[1] == "b"]
    assert b_deltas and b_deltas[-1][2] == {"k": "b3"}


async def test_slow_handler_blocks_neither_reflector_nor_other_handlers(server: ApiServer) -> None:
    blocker0 = server.create(CONFIGMAPS, cm("blocker"))
    server.create(CONFIGMAPS, cm("w"))
    slow_calls, fast_calls = Calls(), Calls()
    gate, entered = asyncio.Event(), asyncio.Event()
    armed = False

    async def slow_add(obj: KubeObject, initial: bool) -> None:
        slow_calls.add("add", obj, initial)

    async def slow_update(old: KubeObject, new: KubeObject) -> None:
        slow_calls.add("update", old, new)
        if armed and not gate.is_set():
            entered.set()
            await gate.wait()

    async def slow_delete(obj: KubeObject | Tombstone) -> None:
        slow_calls.add("delete", obj)

    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        slow = inf.add_handler(slow_add, slow_update, slow_delete, name="slow")
        inf.add_handler(**fast_calls.async_handlers(), name="fast")
        async with inf:
            await inf.wait_for_sync(timeout=5)
            await slow.wait_idle()
            assert slow_calls.summary() == [("add", "blocker", True), ("add", "w", True)]
            armed = True
            blocker1 = server.patch(
                CONFIGMAPS, "blocker", {"data": {"k": "1"}}, namespace="default"
            )
            async with asyncio.timeout(5):
                await entered.wait()  # the slow handler is now stuck in on_update(blocker)
            server.create(CONFIGMAPS, cm("y"))
            y2 = server.patch(CONFIGMAPS, "y", {"data": {"k": "y2"}}, namespace="default")
            server.patch(CONFIGMAPS, "w", {"data": {"k": "w1"}}, namespace="default")
            w_gone = server.delete(CONFIGMAPS, "w", namespace="default")
            blocker2 = server.patch(
                CONFIGMAPS, "blocker", {"data": {"k": "2"}}, namespace="default"
            )
            # the store and the other handler keep up while the slow one is blocked
            cached = await inf.wait_for_write(blocker2, timeout=5)
            assert cached is not None and cached["data"] == {"k": "2"}
            cache_view = {o.name: rv_of(o) for o in inf.store.list()}
            assert cache_view == {"blocker": rv_of(blocker2), "y": rv_of(y2)}
            await fast_calls.wait(lambda _: fast_calls.view() == cache_view)
            # (it may see the changes one by one or coalesced, depending on how they were read)
            assert fast_calls.summary()[2] == (
                "update",
                "blocker",
                (rv_of(blocker0), rv_of(blocker1)),
            )
            assert ("delete", "w", "KubeObject") in fast_calls.summary()
            assert sorted(inf.store.keys()) == ["default/blocker", "default/y"]
            assert len(slow_calls.items) == 3
            stats = slow.statistics()
            assert stats.pending == 3  # y (one add), w (one delete), blocker (one update)
            assert stats.coalesced == 2
            assert inf.statistics().events_applied == 6
            gate.set()
            async with asyncio.timeout(5):
                await slow.wait_idle()
            after = slow_calls.summary()[3:]
            assert slow_calls.view() == cache_view
    assert sorted(after) == sorted(
        [
            ("add", "y", False),  # added + updated -> one add of the newest
            ("delete", "w", "KubeObject"),  # updated + deleted -> delete
            ("update", "blocker", (rv_of(blocker1), rv_of(blocker2))),
        ]
    )
    y_add = next(c for c in slow_calls.items[3:] if c[0] == "add")
    assert rv_of(y_add[1]) == rv_of(y2) and y_add[1]["data"] == {"k": "y2"}
    w_del = next(c for c in slow_calls.items[3:] if c[0] == "delete")
    assert rv_of(w_del[1]) == rv_of(w_gone)
    # the reflector never stalled: one list, one watch for everything
    assert len(first_pages(server)) == 1
    assert len(requests(server, "watch")) == 1


async def test_raising_handler_is_logged_counted_and_keeps_receiving(server: ApiServer) -> None:
    calls = Calls()

    def on_add(obj: KubeObject, initial: bool) -> None:
        calls.add("add", obj, initial)
        if obj.name == "bad":
            raise RuntimeError("boom")

    with capture_logs() as logs:
        async with running_informer(server) as inf:
            handler = inf.add_handler(on_add, name="fragile")
            server.create(CONFIGMAPS, cm("bad"))
            server.create(CONFIGMAPS, cm("good"))
            await calls.wait_len(2)
            await handler.wait_idle()
            stats = handler.statistics()
    assert calls.summary() == [("add", "bad", False), ("add", "good", False)]
    assert stats.errors == 1 and stats.delivered == 2 and stats.pending == 0
    failed = [e for e in logs if e["event"] == "informer.handler_failed"]
    assert len(failed) == 1
    assert failed[0]["handler"] == "fragile" and failed[0]["log_level"] == "error"
    assert failed[0]["error"] == "RuntimeError" and "in on_add" in failed[0]["frames"]
    assert len(requests(server, "watch")) == 1  # the failure did not disturb the watch


async def test_raising_async_handler_is_counted(server: ApiServer) -> None:
    calls = Calls()

    async def on_update(old: KubeObject, new: KubeObject) -> None:
        calls.add("update", old, new)
        if new["data"] == {"k": "1"}:
            raise ValueError("async boom")

    server.create(CONFIGMAPS, cm("a"))
    async with running_informer(server) as inf:
        handler = inf.add_handler(on_update=on_update)
        server.patch(CONFIGMAPS, "a", {"data": {"k": "1"}}, namespace="default")
        await calls.wait_len(1)
        server.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
        await calls.wait_len(2)
        await handler.wait_idle()
        assert handler.statistics().errors == 1
    assert [c[2]["data"] for c in calls.items] == [{"k": "1"}, {"k": "2"}]


async def test_handler_added_after_sync_first_gets_current_objects(server: ApiServer) -> None:
    server.create(CONFIGMAPS, cm("a"))
    server.create(CONFIGMAPS, cm("b"))
    server.create(CONFIGMAPS, cm("c"))
    async with running_informer(server) as inf:
        assert inf.has_synced
        late = Calls()
        inf.add_handler(**late.sync_handlers())
        await late.wait_len(3)
        server.create(CONFIGMAPS, cm("d"))
        await late.wait_len(4)
    assert sorted(late.summary()[:3]) == [("add", n, True) for n in "abc"]
    assert late.summary()[3] == ("add", "d", False)
    # registering a handler costs no request: still one list (two pages of 2) and one watch
    assert len(first_pages(server)) == 1
    assert len(requests(server, "list")) == 2
    assert len(requests(server, "watch")) == 1


async def test_handler_added_before_start_gets_initial_adds_from_the_list(
    server: ApiServer,
) -> None:
    server.create(CONFIGMAPS, cm("a"))
    calls = Calls()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        inf.add_handler(**calls.sync_handlers())
        assert not inf.has_synced
        async with inf:
            await inf.wait_for_sync(timeout=5)
            await calls.wait_len(1)
    assert calls.summary() == [("add", "a", True)]


# -- sync -----------------------------------------------------------------------------------------
async def test_wait_for_sync_times_out_while_every_list_fails(server: ApiServer) -> None:
    server.create(CONFIGMAPS, cm("a"))
    fault = server.faults.add(Fault(verb="list", status=500, times=None))
    async with running_informer(server, sync=False) as inf:
        await server.wait_for_requests(lambda r: r.verb == "list" and r.status == 500, count=3)
        with pytest.raises(TimeoutError):
            await inf.wait_for_sync(timeout=0.05)
        assert not inf.has_synced
        stats = inf.statistics()
        assert (
            not stats.synced
            and stats.errors + stats.page_retries >= 3
            and stats.cache_resource_version == ""
        )
        assert len(inf.store) == 0
        assert requests(server, "watch") == []  # never watches without a list
        server.faults.remove(fault)
        await inf.wait_for_sync(timeout=5)
        assert inf.has_synced and inf.statistics().synced
        assert sorted(inf.store.keys()) == ["default/a"]
    assert all(r.status == 500 for r in requests(server, "list")[:-1])
    assert requests(server, "list")[-1].status == 200


# -- statistics -----------------------------------------------------------------------------------
async def test_statistics_match_what_happened(server: ApiServer) -> None:
    for name in "abc":
        server.create(CONFIGMAPS, cm(name))
    server.faults.add(Fault(verb="watch", error_event=GONE, times=1))  # watch 1: 410 at once
    server.faults.add(Fault(verb="watch", nth=2, replay_stale=True, after_events=2, times=1))
    async with running_informer(server) as inf:
        stats = inf.statistics()
        with pytest.raises(dataclasses.FrozenInstanceError):
            stats.lists = 99  # type: ignore[misc]
        await server.wait_for_requests(lambda r: r.verb == "watch" and r.status == 200, count=2)
        first = server.patch(CONFIGMAPS, "a", {"data": {"k": "1"}}, namespace="default")
        second = server.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
        await inf.wait_for_write(second, timeout=5)
        bookmark_rv = await bump_and_bookmark(server, inf)
        stats = inf.statistics()
    assert stats.synced is True and stats.comparable is True
    assert stats.lists == 2 and stats.relists == 1 and stats.list_pages == 4
    assert stats.watches == 2
    assert stats.expired == 1
    assert stats.events_applied == 2
    assert stats.stale_events_dropped == 1  # the replay of a at `first`'s RV
    assert stats.duplicate_events_dropped == 0
    assert stats.bookmarks == 1
    assert stats.wrong_kind_ignored == 0 and stats.errors == 0
    assert stats.cache_resource_version == bookmark_rv
    assert rv_of(first) < rv_of(second) < int(bookmark_rv)
    # the server saw the same story
    lists = first_pages(server)
    assert [r.query.get("resourceVersionMatch") for r in lists] == [None, "NotOlderThan"]
    watches = requests(server, "watch")
    assert len(watches) == 2
    assert watches[0].fault is not None and watches[1].fault is not None


# -- transform ----------------------------------------------------------------------------------
def managed(name: str) -> dict[str, Any]:
    body = cm(name)
    body["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Apply"}]
    return body


def drop_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].pop("managedFields", None)
    return obj


async def test_transform_applies_to_listed_and_watched_objects(server: ApiServer) -> None:
    server.create(CONFIGMAPS, managed("listed"))
    calls = Calls()
    async with running_informer(server, transform=drop_managed_fields) as inf:
        inf.add_handler(**calls.sync_handlers())
        await calls.wait_len(1)
        watched = server.create(CONFIGMAPS, managed("watched"))
        cached = await inf.wait_for_write(watched, timeout=5)
        await calls.wait_len(2)
        stats = inf.statistics()
        listed = inf.store.get("listed", "default")
    assert "managedFields" in server.get(CONFIGMAPS, "watched", "default")["metadata"]  # type: ignore[index]
    assert listed is not None and "managedFields" not in listed["metadata"]
    assert cached is not None and "managedFields" not in cached["metadata"]
    assert cached.uid == watched["metadata"]["uid"]
    assert all("managedFields" not in c[1]["metadata"] for c in calls.items)
    assert stats.errors == 0


@pytest.mark.parametrize("field", ["name", "uid", "resourceVersion"])
async def test_transform_that_changes_identity_is_refused(server: ApiServer, field: str) -> None:
    def rename(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].pop("managedFields", None)
        obj["metadata"][field] = obj["metadata"][field] + "9"
        return obj

    server.create(CONFIGMAPS, managed("listed"))
    with capture_logs() as logs:
        async with running_informer(server, transform=rename) as inf:
            watched = server.create(CONFIGMAPS, managed("watched"))
            cached = await inf.wait_for_write(watched, timeout=5)
            stats = inf.statistics()
            listed = inf.store.get("listed", "default")
    # the original objects are kept, untransformed
    assert listed is not None and "managedFields" in listed["metadata"]
    assert cached is not None and "managedFields" in cached["metadata"]
    assert cached.resource_version == watched["metadata"]["resourceVersion"]
    assert sorted(o.name for o in inf.store.list()) == ["listed", "watched"]
    assert stats.errors == 2
    refused = [e for e in logs if e["event"] == "reflector.transform_changed_identity"]
    assert len(refused) == 2


async def test_transform_that_raises_keeps_the_original(server: ApiServer) -> None:
    def broken(obj: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("oops")

    server.create(CONFIGMAPS, managed("listed"))
    async with running_informer(server, transform=broken) as inf:
        watched = await inf.wait_for_write(server.create(CONFIGMAPS, managed("w")), timeout=5)
        stats = inf.statistics()
        assert watched is not None and "managedFields" in watched["metadata"]
        assert inf.store.get("listed", "default") is not None
    assert stats.errors == 2
    assert len(requests(server, "watch")) == 1  # the errors did not restart anything


# -- wrong kind ---------------------------------------------------------------------------------
async def test_watch_objects_of_the_wrong_kind_are_ignored_and_counted(server: ApiServer) -> None:
    # the client believes /api/v1/configmaps serves "Secret": list items carry no kind (so they are
    # taken as Secrets), but every watch event says kind ConfigMap
    confused = Resource("", "v1", "configmaps", "Secret")
    server.create(CONFIGMAPS, cm("listed"))
    with capture_logs() as logs:
        async with running_informer(server, confused) as inf:
            assert sorted(inf.store.keys()) == ["default/listed"]
            list_rv = inf.store.resource_version
            server.create(CONFIGMAPS, cm("watched"))
            server.patch(CONFIGMAPS, "listed", {"data": {"k": "x"}}, namespace="default")
            await bump_and_bookmark(server, inf)
            stats = inf.statistics()
            listed = inf.store.get("listed", "default")
    assert sorted(inf.store.keys()) == ["default/listed"]
    assert (
        listed is not None and listed.resource_version != "" and listed["data"] == {"k": "listed"}
    )
    assert int(list_rv) < int(stats.cache_resource_version)
    assert stats.wrong_kind_ignored == 2 and stats.events_applied == 0
    assert [e["kind"] for e in logs if e["event"] == "reflector.wrong_kind"] == ["ConfigMap"] * 2
    assert len(requests(server, "watch")) == 1


async def test_custom_resource_list_items_of_the_wrong_kind_are_ignored(
    server: ApiServer,
) -> None:
    widgets = Resource("example.com", "v1", "widgets", "Widget")
    server.register(widgets)
    server.create(widgets, {"metadata": {"name": "w1", "namespace": "default"}})
    gadgets = Resource("example.com", "v1", "widgets", "Gadget")
    async with running_informer(server, gadgets) as inf:
        assert len(inf.store) == 0
        assert inf.statistics().wrong_kind_ignored == 1
    assert len(first_pages(server, "widgets")) == 1


# -- read your writes ---------------------------------------------------------------------------
async def test_wait_for_write_and_deletion(server: ApiServer) -> None:
    async with running_informer(server) as inf:
        created = server.create(CONFIGMAPS, cm("a"))
        got = await inf.wait_for_write(created, timeout=5)
        assert got is not None and got.name == "a" and rv_of(got) >= rv_of(created)

        patched = server.patch(CONFIGMAPS, "a", {"data": {"k": "p"}}, namespace="default")
        got = await inf.wait_for_write(patched, timeout=5)
        assert got is not None and rv_of(got) >= rv_of(patched) and got["data"] == {"k": "p"}

        body = dict(server.get(CONFIGMAPS, "a", "default") or {})
        body["data"] = {"k": "r"}
        replaced = server.replace(CONFIGMAPS, body)
        newer = server.patch(CONFIGMAPS, "a", {"data": {"k": "newer"}}, namespace="default")
        got = await inf.wait_for_write(replaced, timeout=5)
        assert got is not None and rv_of(got) >= rv_of(replaced)
        got = await inf.wait_for_write(newer, timeout=5)
        assert got is not None and got["data"] == {"k": "newer"}

        deleted = server.delete(CONFIGMAPS, "a", namespace="default")
        await inf.wait_for_deletion(deleted, timeout=5)
        assert inf.store.get("a", "default") is None
        # an object whose write was deleted before the watch delivered it: gone, so None
        d = server.create(CONFIGMAPS, cm("d"))
        server.delete(CONFIGMAPS, "d", namespace="default")
        assert await inf.wait_for_write(d, timeout=5) is None
    assert len(requests(server, "watch")) == 1
    assert len(first_pages(server)) == 1


async def test_read_your_writes_with_kubernetes_models_over_http(server: ApiServer) -> None:
    async with running_informer(server) as inf, api_client(server) as api:
        core = k8s.CoreV1Api(api)
        created = await core.create_namespaced_config_map("default", cm("model"))  # type: ignore[arg-type]
        got = await inf.wait_for_write(created, timeout=5)  # type: ignore[arg-type]
        assert got is not None and got.uid == created.metadata.uid
        assert int(got.resource_version) >= int(created.metadata.resource_version)
        await core.delete_namespaced_config_map("model", "default")
        await inf.wait_for_deletion(created, timeout=5)  # type: ignore[arg-type]
        assert inf.store.get("model", "default") is None
    assert [r.verb for r in server.requests if r.verb in ("create", "delete")] == [
        "create",
        "delete",
    ]


# -- logs ---------------------------------------------------------------------------------------
async def test_logs_are_bound_and_never_contain_the_token(server: ApiServer) -> None:
    server.create(CONFIGMAPS, cm("a", "ns1"))
    server.faults.add(Fault(verb="list", status=403, times=1))  # not retried as a page: 5xx are
    server.faults.add(Fault(verb="watch", error_event=GONE, times=1))
    with capture_logs() as logs:
        async with api_client(server, token=SECRET) as api:
            inf = Informer(Transport(api), CONFIGMAPS, namespace="ns1", options=FAST)
            async with inf:
                await inf.wait_for_sync(timeout=5)
                await server.wait_for_requests(
                    lambda r: r.verb == "watch" and r.status == 200, count=2
                )
                stats = inf.statistics()
    assert stats.errors == 1 and stats.expired == 1 and stats.relists == 1
    events = {e["event"] for e in logs}
    assert {
        "reflector.api_error",
        "reflector.synced",
        "reflector.watch_expired",
        "reflector.relist",
    } <= events
    for entry in logs:
        if entry["event"].startswith("reflector."):
            assert entry["resource"] == "configmaps", entry
            assert entry["namespace"] == "ns1", entry
        assert SECRET not in repr(entry), entry
    # the requests were namespaced as asked
    assert {r.namespace for r in server.requests if r.resource == "configmaps"} == {"ns1"}


async def test_handler_failure_log_is_bound_with_resource_and_namespace(
    server: ApiServer,
) -> None:
    def on_add(obj: KubeObject, initial: bool) -> None:
        raise RuntimeError("boom")

    with capture_logs() as logs:
        async with running_informer(server, namespace="ns1") as inf:
            handler = inf.add_handler(on_add)
            await inf.wait_for_write(server.create(CONFIGMAPS, cm("a", "ns1")), timeout=5)
            await handler.wait_idle()
    failed = [e for e in logs if e["event"] == "informer.handler_failed"]
    assert len(failed) == 1
    assert failed[0].get("resource") == "configmaps"
    assert failed[0].get("namespace") == "ns1"


# -- cancellation -------------------------------------------------------------------------------
def client_tasks() -> set[asyncio.Task[Any]]:
    """The running tasks, without the test server's own (aiohttp request handlers)."""
    return {
        t
        for t in asyncio.all_tasks()
        if not t.get_coro().__qualname__.startswith("RequestHandler.")  # type: ignore[union-attr]
    }


def _acquired(api: Any) -> int:
    connector = api.rest_client.pool_manager.connector
    return len(getattr(connector, "_acquired", ()))


async def test_stop_leaves_no_task_and_no_connection(server: ApiServer) -> None:
    server.create(CONFIGMAPS, cm("a"))
    before = client_tasks()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        blocked = asyncio.Event()

        async def stuck(obj: KubeObject, initial: bool) -> None:
            await asyncio.Event().wait()  # a handler that never returns

        inf.add_handler(stuck)
        inf.add_handler(lambda obj, initial: blocked.set())
        inf.start()
        await inf.wait_for_sync(timeout=5)
        await server.wait_for_watchers(1, CONFIGMAPS)
        async with asyncio.timeout(5):
            await blocked.wait()
        assert _acquired(api) == 1
        await inf.stop()
        assert client_tasks() == before
        assert _acquired(api) == 0
        await no_watchers(server, CONFIGMAPS)
        await inf.stop()  # idempotent
    assert len(requests(server, "watch")) == 1


async def test_cancelling_the_run_task_leaves_no_task_and_no_connection(
    server: ApiServer,
) -> None:
    before = client_tasks()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        calls = Calls()
        inf.add_handler(**calls.async_handlers())
        task = asyncio.create_task(inf.run())
        await inf.wait_for_sync(timeout=5)
        await server.wait_for_watchers(1, CONFIGMAPS)
        server.create(CONFIGMAPS, cm("a"))
        await calls.wait_len(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert client_tasks() == before
        assert _acquired(api) == 0
        await no_watchers(server, CONFIGMAPS)
    assert len(requests(server, "watch")) == 1


async def test_stop_during_failing_list_backoff_leaves_nothing(server: ApiServer) -> None:
    server.faults.add(Fault(verb="list", status=500, times=None))
    before = client_tasks()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        inf.start()
        await server.wait_for_requests(lambda r: r.verb == "list" and r.status == 500, count=2)
        await inf.stop()
        assert client_tasks() == before
        assert _acquired(api) == 0
    assert not inf.has_synced


async def test_stop_during_a_slow_list_closes_its_connection(server: ApiServer) -> None:
    server.faults.add(Fault(verb="list", latency=30.0, times=None))
    before = client_tasks()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=replace(FAST, page_size=500))
        inf.start()
        await server.wait_for_requests(lambda r: r.verb == "list")
        await inf.stop()
        assert client_tasks() == before
        assert _acquired(api) == 0


@pytest.mark.parametrize("how", ["stop", "cancel"])
async def test_every_handler_task_ends_with_the_informer(server: ApiServer, how: str) -> None:
    server.create(CONFIGMAPS, cm("a"))
    before = client_tasks()
    async with api_client(server) as api:
        inf = Informer(Transport(api), CONFIGMAPS, options=FAST)
        handlers = [inf.add_handler(on_add=lambda obj, initial: None) for _ in range(3)]
        task = asyncio.create_task(inf.run()) if how == "cancel" else None
        if task is None:
            inf.start()
        await inf.wait_for_sync(timeout=5)
        for handler in handlers:
            await handler.wait_idle()
        assert [h.statistics().delivered for h in handlers] == [1, 1, 1]
        if task is None:
            await inf.stop()
        else:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        leaked = sorted(t.get_name() for t in client_tasks() - before)
        assert leaked == []
        await no_watchers(server, CONFIGMAPS)


async def test_handler_raising_cancelled_error_keeps_receiving() -> None:
    # A handler awaiting something that was cancelled elsewhere raises CancelledError although
    # its task was not cancelled: that is a raising handler (logged, counted), not a stop.
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server) as inf:
            seen: list[str] = []
            got_b = asyncio.Event()

            async def on_add(obj: Any, initial: bool) -> None:
                seen.append(obj.name)
                if obj.name == "a":
                    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                    fut.cancel()
                    await fut  # raises CancelledError
                if obj.name == "b":
                    got_b.set()

            handler = inf.add_handler(on_add, name="cancel-prone")
            await server.wait_for_watchers(1)
            server.create(CONFIGMAPS, cm("a"))
            await inf.wait_for_write(server.create(CONFIGMAPS, cm("b")), timeout=10)
            async with asyncio.timeout(5):
                await got_b.wait()
            assert seen == ["a", "b"]
            assert handler.statistics().errors == 1


async def test_events_iterator_ends_when_the_informer_stops() -> None:
    # `async for ev in inf.events()` must not hang forever once the informer is stopped.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server) as inf:
            got: list[Any] = []

            async def consume() -> None:
                async for ev in inf.events():
                    got.append(ev)

            consumer = asyncio.create_task(consume())
            while not got:  # noqa: ASYNC110 - the initial add arrives through the queue
                await asyncio.sleep(0)
        try:
            async with asyncio.timeout(5):
                await consumer
        finally:
            consumer.cancel()
            await asyncio.wait([consumer])


def test_a_pending_list_change_merged_with_a_live_one_is_live() -> None:
    def version(rv: str) -> KubeObject:
        body = cm("a")
        body["metadata"]["resourceVersion"] = rv
        return KubeObject.from_raw(json.dumps(body).encode())

    a1, a2, a3 = (version(rv) for rv in "123")
    listed = Delta("added", a1, None, False, from_list=True)
    assert _merge(listed, Delta("updated", a2, a1, from_list=True)) == [
        Delta("added", a2, None, False, from_list=True)
    ]
    assert _merge(listed, Delta("updated", a2, a1)) == [Delta("added", a2, None, False)]
    relisted = Delta("updated", a2, a1, from_list=True)
    assert _merge(relisted, Delta("updated", a3, a2)) == [Delta("updated", a3, a1)]
