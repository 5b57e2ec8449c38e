"""A lagging replica or a broken one must never move the cache back in time."""

from __future__ import annotations

import itertools

from conftest import cm, relists, running_informer, verbs

from informer.resource import CONFIGMAPS, SECRETS
from informer.resource_version import compare_resource_versions
from informer.testing import ApiServer, Fault


def _monotonic(rvs: list[str]) -> bool:
    return all(compare_resource_versions(a, b) <= 0 for a, b in itertools.pairwise(rvs))


async def test_relist_older_than_cache_is_never_applied() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server) as inf:
            seen: list[str] = [inf.store.resource_version]
            inf.add_handler(
                on_add=lambda o, i: seen.append(inf.store.resource_version),
                on_update=lambda o, n: seen.append(inf.store.resource_version),
                on_delete=lambda o: seen.append(inf.store.resource_version),
            )
            synced_rv = inf.store.resource_version
            # a broken replica answers NotOlderThan relists from 3 revisions ago
            server.faults.add(
                Fault(
                    verb="list",
                    page=1,
                    times=None,
                    predicate=lambda r: r.query.get("resourceVersionMatch") == "NotOlderThan",
                    list_lag=3,
                )
            )
            server.faults.add(Fault(verb="watch", nth=1, status=410))
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            await server.wait_for_requests(lambda r: r.verb == "watch" and r.status == 200)
            stats = inf.statistics()
            assert stats.stale_lists == 2  # retried once, then a consistent read
            assert compare_resource_versions(inf.store.resource_version, synced_rv) >= 0
            assert len(inf.store) == 6
            seen.append(inf.store.resource_version)
            assert _monotonic(seen)
        firsts = [r.query for r in server.requests if r.verb == "list" and r.page == 1]
        assert [q.get("resourceVersionMatch") for q in firsts] == [
            None,
            "NotOlderThan",
            "NotOlderThan",
            None,
        ]


async def test_stale_replica_any_list_then_catches_up_without_going_back() -> None:
    async with ApiServer("stale-replica", too_large_wait=0.01, stale_lag=3) as server:
        for i in range(6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server, initial_list="any") as inf:
            # "any" accepts the replica's stale view explicitly
            assert len(inf.store) == 3
            rvs = [inf.store.resource_version]
            inf.add_handler(on_add=lambda o, i: rvs.append(inf.store.resource_version))
            made = server.create(CONFIGMAPS, cm("c6"))
            for i in range(3):  # writes elsewhere move the lagging view past "c6"
                server.create(SECRETS, {"metadata": {"name": f"s{i}", "namespace": "default"}})
            await inf.wait_for_write(made, timeout=10)
            assert len(inf.store) == 7
            assert _monotonic(rvs)
        assert [r.page for r in server.requests if r.verb == "list"].count(1) == 1


async def test_watch_on_lagging_replica_waits_for_it_then_resumes() -> None:
    async with ApiServer("stale-replica", too_large_wait=0.01, stale_lag=2) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server) as inf:  # consistent: fresh
            # the watch from the fresh RV waits until the lagging cache gets past it
            await server.wait_for_watchers(1)
            made = server.create(CONFIGMAPS, cm("b"))
            for i in range(2):  # writes elsewhere move the lagging view past "b"
                server.create(SECRETS, {"metadata": {"name": f"s{i}", "namespace": "default"}})
            await inf.wait_for_write(made, timeout=10)
            assert verbs(server) == ["list", "watch"]


async def test_watch_504_too_large_retries_then_relists_consistently() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        too_large = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Timeout: Too large resource version: 9, current: 2",
            "reason": "Timeout",
            "details": {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 0,
            },
            "code": 504,
        }
        server.faults.add(Fault(verb="watch", times=3, status=504, status_body=too_large))
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch" and r.status == 200)
            assert inf.statistics().too_large == 3
        # too_large_retries (2) re-watches, then a consistent relist
        assert verbs(server) == ["list", "watch", "watch", "watch", "list", "watch"]
        assert relists(server)[-1].query == {"limit": "2"}
