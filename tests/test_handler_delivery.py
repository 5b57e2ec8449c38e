"""A list's changes reach a handler in the list's order, each once; a live change that arrives
while they are still pending coalesces with its object's listed change as any queued change does;
a stop in the middle of a list's delivery delivers the interrupted change and the rest again
after a restart. Over HTTP, against the test API server; handlers block on events, never sleep.
"""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import cm, running_informer

from informer.objects import KubeObject
from informer.resource import CONFIGMAPS
from informer.store import Delta
from informer.testing import ApiServer

NAMES = [f"c{i:02d}" for i in range(30)]


async def test_a_list_reaches_a_handler_in_order_each_object_once() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for name in NAMES:
            server.create(CONFIGMAPS, cm(name))
        async with running_informer(server, sync=False) as inf:
            seen: list[Delta] = []
            handler = inf.add_delta_handler(seen.append)
            await inf.wait_for_sync(timeout=10)
            async with asyncio.timeout(10):
                await handler.wait_idle()
            assert [d.obj.key for d in seen] == [f"default/{n}" for n in NAMES]
            assert all(d.type == "added" and d.is_initial and d.from_list for d in seen)
            stats = handler.statistics()
            assert (stats.delivered, stats.pending, stats.coalesced) == (30, 0, 0)
            assert stats.latency.count >= 1


async def test_a_live_change_behind_a_pending_list_coalesces_with_the_listed_one() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for name in NAMES:
            server.create(CONFIGMAPS, cm(name))
        async with running_informer(server, sync=False) as inf:
            started, release = asyncio.Event(), asyncio.Event()
            seen: list[Delta] = []

            async def deliver(delta: Delta) -> None:
                started.set()
                await release.wait()
                seen.append(delta)

            handler = inf.add_delta_handler(deliver)
            async with asyncio.timeout(10):
                await started.wait()  # blocked in the first listed object
            assert handler.statistics().pending == 29
            changed = dict(cm("c10"), data={"v": "2"})
            await inf.wait_for_write(server.replace(CONFIGMAPS, changed), timeout=10)
            stats = handler.statistics()
            assert (stats.pending, stats.coalesced) == (29, 1)
            release.set()
            async with asyncio.timeout(10):
                await handler.wait_idle()
            assert [d.obj.key for d in seen] == [f"default/{n}" for n in NAMES]
            c10 = seen[10]
            assert isinstance(c10.obj, KubeObject)
            assert (c10.type, c10.obj["data"], c10.is_initial) == ("added", {"v": "2"}, True)
            assert not c10.from_list  # it holds a live change
            assert all(d.from_list for d in seen[:10] + seen[11:])
            assert handler.statistics().delivered == 30


async def test_a_stop_during_a_list_redelivers_the_interrupted_change_and_the_rest() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for name in NAMES:
            server.create(CONFIGMAPS, cm(name))
        async with running_informer(server, sync=False) as inf:
            blocked, release = asyncio.Event(), asyncio.Event()
            done: list[str] = []

            async def on_add(obj: Any, initial: bool) -> None:
                if obj.name == "c03" and not release.is_set():
                    blocked.set()
                    await release.wait()
                done.append(obj.name)

            handler = inf.add_handler(on_add)
            async with asyncio.timeout(10):
                await blocked.wait()
            await inf.stop()  # interrupts the delivery of c03
            assert done == NAMES[:3]
            assert handler.statistics().pending == 27
            release.set()
            inf.start()
            async with asyncio.timeout(10):
                await inf.wait_for_sync()
                await handler.wait_idle()
                while len(done) < 30:  # noqa: ASYNC110 - the handler appends after the wakeup
                    await asyncio.sleep(0)
            assert done == NAMES
