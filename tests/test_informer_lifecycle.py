"""Informer lifecycle: start, stop, run and ``async with``, alone and interleaved."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import cm, running_informer

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer


async def test_run_while_running_is_refused() -> None:
    # A second run() started a second reflector on the same store; when either ended, it stopped
    # the handlers of the other one.
    async with ApiServer(too_large_wait=0.01) as server, running_informer(server) as inf:
        await server.wait_for_watchers(1)
        async with asyncio.timeout(5):  # bounds a hang only
            with pytest.raises(RuntimeError, match="already running"):
                await inf.run()
        assert server.watcher_count(CONFIGMAPS) == 1


async def test_stop_right_after_start_allows_a_new_start() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False) as inf:
            await inf.stop()  # the task never ran
            inf.start()
            await inf.wait_for_sync(timeout=10)
            assert inf.store.keys() == ["default/a"]


async def test_stop_then_start_redelivers_what_a_handler_was_interrupted_in() -> None:
    # stop() cancels a handler in the middle of a delivery: that change was taken off its queue
    # and, after a restart, never came again (the cache already holds it, so no relist delta).
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False) as inf:
            started = asyncio.Event()
            release = asyncio.Event()
            done: list[str] = []

            async def on_add(obj: Any, initial: bool) -> None:
                started.set()
                await release.wait()
                done.append(obj.name)

            handler = inf.add_handler(on_add)
            async with asyncio.timeout(10):
                await started.wait()
            await inf.stop()  # interrupts the delivery of "a"
            release.set()
            inf.start()
            async with asyncio.timeout(10):
                await handler.wait_idle()
                while not done:  # noqa: ASYNC110 - the handler appends after wait_idle's wakeup
                    await asyncio.sleep(0)
            assert done == ["a"]
