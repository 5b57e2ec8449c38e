"""Streaming lists (sendInitialEvents): used where supported, detected and avoided where not."""

from __future__ import annotations

from conftest import Recorder, cm, running_informer

from informer.reflector import StreamingState
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault


async def test_modern_server_streams_the_initial_list() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        state_rv = server.format_resource_version(server.revision)
        async with running_informer(server, list_strategy="auto") as inf:
            rec = Recorder()
            rec.attach(inf)
            assert len(inf.store) == 3 and inf.store.resource_version == state_rv
            made = server.create(CONFIGMAPS, cm("later"))  # on the same stream
            await inf.wait_for_write(made, timeout=10)
            await rec.wait(lambda calls: len(calls) == 4)
            assert [c[2] for c in rec.calls[:3]] == [True, True, True]  # initial adds
            stats = inf.statistics()
            assert stats.stream_lists == 1 and stats.streaming_supported is True
        verbs = [r.verb for r in server.requests]
        assert "list" not in verbs and verbs.count("watch") == 1
        q = server.requests[0].query
        assert q["sendInitialEvents"] == "true"
        assert q["resourceVersionMatch"] == "NotOlderThan"
        assert "resourceVersion" not in q  # consistent


async def test_relist_after_410_streams_not_older_than_last_rv() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(
            Fault(
                verb="watch",
                nth=1,
                after_events=1,
                error_event={"kind": "Status", "code": 410, "reason": "Expired", "message": "old"},
            )
        )
        async with running_informer(server, list_strategy="auto") as inf:
            last = server.create(CONFIGMAPS, cm("b"))
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            await inf.wait_for_write(last, timeout=10)
        second = [r for r in server.requests if r.verb == "watch"][1]
        assert second.query["sendInitialEvents"] == "true"
        assert second.query["resourceVersionMatch"] == "NotOlderThan"


async def test_no_watch_list_server_422_falls_back_to_paginated_list() -> None:
    async with ApiServer("no-watch-list", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="watch", nth=2, status=410))  # forces a relist
        async with running_informer(server, list_strategy="auto") as inf:
            rec = Recorder()
            rec.attach(inf)
            await rec.wait(lambda calls: len(calls) == 3)
            assert inf.statistics().streaming_supported is False
            # a relist does not try streaming again: remembered per reflector
            await server.wait_for_requests(lambda r: r.verb == "list" and r.page == 1, count=2)
            await server.wait_for_requests(lambda r: r.verb == "watch" and r.status == 200)
        first = server.requests[0]
        assert first.verb == "watch" and first.status == 422
        streamed = [r for r in server.requests if "sendInitialEvents" in r.query]
        assert len(streamed) == 1
        assert len(rec.calls) == 3  # no duplicate adds for handlers


async def test_server_that_ignores_send_initial_events_silently_pauses_streaming() -> None:
    # legacy ignores everything: synthetic ADDEDs, then silence, no end bookmark (a stall looks
    # the same, so it is a transient failure): after a run of them, a paginated list, no duplicates
    async with ApiServer("legacy", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server, list_strategy="auto") as inf:
            rec = Recorder()
            rec.attach(inf)
            await rec.wait(lambda calls: len(calls) == 3)
            assert inf.statistics().streaming_supported is False
            assert len(inf.store) == 3
            made = server.create(CONFIGMAPS, cm("later"))
            await inf.wait_for_write(made, timeout=10)
            await rec.wait(lambda calls: len(calls) == 4)
        verbs = [r.verb for r in server.requests]
        assert verbs[:4] == ["watch", "watch", "watch", "list"]
        assert inf.statistics().streaming is StreamingState.PAUSED
        assert [c[0] for c in rec.calls] == ["add"] * 4


async def test_server_ignoring_initial_events_is_detected_on_a_busy_resource() -> None:
    # Detection of a server that ignores sendInitialEvents is bounded in time.
    # On a busy resource silence never comes; a change before the end bookmark gives it away.
    async with ApiServer("legacy", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(
            server, sync=False, list_strategy="auto", stream_idle_limit=30.0
        ) as inf:
            await server.wait_for_watchers(1)
            server.replace(CONFIGMAPS, {**cm("a"), "data": {"k": "changed"}})
            await inf.wait_for_sync(timeout=10)
            assert inf.statistics().streaming_supported is False


async def test_server_ignoring_initial_events_is_detected_within_a_total_deadline() -> None:
    async with ApiServer("legacy", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(
            server,
            sync=False,
            list_strategy="auto",
            stream_idle_limit=30.0,
            stream_initial_limit=0.05,
        ) as inf:
            await inf.wait_for_sync(timeout=10)
            assert inf.statistics().streaming_supported is False
