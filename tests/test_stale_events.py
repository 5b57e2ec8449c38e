"""Stale and duplicate events are dropped and counted; the cache never goes back in time."""

from __future__ import annotations

from conftest import Recorder, cm, running_informer, verbs

from informer.resource import CONFIGMAPS
from informer.resource_version import compare_resource_versions
from informer.testing import ApiServer, Fault


async def test_replayed_stale_event_is_dropped() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", nth=1, after_events=2, replay_stale=True))
        async with running_informer(server) as inf:
            rec = Recorder()
            rec.attach(inf)
            await server.wait_for_watchers(1)
            server.create(CONFIGMAPS, cm("a"))
            server.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
            last = server.create(CONFIGMAPS, cm("b"))  # after the replayed ADDED of "a"
            await inf.wait_for_resource_version(last["metadata"]["resourceVersion"], timeout=10)
            assert inf.statistics().stale_events_dropped == 1
            assert inf.store.get("a", "default")["data"] == {"k": "2"}  # type: ignore[index]
            await rec.wait(lambda calls: len(calls) >= 2 and calls[-1][1].name == "b")
            assert [c[0] for c in rec.calls].count("update") <= 1


async def test_duplicate_events_are_dropped() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", nth=1, duplicate_events=True))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            for i in range(3):
                server.create(CONFIGMAPS, cm(f"c{i}"))
            last = server.patch(CONFIGMAPS, "c0", {"data": {"k": "x"}}, namespace="default")
            await inf.wait_for_resource_version(last["metadata"]["resourceVersion"], timeout=10)
            stats = inf.statistics()
            assert stats.events_applied == 4
            assert stats.stale_events_dropped + stats.duplicate_events_dropped == 4


async def test_rewatch_after_connection_cut_resumes_from_last_rv_without_loss() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", nth=1, after_events=2, cut_mid_line=True))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = [server.create(CONFIGMAPS, cm(f"c{i}")) for i in range(5)]
            await inf.wait_for_resource_version(made[-1]["metadata"]["resourceVersion"], timeout=10)
            assert sorted(o.name for o in inf.store.list()) == [f"c{i}" for i in range(5)]
            watches = await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            # the second watch starts from the last event actually processed, not from the list
            second_rv = watches[1].query["resourceVersion"]
            assert compare_resource_versions(second_rv, watches[0].query["resourceVersion"]) >= 0
            assert verbs(server).count("list") == 1  # no relist (a probe checks the server's RV)
            assert inf.statistics().errors == 1


async def test_malformed_line_is_a_counted_recovery() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", nth=1, after_events=1, malformed_line=True))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = [server.create(CONFIGMAPS, cm(f"c{i}")) for i in range(3)]
            await inf.wait_for_resource_version(made[-1]["metadata"]["resourceVersion"], timeout=10)
            assert len(inf.store) == 3
            assert inf.statistics().errors == 1
            assert verbs(server).count("list") == 1
