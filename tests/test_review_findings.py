"""Review findings: each test shows a bug or a spec gap (they fail until the code is fixed)."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import cm, relists, running_informer

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault


async def test_consistent_list_410_again_and_again_backs_off() -> None:
    # A consistent list answering 410 every time (a broken proxy, a misbehaving aggregated API)
    # must not make the reflector hammer the server in a tight loop: it must back off.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=410, times=None))
        async with running_informer(server, sync=False) as inf:
            await server.wait_for_requests(lambda r: r.verb == "list", count=6)
            assert inf.reflector._backoff.attempt >= 1, "6 failed lists, not one backoff"


async def test_watch_410_again_and_again_backs_off() -> None:
    # list OK, watch 410, relist OK, watch 410, ... : client-go backs off between ListAndWatch
    # rounds; here every round is immediate, forever.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", status=410, times=None))
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=5)
            assert len(relists(server)) >= 4
            assert inf.reflector._backoff.attempt >= 1, "5 list+410 rounds, not one backoff"


async def test_streaming_list_410_error_event_again_and_again_backs_off() -> None:
    # auto strategy on a modern server: the streaming list's stream answers an ERROR 410 each time
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(
            Fault(
                verb="watch",
                times=None,
                error_event={"kind": "Status", "code": 410, "reason": "Expired", "message": "old"},
            )
        )
        async with running_informer(server, sync=False, list_strategy="auto") as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=6)
            assert inf.reflector._backoff.attempt >= 1, "6 expired streams, not one backoff"


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


async def test_wait_for_deletion_does_not_claim_a_delete_the_cache_has_not_seen() -> None:
    # Read-your-writes for a delete: when wait_for_deletion returns, the cache must have caught up
    # to the delete. Here the cache has not even seen the create yet: it returns at once, and the
    # object then appears in the cache (ADDED) after the caller was told it is gone.
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            server.create(CONFIGMAPS, cm("a"))
            deleted = server.delete(CONFIGMAPS, "a", namespace="default")
            await inf.wait_for_deletion(deleted, timeout=10)
            assert inf.store.is_fresh(deleted["metadata"]["resourceVersion"]), (
                f"returned with cache RV {inf.store.resource_version}, delete at "
                f"{deleted['metadata']['resourceVersion']}"
            )


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


async def test_streaming_detection_is_bounded_in_time_on_a_busy_resource() -> None:
    # Issue 4 item 8: detection of a server that ignores sendInitialEvents is bounded in time.
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


async def test_streaming_detection_has_a_total_deadline() -> None:
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
