"""The list phase's fallbacks: expired continue tokens, old servers, 504 too large, Exact reads."""

from __future__ import annotations

import pytest
from conftest import cm, relists, running_informer

from informer.pager import ResourceVersionMismatch
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault


def _first_pages(server: ApiServer) -> list[dict[str, str]]:
    return [r.query for r in relists(server)]


async def test_expired_continue_restarts_at_first_page_rv_then_consistent() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(5):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        list_rv = server.format_resource_version(server.revision)
        # the first two continuations expire (410 with an inconsistent token we must not use)
        server.faults.add(Fault(verb="list", page=2, status=410, times=2))
        async with running_informer(server) as inf:
            assert len(inf.store) == 5
            assert inf.statistics().expired == 2
        firsts = _first_pages(server)
        assert firsts[0] == {"limit": "2"}
        # restart at NotOlderThan the first page's RV, never reusing the expired token
        assert firsts[1] == {
            "limit": "2",
            "resourceVersion": list_rv,
            "resourceVersionMatch": "NotOlderThan",
        }
        assert firsts[2] == {"limit": "2"}  # then a consistent read
        conts = [r for r in server.requests if r.verb == "list" and r.page and r.page > 1]
        assert all("resourceVersion" not in r.query for r in conts)


async def test_expired_continue_three_times_falls_back_to_one_unpaginated_list() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(5):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="list", page=2, status=410, times=3))
        async with running_informer(server) as inf:
            assert len(inf.store) == 5
        firsts = _first_pages(server)
        assert firsts[-1] == {}  # consistent, no limit: nothing left to expire


async def test_legacy_server_not_older_than_with_limit_410_falls_back_to_consistent() -> None:
    async with ApiServer("legacy", too_large_wait=0.01, compaction_window=3) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", nth=1, close_after_events=1))
        server.faults.add(Fault(verb="watch", nth=2, status=410))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            last = server.create(CONFIGMAPS, cm("b"))
            for i in range(5):  # push the informer's RV out of the legacy server's history
                server.create(CONFIGMAPS, cm(f"x{i}"))
            await server.wait_for_requests(lambda r: r in relists(server), count=3)
            await inf.wait_for_resource_version(server.format_resource_version(server.revision))
            assert len(inf.store) == 7
        firsts = _first_pages(server)
        # relist asked NotOlderThan + limit; the legacy server applied Exact and said 410
        assert firsts[1]["resourceVersion"] == last["metadata"]["resourceVersion"]
        assert firsts[1]["resourceVersionMatch"] == "NotOlderThan"
        relist_answer = relists(server)[1]
        assert relist_answer.status == 410
        assert firsts[2] == {"limit": "2"}  # KEP-2523: retry with RV unset


async def test_too_large_resource_version_honours_retry_after_then_consistent() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", nth=1, status=410))
        # every NotOlderThan relist is answered 504 too large
        server.faults.add(
            Fault(
                verb="list",
                page=1,
                times=None,
                predicate=lambda r: r.query.get("resourceVersionMatch") == "NotOlderThan",
                status=504,
                status_body={
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "Timeout: Too large resource version: 99, current: 2",
                    "reason": "Timeout",
                    "details": {
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 0,
                    },
                    "code": 504,
                },
            )
        )
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            assert inf.statistics().too_large == 2  # too_large_retries in FAST
        firsts = _first_pages(server)
        assert [q.get("resourceVersionMatch") for q in firsts] == [
            None,
            "NotOlderThan",
            "NotOlderThan",
            None,
        ]


async def test_list_exact_verifies_and_falls_back_to_limit_on_legacy() -> None:
    async with ApiServer("legacy", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        rv = server.format_resource_version(server.revision)
        server.create(CONFIGMAPS, cm("b"))
        async with running_informer(server) as inf:
            snap = await inf.reflector.list_exact(rv)
            assert snap.resource_version == rv
            assert [o.name for o in snap.items] == ["a"]
        exact = [r.query for r in server.requests if r.query.get("resourceVersionMatch") == "Exact"]
        assert "limit" not in exact[0]  # first try: no limit, the legacy server ignores Exact
        assert exact[1]["limit"] == "2"  # then with a limit: Exact on old servers


async def test_list_exact_on_modern_needs_one_request() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        rv = server.format_resource_version(server.revision)
        server.create(CONFIGMAPS, cm("b"))
        async with running_informer(server) as inf:
            snap = await inf.reflector.list_exact(rv)
        assert [o.name for o in snap.items] == ["a"]
        exact = [r for r in server.requests if r.query.get("resourceVersionMatch") == "Exact"]
        assert len(exact) == 1


async def test_list_exact_second_mismatch_is_a_typed_error() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        rv = server.format_resource_version(server.revision)
        server.create(CONFIGMAPS, cm("b"))
        server.create(CONFIGMAPS, cm("c"))
        async with running_informer(server) as inf:
            # a broken replica that serves every Exact list at the newest revision
            server.faults.add(
                Fault(
                    verb="list",
                    times=None,
                    predicate=lambda r: r.query.get("resourceVersionMatch") == "Exact",
                    list_lag=0,
                )
            )
            with pytest.raises(ResourceVersionMismatch) as err:
                await inf.reflector.list_exact(rv)
            assert err.value.wanted == rv
