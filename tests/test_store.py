"""The store: reads, indexes, events, relists, resource versions and freshness waiters.

The store has no transport, so these are unit tests. Waiters are synchronised by yielding to the
loop (``asyncio.sleep(0)`` is a yield, not a delay); nothing asserts timing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from informer._log import capture_logs
from informer.errors import StaleCacheError
from informer.objects import KubeObject
from informer.resource_version import InvalidResourceVersion
from informer.shards import ShardSet
from informer.store import (
    CacheNotComparable,
    Delta,
    Freshness,
    Store,
    StoreStats,
    Tombstone,
)


def mk(
    name: str,
    rv: str,
    ns: str | None = "default",
    *,
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    data: str = "",
) -> KubeObject:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": rv}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    body = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta, "data": {"d": data}}
    return KubeObject.from_raw(msgspec.json.encode(body))


def synced(*objs: KubeObject, rv: str = "100") -> Store:
    store = Store()
    store.replace(objs, rv, is_initial=True)
    return store


async def yield_to_loop(times: int = 1) -> None:
    """Let ready tasks run (a pure yield, no delay)."""
    for _ in range(times):
        await asyncio.sleep(0)


# -- reads ---------------------------------------------------------------------------------------
def test_empty_store() -> None:
    store = Store()
    assert len(store) == 0
    assert store.resource_version == ""
    assert store.comparable
    assert store.list() == []
    assert store.keys() == []
    assert store.get("a") is None
    assert store.freshness() == Freshness("", True, None)
    assert store.stats == StoreStats()


def test_get_list_keys_contains() -> None:
    a, b, c = mk("a", "10", "ns1"), mk("b", "11", "ns2"), mk("node-1", "12", None)
    store = synced(a, b, c)
    assert store.get("a", "ns1") is a
    assert store.get("a") is None
    assert store.get("node-1") is c
    assert store.get_by_key("ns2/b") is b
    assert store.get_by_key("node-1") is c
    assert sorted(store.keys()) == ["node-1", "ns1/a", "ns2/b"]
    assert len(store) == 3
    assert "ns1/a" in store and "a" not in store and 3 not in store
    assert {o.key for o in store.list()} == {"ns1/a", "ns2/b", "node-1"}
    assert store.list("ns1") == [a]
    assert store.list("") == store.list()
    assert store.list("nope") == []


def test_objects_are_read_only_mappings() -> None:
    store = synced(mk("a", "10", data="x"))
    obj = store.get("a", "default")
    assert obj is not None
    assert obj["data"]["d"] == "x"
    with pytest.raises(TypeError):
        obj["data"] = {}  # type: ignore[index]


# -- indexes -------------------------------------------------------------------------------------
def test_namespace_index_is_built_in_and_incremental() -> None:
    store = synced(mk("a", "10", "ns1"), mk("b", "11", "ns1"), mk("n", "12", None), rv="12")
    assert sorted(store.index_values("namespace")) == ["ns1"]
    assert [o.name for o in store.by_index("namespace", "ns1")] == ["a", "b"]
    store.apply_event("ADDED", mk("c", "13", "ns2"))
    assert [o.name for o in store.by_index("namespace", "ns2")] == ["c"]
    store.apply_event("DELETED", mk("c", "14", "ns2"))
    assert store.by_index("namespace", "ns2") == []
    assert "ns2" not in store.index_values("namespace")


def test_namespace_index_is_built_when_first_read_then_follows_changes() -> None:
    """A cache never read by namespace holds no namespace index (about 33 bytes per object);
    the first read builds it, every later change keeps it right."""
    objs = [mk(f"o{i}", str(10 + i), f"ns{i % 3}") for i in range(30)]
    store = synced(*objs, rv="100")
    unread = store.size().bytes
    assert [o.name for o in store.list("ns1")] == [f"o{i}" for i in range(1, 30, 3)]
    assert store.size().bytes > unread
    store.apply_event("ADDED", mk("new", "101", "ns9"))
    store.apply_event("DELETED", mk("o1", "102", "ns1"))
    assert [o.name for o in store.list("ns9")] == ["new"]
    assert "o1" not in [o.name for o in store.list("ns1")]
    store.replace([mk("a", "1", "x"), mk("b", "2", "y"), mk("c", "3", None)], "200")
    assert sorted(store.index_values("namespace")) == ["x", "y"]
    assert [o.name for o in store.by_index("namespace", "y")] == ["b"]
    assert store.list("ns0") == []
    # a partitioned store: the same, whichever comes first
    parted = Store()
    part = parted.partition(ShardSet.full())
    part.replace(objs[:10], "100", is_initial=True)
    assert sorted(o.name for o in parted.list("ns2")) == ["o2", "o5", "o8"]
    part.replace(objs[:12], "110")
    assert sorted(o.name for o in parted.list("ns2")) == ["o11", "o2", "o5", "o8"]


def test_add_index_indexes_existing_and_follows_changes() -> None:
    store = synced(
        mk("a", "10", labels={"app": "web"}), mk("b", "11", labels={"app": "db"}), rv="11"
    )
    store.add_index("app", lambda o: [o.labels["app"]] if "app" in o.labels else [])
    assert [o.name for o in store.by_index("app", "web")] == ["a"]
    store.apply_event("MODIFIED", mk("a", "12", labels={"app": "db"}))
    assert store.by_index("app", "web") == []
    assert sorted(o.name for o in store.by_index("app", "db")) == ["a", "b"]
    assert store.index_values("app") == ["db"]
    store.apply_event("DELETED", mk("b", "13", labels={"app": "db"}))
    assert [o.name for o in store.by_index("app", "db")] == ["a"]
    store.apply_event("ADDED", mk("c", "14"))  # no label: in no bucket
    assert sorted(store.index_values("app")) == ["db"]


def test_index_function_results_str_none_and_many() -> None:
    store = synced(mk("a", "10", labels={"x": "1"}), mk("b", "11"))
    store.add_index("str", lambda o: o.labels.get("x"))  # type: ignore[arg-type,return-value]
    store.add_index("many", lambda o: [o.name, "all"])
    assert [o.name for o in store.by_index("str", "1")] == ["a"]
    assert store.index_values("str") == ["1"]  # a str is one value, not characters; None: none
    assert sorted(o.name for o in store.by_index("many", "all")) == ["a", "b"]
    assert store.by_index("many", "b")[0].name == "b"


def test_index_function_errors_are_counted_not_raised() -> None:
    def fn(o: KubeObject) -> list[str]:
        if o.name == "bad":
            raise RuntimeError("boom")
        return [o.name]

    store = synced(mk("ok", "10"), mk("bad", "11"), rv="11")
    with capture_logs() as logs:
        store.add_index("name", fn)
        store.apply_event("MODIFIED", mk("bad", "12"))
        store.replace([mk("ok", "10"), mk("bad", "12")], "13")
    assert store.stats.index_errors == 3
    assert [e["event"] for e in logs] == ["store.index_error"] * 3
    assert store.index_values("name") == ["ok"]
    assert store.get("bad", "default") is not None


def test_index_errors() -> None:
    store = Store()
    store.add_index("x", lambda o: [o.name])
    with pytest.raises(ValueError):
        store.add_index("x", lambda o: [o.name])
    with pytest.raises(ValueError):
        store.add_index("namespace", lambda o: [o.name])
    with pytest.raises(KeyError):
        store.by_index("nope", "v")
    with pytest.raises(KeyError):
        store.index_values("nope")


# -- replace (lists) -----------------------------------------------------------------------------
def test_initial_replace_adds_everything_as_initial() -> None:
    a, b = mk("a", "10"), mk("b", "11")
    store = Store()
    deltas = store.replace([a, b], "20", is_initial=True)
    assert deltas == [
        Delta("added", a, None, True, from_list=True),
        Delta("added", b, None, True, from_list=True),
    ]
    assert store.resource_version == "20"
    assert store.stats.replaces == 1
    fresh = store.freshness()
    assert fresh.resource_version == "20" and fresh.comparable
    assert fresh.seconds_since_progress is not None and fresh.seconds_since_progress >= 0


def test_relist_yields_adds_updates_and_tombstones() -> None:
    a, b, c = mk("a", "10"), mk("b", "11"), mk("c", "12")
    store = synced(a, b, c, rv="20")
    b2, d = mk("b", "25"), mk("d", "26")
    deltas = store.replace([a, b2, d], "30")
    assert deltas == [
        Delta("updated", b2, b, from_list=True),
        Delta("added", d, None, False, from_list=True),
        Delta("deleted", Tombstone("default/c", c), c, from_list=True),
    ]
    assert sorted(store.keys()) == ["default/a", "default/b", "default/d"]
    assert store.get("b", "default") is b2
    assert store.resource_version == "30"
    live = store.apply_event("ADDED", mk("e", "31"))  # a watch event is not from a list
    assert live is not None and not live.from_list


def test_relist_with_recreated_object_is_delete_then_add() -> None:
    old = mk("a", "10", uid="u1")
    store = synced(old)
    new = mk("a", "40", uid="u2")
    assert store.replace([new], "50") == [
        Delta("deleted", Tombstone("default/a", old), old, from_list=True),
        Delta("added", new, None, False, from_list=True),
    ]


def test_relist_rebuilds_indexes() -> None:
    store = synced(mk("a", "10", "ns1", labels={"app": "x"}))
    store.add_index("app", lambda o: [o.labels.get("app", "")])
    store.replace([mk("b", "20", "ns2", labels={"app": "y"})], "30")
    assert store.index_values("namespace") == ["ns2"]
    assert store.index_values("app") == ["y"]
    assert store.by_index("app", "x") == []
    assert store.list("ns1") == []


def test_replace_swaps_once() -> None:
    """A reader holding the previous contents keeps a consistent view."""
    store = synced(mk("a", "10"), mk("b", "11"))
    before = store.list()
    contents = store._c

    def objs() -> Any:
        yield mk("c", "12")
        assert store._c is contents, "the store changed before the list was consumed"
        assert len(store) == 2
        yield mk("d", "13")

    store.replace(objs(), "20")
    assert store._c is not contents
    assert [o.name for o in before] == ["a", "b"]
    assert sorted(store.keys()) == ["default/c", "default/d"]


def test_replace_that_raises_leaves_the_store_unchanged() -> None:
    store = synced(mk("a", "10"))

    def objs() -> Any:
        yield mk("c", "12")
        raise RuntimeError("decode failed")

    with pytest.raises(RuntimeError):
        store.replace(objs(), "20")
    assert store.keys() == ["default/a"]
    assert store.resource_version == "100"
    assert store.stats.replaces == 1


def test_relist_older_than_cache_is_accepted_and_logged() -> None:
    store = synced(mk("a", "10"), rv="500")
    with capture_logs() as logs:
        store.replace([mk("a", "10")], "400")
    assert store.resource_version == "400"
    assert store.stats.rv_regressions == 1
    assert any(e["event"] == "store.rv_went_backwards" for e in logs)
    # events are judged against the new timeline
    assert store.apply_event("MODIFIED", mk("a", "401")) is not None


# -- events --------------------------------------------------------------------------------------
def test_event_types() -> None:
    a = mk("a", "10")
    store = synced(a)
    a2 = mk("a", "101")
    assert store.apply_event("MODIFIED", a2) == Delta("updated", a2, a)
    b = mk("b", "102")
    assert store.apply_event("MODIFIED", b) == Delta("added", b, None)  # MODIFIED unknown: add
    a3 = mk("a", "103")
    assert store.apply_event("ADDED", a3) == Delta("updated", a3, a2)  # ADDED known: update
    gone = mk("a", "104")
    assert store.apply_event("DELETED", gone) == Delta("deleted", gone, a3)
    assert store.get("a", "default") is None
    assert store.resource_version == "104"
    assert store.stats.events_applied == 4


def test_bad_event_types() -> None:
    store = synced()
    for t in ("BOOKMARK", "ERROR", "added", ""):
        with pytest.raises(ValueError):
            store.apply_event(t, mk("a", "200"))


def test_stale_events_are_dropped_and_counted() -> None:
    a = mk("a", "90")
    store = synced(a, rv="100")
    with capture_logs() as logs:
        assert store.apply_event("ADDED", mk("b", "95")) is None  # older than the list
        assert store.apply_event("MODIFIED", mk("a", "100")) is None  # == cache RV
        assert store.apply_event("DELETED", mk("a", "99")) is None
        assert store.apply_event("DELETED", mk("zz", "50")) is None  # unknown and old
    assert store.stats.stale_dropped == 4
    assert store.stats.duplicates_dropped == 0
    assert store.get("a", "default") is a and store.get("b", "default") is None
    assert store.resource_version == "100"
    assert [e["event"] for e in logs] == ["store.stale_event"] * 4


def test_duplicates_count_separately() -> None:
    store = synced(mk("a", "90"), rv="100")
    assert store.apply_event("MODIFIED", mk("a", "90")) is None
    a2 = mk("a", "110")
    assert store.apply_event("MODIFIED", a2) is not None
    assert store.apply_event("MODIFIED", mk("a", "110")) is None
    assert store.apply_event("ADDED", mk("a", "110")) is None
    assert store.stats.duplicates_dropped == 3
    assert store.stats.stale_dropped == 0
    assert store.get("a", "default") is a2


def test_rv_compares_by_length_not_lexically() -> None:
    store = synced(mk("a", "9"), rv="99")
    assert store.apply_event("MODIFIED", mk("a", "100")) is not None
    assert store.resource_version == "100"
    assert store.apply_event("MODIFIED", mk("a", "99")) is None


def test_delete_of_unknown_key_advances_rv_without_delta() -> None:
    store = synced(rv="100")
    assert store.apply_event("DELETED", mk("x", "105")) is None
    assert store.resource_version == "105"
    assert store.stats.deletes_of_unknown == 1
    assert store.stats.stale_dropped == 0


def test_bookmarks_move_forward_only() -> None:
    store = synced(rv="100")
    store.advance("150")
    assert store.resource_version == "150"
    store.advance("120")
    store.advance("150")
    assert store.resource_version == "150"
    assert store.stats.bookmarks == 3
    assert store.apply_event("ADDED", mk("a", "140")) is None  # before the bookmark: a replay
    with capture_logs() as logs:
        store.advance("")
    assert store.resource_version == "150"
    assert logs[0]["event"] == "store.empty_bookmark"


def test_events_before_the_first_list() -> None:
    store = Store()
    a = mk("a", "10")
    assert store.apply_event("ADDED", a) == Delta("added", a, None)
    assert store.resource_version == "10"


# -- non-comparable resource versions -----------------------------------------------------------
def test_opaque_list_switches_to_equality_semantics() -> None:
    a = mk("a", "opaque-a1")
    with capture_logs() as logs:
        store = synced(a, rv="opaque-list-1")
        assert not store.comparable
        assert store.resource_version == "opaque-list-1"
        # an exact duplicate is dropped
        assert store.apply_event("MODIFIED", mk("a", "opaque-a1")) is None
        # anything else is applied, whatever its RV looks like
        a2 = mk("a", "0003")
        assert store.apply_event("MODIFIED", a2) == Delta("updated", a2, a)
        a3 = mk("a", "1")
        assert store.apply_event("MODIFIED", a3) == Delta("updated", a3, a2)
        assert store.resource_version == "1"  # the last RV seen
        # DELETED of an absent key is a duplicate
        assert store.apply_event("DELETED", mk("zz", "x")) is None
        assert store.apply_event("DELETED", mk("a", "zz")) is not None
        store.advance("bm-1")
        assert store.resource_version == "bm-1"
    st = store.stats
    assert (st.duplicates_dropped, st.stale_dropped, st.events_applied) == (2, 0, 3)
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["store.rv_not_comparable"]
    assert not store.freshness().comparable


def test_opaque_event_after_comparable_list_switches() -> None:
    store = synced(mk("a", "10"), rv="100")
    with capture_logs() as logs:
        b = mk("b", "abc")
        assert store.apply_event("ADDED", b) == Delta("added", b, None)
        store.advance("xyz")
        store.apply_event("ADDED", mk("c", "also-opaque"))
    assert not store.comparable
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["store.rv_not_comparable"]
    # stays non-comparable, even when numbers come back
    store.replace([mk("a", "10")], "200")
    assert not store.comparable
    assert store.apply_event("MODIFIED", mk("a", "5")) is not None


def test_is_fresh() -> None:
    store = Store()
    assert not store.is_fresh("1")
    store.replace([], "100")
    assert store.is_fresh("99") and store.is_fresh("100") and not store.is_fresh("101")
    assert store.is_fresh("9")  # shorter is older
    for bad in ("", "0", "007", "abc", "-1"):
        with pytest.raises(InvalidResourceVersion):
            store.is_fresh(bad)


def test_freshness_with_opaque_rvs() -> None:
    store = synced(rv="opaque-7")
    assert store.is_fresh("opaque-7")
    with pytest.raises(CacheNotComparable) as exc:
        store.is_fresh("100")
    assert exc.value.cache_rv == "opaque-7" and exc.value.wanted_rv == "100"
    assert "not comparable" in str(exc.value)
    with pytest.raises(InvalidResourceVersion):  # CacheNotComparable is an InvalidResourceVersion
        store.is_fresh("opaque-6")


# -- waiting for a resource version --------------------------------------------------------------
async def test_wait_returns_at_once_when_reached() -> None:
    store = synced(rv="100")
    await store.wait_for_resource_version("100", timeout=0)
    await store.wait_for_resource_version("7")


async def test_wait_resolved_by_event_in_the_same_iteration() -> None:
    store = synced(rv="100")
    task = asyncio.create_task(store.wait_for_resource_version("105"))
    await yield_to_loop()
    store.apply_event("ADDED", mk("a", "104"))
    await yield_to_loop()
    assert not task.done()
    store.apply_event("ADDED", mk("b", "106"))
    await yield_to_loop()
    assert task.done()
    await task
    assert store._heap == []


async def test_wait_resolved_by_bookmark() -> None:
    store = synced(rv="100")
    task = asyncio.create_task(store.wait_for_resource_version("150", timeout=60))
    await yield_to_loop()
    store.advance("150")
    await yield_to_loop()
    assert task.done()
    await task


async def test_wait_resolved_by_relist() -> None:
    store = synced(rv="100")
    task = asyncio.create_task(store.wait_for_resource_version("150"))
    await yield_to_loop()
    store.replace([], "151")
    await task


async def test_wait_resolved_by_delete_of_unknown_key() -> None:
    store = synced(rv="100")
    task = asyncio.create_task(store.wait_for_resource_version("150"))
    await yield_to_loop()
    store.apply_event("DELETED", mk("ghost", "150"))
    await task


async def test_wait_times_out_with_stale_cache_error() -> None:
    store = synced(rv="100")
    with pytest.raises(StaleCacheError) as exc:
        await store.wait_for_resource_version("101", timeout=0)
    assert (exc.value.cache_rv, exc.value.wanted_rv, exc.value.timeout) == ("100", "101", 0)
    with pytest.raises(StaleCacheError) as exc:
        await store.wait_for_resource_version("101", timeout=0.001)
    assert exc.value.timeout == 0.001
    assert store._heap == [] or all(e[2].done() for e in store._heap)


async def test_wait_rejects_bad_rvs_at_once() -> None:
    store = synced(rv="100")
    for bad in ("", "0", "01", "abc"):
        with pytest.raises(InvalidResourceVersion):
            await store.wait_for_resource_version(bad)
    opaque = synced(rv="o-1")
    await opaque.wait_for_resource_version("o-1")
    with pytest.raises(CacheNotComparable):
        await opaque.wait_for_resource_version("5")
    with pytest.raises(CacheNotComparable):
        await opaque.wait_for_resource_version("o-2", timeout=60)


async def test_pending_waiters_fail_when_the_store_turns_opaque() -> None:
    store = synced(rv="100")
    task = asyncio.create_task(store.wait_for_resource_version("200"))
    await yield_to_loop()
    store.apply_event("ADDED", mk("a", "opaque"))
    with pytest.raises(CacheNotComparable) as exc:
        await task
    assert exc.value.wanted_rv == "200"
    assert store._heap == []


async def test_many_waiters_resolve_in_rv_order() -> None:
    store = synced(rv="100")
    wanted = [str(101 + (i * 37) % 300) for i in range(300)]
    tasks = {rv: [] for rv in wanted}  # type: dict[str, list[asyncio.Task[None]]]
    for rv in wanted:
        tasks[rv].append(asyncio.create_task(store.wait_for_resource_version(rv)))
    await yield_to_loop()
    assert len(store._heap) == 300
    for step in range(101, 401, 7):
        store.advance(str(step))
        await yield_to_loop()
        for rv, ts in tasks.items():
            assert all(t.done() == (int(rv) <= step) for t in ts), (rv, step)
    store.advance("1000")
    await asyncio.gather(*(t for ts in tasks.values() for t in ts))
    assert store._heap == []


async def test_cancelled_and_timed_out_waiters_do_not_leak() -> None:
    store = synced(rv="100")
    for rnd in range(5):
        tasks = [
            asyncio.create_task(store.wait_for_resource_version(str(1000 + i))) for i in range(200)
        ]
        await yield_to_loop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        timed_out = await asyncio.gather(
            *(store.wait_for_resource_version(str(5000 + rnd), timeout=0.001) for _ in range(100)),
            return_exceptions=True,
        )
        assert all(isinstance(e, StaleCacheError) for e in timed_out)
        assert len(store._heap) <= 64
    # a live waiter among dead ones is still woken
    live = asyncio.create_task(store.wait_for_resource_version("150"))
    await yield_to_loop()
    store.advance("150")
    await live


async def test_cancelling_a_waiter_does_not_disturb_others() -> None:
    store = synced(rv="100")
    a = asyncio.create_task(store.wait_for_resource_version("110"))
    b = asyncio.create_task(store.wait_for_resource_version("110"))
    await yield_to_loop()
    a.cancel()
    with pytest.raises(asyncio.CancelledError):
        await a
    store.advance("110")
    await b


# -- read your writes ----------------------------------------------------------------------------
def as_response(obj: KubeObject) -> dict[str, Any]:
    return obj.to_dict()


async def test_wait_for_write_returns_the_cached_copy() -> None:
    store = synced(mk("a", "90"), rv="100")
    written = mk("a", "120", data="new")
    task = asyncio.create_task(store.wait_for_write(as_response(written), timeout=60))
    await yield_to_loop()
    store.apply_event("MODIFIED", mk("b", "110"))
    await yield_to_loop()
    assert not task.done()
    store.apply_event("MODIFIED", written)
    got = await task
    assert got is written
    # already there: at once, also for a newer cached copy
    newer = mk("a", "130")
    store.apply_event("MODIFIED", newer)
    assert await store.wait_for_write(as_response(written), timeout=0) is newer
    assert await store.wait_for_write(written) is newer


async def test_wait_for_write_accepts_client_models() -> None:
    store = synced(mk("a", "150", uid="u"), rv="150")
    model = SimpleNamespace(
        metadata=SimpleNamespace(name="a", namespace="default", uid="u", resource_version="150")
    )
    got = await store.wait_for_write(model, timeout=0)  # type: ignore[arg-type]
    assert got is not None and got.resource_version == "150"


async def test_wait_for_write_returns_none_when_gone_or_recreated() -> None:
    store = synced(mk("a", "90", uid="u1"), rv="100")
    written = mk("a", "110", uid="u1")
    store.apply_event("MODIFIED", written)
    store.apply_event("DELETED", mk("a", "111", uid="u1"))
    assert await store.wait_for_write(as_response(written), timeout=0) is None
    store.apply_event("ADDED", mk("a", "112", uid="u2"))
    assert await store.wait_for_write(as_response(written), timeout=0) is None


async def test_wait_for_write_timeout_and_bad_input() -> None:
    store = synced(rv="100")
    with pytest.raises(StaleCacheError):
        await store.wait_for_write(as_response(mk("a", "120")), timeout=0.001)
    with pytest.raises(InvalidResourceVersion):
        await store.wait_for_write(as_response(mk("a", "")), timeout=1)
    with pytest.raises(ValueError):
        await store.wait_for_write({"kind": "ConfigMap"})
    with pytest.raises(ValueError):
        await store.wait_for_write({"metadata": {"namespace": "x"}})


async def test_wait_for_write_with_opaque_rvs_waits_for_that_exact_version() -> None:
    store = synced(mk("a", "o1"), rv="o-list")
    written = mk("a", "o5")
    task = asyncio.create_task(store.wait_for_write(as_response(written), timeout=60))
    await yield_to_loop()
    store.apply_event("MODIFIED", mk("b", "o4"))
    store.apply_event("MODIFIED", mk("a", "o3"))
    await yield_to_loop()
    assert not task.done()
    store.apply_event("MODIFIED", written)
    assert await task is written
    assert store._key_waiters == {}
    assert await store.wait_for_write(as_response(written), timeout=0) is written
    with pytest.raises(StaleCacheError):
        await store.wait_for_write(as_response(mk("a", "o9")), timeout=0)


async def test_wait_for_write_falls_back_when_the_store_turns_opaque() -> None:
    store = synced(rv="100")
    task = asyncio.create_task(store.wait_for_write(as_response(mk("a", "200")), timeout=60))
    await yield_to_loop()
    store.apply_event("ADDED", mk("b", "opaque"))  # pending RV waiters fail: fall back
    await yield_to_loop()
    assert not task.done()
    written = mk("a", "200")
    store.apply_event("ADDED", written)
    assert await task is written


async def test_wait_for_write_resolved_by_relist_in_opaque_mode() -> None:
    store = synced(rv="o-list")
    written = mk("a", "o2")
    task = asyncio.create_task(store.wait_for_write(as_response(written), timeout=60))
    await yield_to_loop()
    store.replace([written], "o-list-2")
    assert await task is written


# -- waiting for a deletion ----------------------------------------------------------------------
async def test_wait_for_deletion() -> None:
    a = mk("a", "90", uid="u1")
    store = synced(a, rv="100")
    task = asyncio.create_task(store.wait_for_deletion(as_response(a), timeout=60))
    await yield_to_loop()
    store.apply_event("MODIFIED", mk("a", "101", uid="u1"))
    await yield_to_loop()
    assert not task.done()
    store.apply_event("DELETED", mk("a", "102", uid="u1"))
    await task
    assert store._key_waiters == {}
    await store.wait_for_deletion(as_response(a), timeout=0)  # already gone


async def test_wait_for_deletion_recreated_counts_as_gone() -> None:
    store = synced(mk("a", "90", uid="u2"), rv="100")
    await store.wait_for_deletion(as_response(mk("a", "80", uid="u1")), timeout=0)
    with pytest.raises(StaleCacheError):
        await store.wait_for_deletion(as_response(mk("a", "90", uid="u2")), timeout=0)


async def test_wait_for_deletion_resolved_by_relist_tombstone() -> None:
    a = mk("a", "90")
    store = synced(a, rv="100")
    task = asyncio.create_task(store.wait_for_deletion(a, timeout=60))
    await yield_to_loop()
    deltas = store.replace([], "200")
    assert deltas == [Delta("deleted", Tombstone("default/a", a), a, from_list=True)]
    await task


async def test_wait_for_deletion_timeout_and_status() -> None:
    store = synced(mk("a", "90"), rv="100")
    with pytest.raises(StaleCacheError) as exc:
        await store.wait_for_deletion(as_response(mk("a", "90")), timeout=0.001)
    assert exc.value.cache_rv == "100"
    assert store._key_waiters == {}
    # a DELETE's Status names the object in details; the namespace comes from the caller
    status = {"kind": "Status", "status": "Success", "details": {"name": "a", "uid": "x"}}
    await store.wait_for_deletion(status, namespace="default")  # uid x is not cached: gone
    with pytest.raises(StaleCacheError):
        cached_uid = store.get("a", "default").uid  # type: ignore[union-attr]
        same = {"kind": "Status", "details": {"name": "a", "uid": cached_uid}}
        await store.wait_for_deletion(same, timeout=0.001, namespace="default")
    with pytest.raises(ValueError, match="Status"):
        await store.wait_for_deletion({"kind": "Status", "status": "Success"})


async def test_cancelled_deletion_waiters_are_removed() -> None:
    store = synced(mk("a", "90"), rv="100")
    by_uid = asyncio.create_task(store.wait_for_deletion(mk("a", "90")))
    no_uid = {"metadata": {"name": "a", "namespace": "default"}}  # by key
    by_key = asyncio.create_task(store.wait_for_deletion(no_uid))
    await yield_to_loop()
    assert list(store._key_waiters) == ["default/a"] and len(store._key_waiters["default/a"]) == 2
    for task in (by_uid, by_key):
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert store._key_waiters == {}


async def test_wait_for_deletion_by_status_uid_in_any_namespace() -> None:
    # a Status names no namespace: the uid finds the object wherever it is cached
    store = synced(mk("a", "90", "ns1", uid="u1"), mk("a", "91", "ns2", uid="u2"), rv="100")
    status = {"kind": "Status", "details": {"name": "a", "uid": "u1"}}
    with pytest.raises(StaleCacheError):
        await store.wait_for_deletion(status, timeout=0)
    task = asyncio.create_task(store.wait_for_deletion(status, timeout=60))
    await yield_to_loop()
    store.apply_event("MODIFIED", mk("a", "101", "ns1", uid="u1"))
    store.apply_event("DELETED", mk("a", "102", "ns2", uid="u2"))  # same name, other uid
    await yield_to_loop()
    assert not task.done()
    store.apply_event("ADDED", mk("a", "103", "ns1", uid="u3"))  # recreated under that key
    await task
    assert store._key_waiters == {}


async def test_uid_lookup_follows_events_and_relists() -> None:
    store = synced(mk("a", "90", uid="u1"), rv="100")

    def status(name: str, uid: str) -> dict[str, Any]:
        return {"kind": "Status", "details": {"name": name, "uid": uid}}

    async def held(name: str, uid: str) -> bool:
        try:
            await store.wait_for_deletion(status(name, uid), timeout=0)
        except StaleCacheError:
            return True
        return False

    store.apply_event("ADDED", mk("a", "101", uid="u2"))  # recreated: u1 is gone
    store.apply_event("ADDED", mk("b", "102", uid="u3"))
    assert [await held(*x) for x in (("a", "u1"), ("a", "u2"), ("b", "u3"))] == [False, True, True]
    store.apply_event("DELETED", mk("b", "103", uid="u3"))
    assert not await held("b", "u3") and await held("a", "u2")
    # a list repeating a key keeps its last object, and only that object's uid
    store.replace([mk("c", "104", uid="u4"), mk("c", "104", uid="u5")], "104")
    assert not await held("c", "u4") and await held("c", "u5") and not await held("a", "u2")


# -- value types ---------------------------------------------------------------------------------
def test_value_types_are_frozen() -> None:
    a = mk("a", "1")
    values = (Tombstone("k", a), Delta("added", a, None), Freshness("1", True, 0.0), StoreStats())
    for value in values:
        first = getattr(value, "__struct_fields__", None) or [dataclasses.fields(value)[0].name]
        with pytest.raises(AttributeError):  # FrozenInstanceError is one
            setattr(value, first[0], None)
        assert not hasattr(value, "__dict__")


def test_freshness_progress_clock() -> None:
    store = synced(rv="100")
    first = store.freshness().seconds_since_progress
    assert first is not None
    store.advance("100")  # a bookmark that does not move still shows progress
    second = store.freshness().seconds_since_progress
    assert second is not None
    assert store.freshness().resource_version == "100"


def test_repr() -> None:
    assert repr(synced(mk("a", "1"), rv="5")) == "Store(1 objects, rv='5')"
    assert "not comparable" in repr(synced(rv="x"))


def test_event_older_than_its_cached_copy_is_stale() -> None:
    """Defence in depth: a list whose items are newer than its ListMeta RV (a buggy server)."""
    store = synced(mk("a", "150"), rv="100")
    assert store.apply_event("MODIFIED", mk("a", "120")) is None
    assert store.stats.stale_dropped == 1
    assert store.get("a", "default").resource_version == "150"  # type: ignore[union-attr]
    assert store.apply_event("MODIFIED", mk("a", "151")) is not None


def test_the_store_never_decodes_objects_fully(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: KubeObject) -> dict[str, Any]:
        raise AssertionError(f"{self!r} was fully decoded")

    monkeypatch.setattr(KubeObject, "_decode", refuse)
    objs = [mk(f"o{i}", str(10 + i), f"ns{i % 3}", labels={"app": f"a{i % 2}"}) for i in range(9)]
    store = Store()
    store.add_index("app", lambda o: [o.labels.get("app", "")])
    store.replace(objs, "100", is_initial=True)
    events = [mk("o1", "101", "ns1", labels={"app": "b"}), mk("new", "102", "ns9")]
    for e in events:
        store.apply_event("MODIFIED", e)
    store.apply_event("DELETED", mk("o2", "103", "ns2"))
    store.replace([*store.list(), mk("late", "104", None)], "105")
    store.list("ns1")
    store.by_index("app", "a0")
    assert len(store) == 10


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
        store.apply_event("ADDED", mk("a", "2"))
        store.apply_event("DELETED", mk("a", "3"))
        assert store.by_index("by-x", "x") == []
        assert store.index_values("by-x") == []
        store.replace([mk("b", "4")], "4")
        assert store.by_index("by-x", "x") == []
        store.apply_event("DELETED", mk("b", "5"))
        assert store.by_index("by-x", "x") == []


def _item(name: str, rv: str) -> KubeObject:
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": rv}
    return KubeObject.from_list_item(msgspec.json.encode({"metadata": meta}), "ConfigMap", "v1")


def test_events_against_list_items_are_judged_as_against_objects_holding_their_rv() -> None:
    """A list's items do not hold their RV: the verdict reads it only for the events it drops
    (a duplicate is still told from a stale event) and applies the newer ones as before."""
    for make in (_item, mk):
        store = synced(make("a", "5"), make("b", "8"), rv="10")
        assert store.apply_event("MODIFIED", mk("b", "8")) is None  # the cached copy's RV
        assert store.apply_event("MODIFIED", mk("a", "8")) is None  # older than the cache
        assert store.apply_event("DELETED", mk("a", "5")) is None
        delta = store.apply_event("MODIFIED", mk("a", "11"))
        assert delta is not None and delta.old is not None
        assert delta.old.resource_version == "5" and store.resource_version == "11"
        assert store.stats.duplicates_dropped == 1 and store.stats.stale_dropped == 2
        # a relist keeps the unchanged item (its RV read from its bytes) and replaces the rest
        b = store.get_by_key("default/b")
        deltas = store.replace([make("a", "11"), make("b", "8"), make("c", "12")], "12")
        assert store.get_by_key("default/b") is b
        assert [(d.type, d.obj.key) for d in deltas] == [("added", "default/c")]


def test_size_counts_an_rv_only_where_it_is_held() -> None:
    """``Store.size()`` follows the layout: a list's item holds no RV string, an object of a
    watch or a write holds one, an object whose metadata was read holds it in its metadata."""
    import sys

    meta = {"name": "a", "namespace": "default", "uid": "uid-a", "resourceVersion": "5"}
    raw = msgspec.json.encode({"metadata": meta})
    item, written = KubeObject.from_list_item(raw, "ConfigMap", "v1"), KubeObject.from_raw(raw)
    bare, held = synced(item, rv="10"), synced(written, rv="10")
    assert held.size().bytes - bare.size().bytes == sys.getsizeof("5")
    assert bare.size().payload_bytes == held.size().payload_bytes == len(raw)
    before = bare.size().bytes
    assert item.uid == "uid-a"  # the metadata decoded, then held (with the RV)
    bare.apply_event("ADDED", mk("b", "11"))
    bare.apply_event("DELETED", mk("b", "12"))  # (a change: the size is computed again)
    lazy = item._lazy
    assert lazy is not None and not isinstance(lazy, str)
    grown = sys.getsizeof(lazy) + sys.getsizeof(lazy.uid) + sys.getsizeof(lazy.resource_version)
    assert bare.size().bytes - before == grown
