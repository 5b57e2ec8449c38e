"""Lane merges that fail, through real HTTP: a merge whose list of the union keeps failing (a 500,
a 403, a 410, a connection cut mid-answer, a request timing out) is given up after
``lane_merge_attempts`` failed lists (logged, counted; the old lanes keep running) and tried
again later, with the reflector's backoff; an unexpected error in the merge step itself is
contained (logged with its type, counted, the old lanes and their partitions kept, nothing
delivered twice or lost) and the merge tried again.

The invariant is in ``informer.reflector._sharded``'s docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from dataclasses import replace
from typing import Any

import pytest

from informer._log import capture_logs
from informer.objects import KubeObject
from informer.reflector import ShardedReflector
from informer.resource import CONFIGMAPS
from informer.shards import ShardSet, hash_value
from informer.store import Store, StorePartition
from informer.testing import ApiServer, Fault, RecordedRequest
from informer.transport import Transport
from tests.conftest import cm, wait_until
from tests.test_sharded_lane_merge import (
    FIRST,
    MERGE_AT_ONCE,
    SECOND,
    THIRD,
    Recorded,
    caught_up,
    expected,
    held,
    merged,
    selector_of,
    sharded,
    take,
)

UNION = FIRST | SECOND
ONE_PAGE_RETRY = replace(MERGE_AT_ONCE, page_retries=1)
LIST_FAILURES: dict[str, dict[str, Any]] = {
    "500": {"status": 500},
    "403": {"status": 403, "reason": "Forbidden", "message": "configmaps is forbidden"},
    "410": {"status": 410, "reason": "Expired", "message": "too old resource version"},
    "cut": {"cut_mid_line": True},
}


def of_the_merge(r: RecordedRequest) -> bool:
    return r.verb == "list" and selector_of(r) == UNION


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


@pytest.mark.parametrize("failure", sorted(LIST_FAILURES))
async def test_a_merge_whose_list_keeps_failing_is_given_up_logged_counted_and_tried_again(
    failure: str,
) -> None:
    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(20):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        refused = server.faults.add(
            Fault(predicate=of_the_merge, times=None, **LIST_FAILURES[failure])
        )
        with capture_logs(logging.INFO) as logs:
            async with sharded(server, FIRST, ONE_PAGE_RETRY) as (reflector, seen):
                await take(reflector, SECOND)
                # given up twice: the merge is tried again after the first
                await wait_until(lambda: reflector.shard_statistics().merges_given_up >= 2)
                stats = reflector.shard_statistics()
                attempts = ONE_PAGE_RETRY.lane_merge_attempts
                assert stats.merges == 0 and stats.lanes == 2
                assert stats.merge_list_failures >= 2 * attempts
                assert stats.merge_errors == 0
                # the old lanes keep the cache, meanwhile
                server.create(CONFIGMAPS, cm("during"))
                server.patch(CONFIGMAPS, "cm-001", {"data": {"k": "2"}}, "default")
                await caught_up(server, reflector)
                assert held(reflector.parent_store) == expected(server, UNION)
                assert seen.view == {o.key: o for o in reflector.parent_store.list()}
                server.faults.remove(refused)
                await wait_until(lambda: merged(reflector))
                server.create(CONFIGMAPS, cm("after"))
                await caught_up(server, reflector)
                assert held(reflector.parent_store) == expected(server, UNION)
                assert seen.view == {o.key: o for o in reflector.parent_store.list()}
                totals = reflector.statistics()  # the merges' lists count too
                assert totals.errors + totals.expired >= 2 * attempts
    given_up = events(logs, "reflector.lane_merge_given_up")
    assert len(given_up) >= 2
    first = given_up[0]
    assert first["log_level"] == "warning"
    assert first["attempts"] == attempts and first["lanes"] == 2
    assert first["error"] in ("ApiError", "Forbidden", "ResourceExpired", "TransportError")
    if failure in ("500", "403", "410"):
        assert first["status"] == int(failure)
    assert first["retry_in"] >= 0 and given_up[1]["retry_in"] >= first["retry_in"]
    assert "cm-0" not in repr(given_up) and "is forbidden" not in repr(given_up)  # no message
    (done,) = events(logs, "reflector.lanes_merged")
    assert 0 <= done["failed_attempts"] < attempts  # (the fault may have failed some of it)


async def test_a_merge_whose_list_times_out_is_given_up_and_the_lanes_keep_the_cache() -> None:
    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(10):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        server.faults.add(Fault(predicate=of_the_merge, latency=30, times=None))
        api = server.api_client()
        seen = Recorded()
        options = replace(MERGE_AT_ONCE, page_retries=0, lane_merge_attempts=2)
        reflector = ShardedReflector(
            Transport(api, request_timeout=0.05),
            CONFIGMAPS,
            Store(),
            shards=FIRST,
            options=options,
            on_deltas=seen,
        )
        task = asyncio.create_task(reflector.run())
        try:
            with capture_logs(logging.INFO) as logs:
                async with asyncio.timeout(10):
                    await reflector.lanes_synced.wait()
                await take(reflector, SECOND)
                await wait_until(lambda: reflector.shard_statistics().merges_given_up >= 1)
            stats = reflector.shard_statistics()
            assert stats.lanes == 2 and stats.merge_list_failures >= 2
            server.create(CONFIGMAPS, cm("during"))
            await caught_up(server, reflector)
            assert held(reflector.parent_store) == expected(server, UNION)
            assert seen.violations == []
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await api.close()
    (line,) = events(logs, "reflector.lane_merge_given_up")[:1]
    assert line["error"] == "TransportError" and line["attempts"] == 2


async def test_metrics_count_the_failed_merge_lists_and_the_merges_given_up() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from informer.metrics import register_metrics
    from tests.conftest import running_informer

    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(10):
            server.create(CONFIGMAPS, cm(f"cm-{i}"))
        server.faults.add(Fault(predicate=of_the_merge, status=500, times=None))
        async with running_informer(server, shards=FIRST, lane_merge_delay=0.0) as inf:
            inf.set_shards(UNION)
            await inf.wait_for_shards(timeout=10)
            shard = inf.reflector.shard_statistics  # type: ignore[attr-defined]
            await wait_until(lambda: shard().merges_given_up >= 1)
            registry = CollectorRegistry()
            register_metrics(inf, registry=registry)
            text = generate_latest(registry).decode()
    values = {
        line.split("{")[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if not line.startswith("#")
    }
    assert values["informer_shard_lane_merges_given_up_total"] >= 1
    assert values["informer_shard_lane_merge_list_failures_total"] >= 3
    assert values["informer_shard_lane_merge_errors_total"] == 0
    assert values["informer_shard_lanes"] == 2


async def test_an_error_in_the_merge_step_keeps_the_old_lanes_and_loses_no_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The merge step raising after the store took the merged list (the worst moment: the
    partitions replaced, their objects changed) is undone: the old lanes and partitions go on,
    the changes the merge brought are delivered once, by the merge tried again."""
    real_replace = StorePartition.replace
    injected: list[int] = []

    def failing_once(self: StorePartition, *args: Any, **kwargs: Any) -> Any:
        deltas = real_replace(self, *args, **kwargs)
        if kwargs.get("ahead_keys", ()) != () and not injected:  # the merge's list
            injected.append(len(deltas))
            raise RuntimeError("injected into the merge step")
        return deltas

    async with ApiServer(bookmark_interval=0.2) as server:
        for i in range(40):
            server.create(CONFIGMAPS, cm(f"cm-{i:03}"))
        with capture_logs(logging.INFO) as logs:
            async with sharded(server, FIRST) as (reflector, seen):
                await server.wait_for_requests(lambda r: r.verb == "watch", timeout=10)
                server.disrupt_watches(Fault(stall=30))  # the merge brings what this lane missed
                for i in range(40):
                    server.patch(CONFIGMAPS, f"cm-{i:03}", {"data": {"k": "2"}}, "default")
                store = reflector.parent_store
                monkeypatch.setattr(StorePartition, "replace", failing_once)
                await take(reflector, SECOND)
                await wait_until(lambda: merged(reflector))
                monkeypatch.undo()
                stats = reflector.shard_statistics()
                assert stats.merge_errors == 1 and stats.merges == 1
                assert injected and injected[0] > 0  # it had changed objects when it failed
                assert seen.violations == []  # nothing twice, nothing back in time
                assert held(store) == expected(server, UNION)
                assert seen.view == {o.key: o for o in store.list()}
                server.create(CONFIGMAPS, cm("after"))
                await caught_up(server, reflector)
                assert held(store) == expected(server, UNION)
                assert seen.view == {o.key: o for o in store.list()}
    (failed,) = events(logs, "reflector.lane_merge_failed")
    assert failed["log_level"] == "error" and failed["lanes"] == 2
    assert failed["error"].startswith("RuntimeError in failing_once")
    assert "injected" not in repr(failed)  # the message (it can quote data) is not logged


