"""How the watch phase recovers: re-watch without relist where nothing can have been lost."""

from __future__ import annotations

from conftest import cm, running_informer, verbs, wait_until

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault


async def test_429_waits_and_rewatches_without_relist() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(
            Fault(
                verb="watch",
                nth=1,
                times=2,
                status=429,
                text_body="Too many requests, please try again later.\n",
                retry_after=0,
            )
        )
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = server.create(CONFIGMAPS, cm("b"))
            await inf.wait_for_resource_version(made["metadata"]["resourceVersion"], timeout=10)
        assert verbs(server) == ["list", "watch", "watch", "watch"]
        assert [r.status for r in server.requests if r.verb == "watch"] == [429, 429, 200]
        rvs = {r.query["resourceVersion"] for r in server.requests if r.verb == "watch"}
        assert len(rvs) == 1  # all from the list's RV


async def test_clean_end_rewatches_from_last_rv_without_list() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", nth=1, close_after_events=2))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = [server.create(CONFIGMAPS, cm(f"c{i}")) for i in range(4)]
            await inf.wait_for_resource_version(made[-1]["metadata"]["resourceVersion"], timeout=10)
        watches = [r for r in server.requests if r.verb == "watch"]
        assert verbs(server)[:4] == ["list", "watch", "probe", "watch"]
        assert watches[1].query["resourceVersion"] == made[1]["metadata"]["resourceVersion"]


async def test_server_timeout_ends_watch_and_rewatch_follows() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, watch_timeout=(1, 1)) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            assert inf.statistics().watches >= 2
        assert verbs(server).count("list") == 1


async def test_silent_stream_is_detected_and_rewatched() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", nth=1, stall=30.0))
        async with running_informer(server, idle_timeout=0.2) as inf:
            await server.wait_for_watchers(1)
            made = server.create(CONFIGMAPS, cm("a"))  # held back by the stalled stream
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            await inf.wait_for_resource_version(made["metadata"]["resourceVersion"], timeout=10)
            stats = inf.statistics()
            assert stats.idle_rewatches == 1 and stats.errors == 0  # not an error: re-watched
        assert verbs(server).count("list") == 1


async def test_5xx_on_watch_backs_off_and_relists() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", nth=1, status=500))
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch" and r.status == 200)
            assert inf.statistics().errors == 1
        assert verbs(server)[:4] == ["list", "watch", "list", "watch"]


async def test_error_event_other_than_410_relists() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": 500,
            "reason": "InternalError",
            "message": "boom",
        }
        server.faults.add(Fault(verb="watch", nth=1, error_event=status))
        async with running_informer(server):
            await server.wait_for_requests(lambda r: r.verb == "list", count=2)


async def test_connection_refused_backs_off_and_recovers() -> None:
    server = ApiServer(too_large_wait=0.01)
    await server.start()
    port = server.port
    server.create(CONFIGMAPS, cm("a"))
    try:
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            await server.stop()  # the watch ends; re-watches are refused
            await wait_until(lambda: inf.statistics().errors >= 2)
            server2 = ApiServer(too_large_wait=0.01, port=port)
            await server2.start()
            try:
                server2.create(CONFIGMAPS, cm("a"))
                made = server2.create(CONFIGMAPS, cm("b"))
                await inf.wait_for_resource_version(made["metadata"]["resourceVersion"], 10)
                assert verbs(server2) == ["probe", "watch"]  # resumed, no relist
            finally:
                await server2.stop()
    finally:
        await server.stop()


async def test_quick_empty_watch_ends_back_off() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", times=5, close_after_events=0))
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=6)
            assert inf.reflector._backoff.attempt >= 1
        assert verbs(server).count("list") == 1
