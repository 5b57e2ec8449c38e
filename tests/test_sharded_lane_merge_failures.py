"""Lane merges that fail, through real HTTP: a merge whose list of the union keeps failing (a 500,
a 403, a 410, a connection cut mid-answer, a request timing out) is given up after
``lane_merge_attempts`` failed lists (logged, counted; the old lanes keep running) and tried
again later, with the reflector's backoff.

The invariant is in ``informer.reflector._sharded``'s docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import Any

import pytest

from informer._log import capture_logs
from informer.reflector import ShardedReflector
from informer.resource import CONFIGMAPS
from informer.store import Store
from informer.testing import ApiServer, Fault, RecordedRequest
from informer.transport import Transport
from tests.conftest import cm, wait_until
from tests.test_sharded_lane_merge import (
    FIRST,
    MERGE_AT_ONCE,
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
    assert values["informer_shard_lanes"] == 2