def configmap(name: str, uid: str, rv: int, value: str = "1") -> KubeObject:
    meta = {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": str(rv)}
    return KubeObject.from_dict(
        {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta, "data": {"v": value}}
    )


def uid_in(shards: ShardSet, n: int) -> str:
    """The n-th uid (of ``uid-<i>``) whose hash is in ``shards``."""
    found = (f"uid-{i}" for i in range(10_000) if shards.contains(hash_value(f"uid-{i}")))
    return next(itertools.islice(found, n, None))


async def test_a_merge_of_partitions_that_raises_leaves_the_store_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = Store()
    store.add_index("value", lambda o: [o["data"]["v"]])
    a, b, kept = (store.partition(s) for s in (FIRST, SECOND, THIRD))
    a.replace([configmap(f"a{i}", uid_in(FIRST, i), 2 + i) for i in range(3)], "10")
    b.replace([configmap(f"b{i}", uid_in(SECOND, i), 5 + i) for i in range(3)], "12")
    # "x" was recreated into the first range: the kept partition holds its old incarnation
    kept.replace([configmap("x", uid_in(THIRD, 0), 9)], "11")
    listed = [
        configmap("a0", uid_in(FIRST, 0), 14, "2"),  # changed since the partition's list
        configmap("a1", uid_in(FIRST, 1), 3),
        configmap("x", uid_in(FIRST, 3), 13),  # the new incarnation: taken from "kept"
        *(configmap(f"b{i}", uid_in(SECOND, i), 5 + i) for i in range(3)),
    ]  # a2 deleted
    store.list(namespace="ns")  # the namespace index, built
    waiter = asyncio.ensure_future(store.wait_for_resource_version("11"))
    await asyncio.sleep(0)

    def state() -> Any:
        return (
            {o.key: o for o in store.list()},
            {v: sorted(o.key for o in store.by_index("value", v)) for v in ("1", "2")},
            sorted(o.key for o in store.list(namespace="ns")),
            [(p, sorted(p.keys()), p.resource_version, p.detached) for p in store.partitions],
            store.resource_version,
        )

    before = state()
    real_replace = StorePartition.replace

    def failing(self: StorePartition, *args: Any, **kwargs: Any) -> Any:
        real_replace(self, *args, **kwargs)  # every change made, then a failure
        raise RuntimeError("injected")

    monkeypatch.setattr(StorePartition, "replace", failing)
    with pytest.raises(RuntimeError, match="injected"):
        store.merge_partitions([a, b], listed, "15")
    monkeypatch.undo()
    assert state() == before
    assert not waiter.done()  # (the merge had moved the store's RV to 11, then undid it)
    # the old partitions go on as if no merge had been tried
    assert a.apply_event("MODIFIED", configmap("a1", uid_in(FIRST, 1), 16, "2")) is not None
    listed[1] = configmap("a1", uid_in(FIRST, 1), 16, "2")
    merged, deltas = store.merge_partitions([a, b], listed, "17")
    assert sorted((d.type, d.obj.key) for d in deltas) == [
        ("added", "ns/x"),
        ("deleted", "ns/a2"),
        ("deleted", "ns/x"),  # (the old incarnation's tombstone)
        ("updated", "ns/a0"),
    ]
    assert "ns/x" in merged.keys() and "ns/x" not in kept.keys()
    assert a.detached and b.detached and store.partitions == [merged, kept]
    await asyncio.wait_for(waiter, 1)


async def test_ranges_taken_again_are_not_listed_older_than_what_the_handlers_saw() -> None:
    """A range given up after one of its objects was deleted, then taken again while a replica
    serves lists 8 revisions old: the new lane's first list is asked not older than what the
    lanes had seen (NotOlderThan), so the stale answer is refused and the deleted object does
    not come back (no key goes back in time)."""
    async with ApiServer(bookmark_interval=0.2) as server:
        names = [f"cm-{i:03}" for i in range(40)]
        for name in names:
            server.create(CONFIGMAPS, cm(name))
        async with sharded(server, FIRST | SECOND) as (reflector, seen):
            gone = next(k for k in expected(server, FIRST))  # one object of the first range
            server.delete(CONFIGMAPS, gone.split("/")[1], "default")
            for name in names[:6]:  # later changes, so that the list below is older than them
                if f"default/{name}" != gone:
                    server.patch(CONFIGMAPS, name, {"data": {"k": "2"}}, "default")
            await caught_up(server, reflector)
            assert gone not in held(reflector.parent_store)
            reflector.set_shards(SECOND)
            seen.follow(SECOND)
            server.faults.add(Fault(verb="list", page=1, list_lag=8, times=1))
            await take(reflector, FIRST)
            assert seen.violations == []  # the deleted object was not added again
            assert gone not in held(reflector.parent_store)
            assert held(reflector.parent_store) == expected(server, UNION)
            assert reflector.statistics().stale_lists >= 1
