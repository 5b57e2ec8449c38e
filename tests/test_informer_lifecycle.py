"""Informer lifecycle: start, stop, run and ``async with``, alone and interleaved.

One explicit state (``InformerState``): every interleaving of these calls from several tasks ends
in a well-defined state, with at most one reflector writing the store and every handler alive
whenever the informer runs. Waits are on events and server conditions; ``asyncio.timeout`` only
bounds a hang.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import FAST, cm, running_informer
from hypothesis import given, settings

from informer.informer import Informer, InformerState, SharedInformerFactory
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from tests.lifecycle_helpers import OPS, interleaved


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


# -- helpers --------------------------------------------------------------------------------------
def informer_tasks() -> list[asyncio.Task[Any]]:
    """The informer's own tasks still alive (its driver and its handlers)."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("informer-") and not t.done()]


class Seen:
    """A handler recording the names it was told about; ``await seen.wait(name)``."""

    def __init__(self, inf: Informer) -> None:
        self.names: list[str] = []
        self._changed = asyncio.Event()
        inf.add_handler(self._add, name="seen")

    def _add(self, obj: Any, initial: bool) -> None:
        self.names.append(obj.name)
        self._changed.set()

    async def wait(self, name: str) -> None:
        async with asyncio.timeout(10):
            while name not in self.names:
                self._changed.clear()
                await self._changed.wait()


async def assert_running_with_one_reflector(server: ApiServer, inf: Informer, seen: Seen) -> None:
    """Running: one watch open, and a change made now reaches the cache and the handler."""
    assert inf.state is InformerState.RUNNING
    await server.wait_for_watchers(1, CONFIGMAPS)
    name = f"probe-{server.revision}"
    await inf.wait_for_write(server.create(CONFIGMAPS, cm(name)), timeout=10)
    await seen.wait(name)
    assert server.watcher_count(CONFIGMAPS) == 1


# -- interleavings --------------------------------------------------------------------------------
async def test_concurrent_stops_all_return_once_stopped() -> None:
    async with ApiServer(too_large_wait=0.01) as server, running_informer(server) as inf:
        await server.wait_for_watchers(1)
        states: list[tuple[InformerState, int]] = []

        async def stop() -> None:
            await inf.stop()
            states.append((inf.state, len(informer_tasks())))

        async with asyncio.timeout(10):
            await asyncio.gather(stop(), stop(), stop())
        assert states == [(InformerState.STOPPED, 0)] * 3


async def test_start_during_stop_runs_again_with_one_reflector_and_live_handlers() -> None:
    async with ApiServer(too_large_wait=0.01) as server, running_informer(server) as inf:
        seen = Seen(inf)
        await server.wait_for_watchers(1)
        stopping = asyncio.create_task(inf.stop())
        await asyncio.sleep(0)  # a yield: the stop has begun
        assert inf.state is InformerState.STOPPING
        inf.start()
        assert inf.state is InformerState.RUNNING
        async with asyncio.timeout(10):
            await stopping
        await assert_running_with_one_reflector(server, inf, seen)
        with pytest.raises(RuntimeError, match="already running"):
            await inf.run()  # still refused: the new start drives it
    assert inf.state is InformerState.STOPPED and informer_tasks() == []


async def test_stop_ends_an_informer_driven_by_run() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        api = server.api_client()
        try:
            inf = Informer(api, CONFIGMAPS, options=FAST)
            running = asyncio.create_task(inf.run())
            await inf.wait_for_sync(timeout=10)
            await server.wait_for_watchers(1)
            assert inf.state is InformerState.RUNNING
            async with asyncio.timeout(10):
                await inf.stop()
                assert await running is None  # run() returns: it was stopped, not cancelled
            assert inf.state is InformerState.STOPPED and informer_tasks() == []
            await server.wait_for_watchers_closed(CONFIGMAPS)
        finally:
            await api.close()


async def test_cancelling_run_stops_only_its_own_start() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        api = server.api_client()
        try:
            inf = Informer(api, CONFIGMAPS, options=FAST)
            seen = Seen(inf)
            running = asyncio.create_task(inf.run())
            await inf.wait_for_sync(timeout=10)
            stopping = asyncio.create_task(inf.stop())
            await asyncio.sleep(0)
            inf.start()  # a later start replaces run()'s
            running.cancel()
            async with asyncio.timeout(10):
                await stopping
                with pytest.raises(asyncio.CancelledError):
                    await running
            await assert_running_with_one_reflector(server, inf, seen)
            await inf.stop()
        finally:
            await api.close()


async def test_leader_losing_and_regaining_the_lease_quickly_keeps_one_live_informer() -> None:
    # on_stopped_leading stops the informers, on_started_leading starts them: a flapping lease
    # interleaves both from the elector's tasks before any of the stops has ended.
    async with ApiServer(too_large_wait=0.01) as server, running_informer(server) as inf:
        seen = Seen(inf)
        await server.wait_for_watchers(1)
        stops = []
        for _ in range(3):
            stops.append(asyncio.create_task(inf.stop()))  # lease lost
            await asyncio.sleep(0)
            inf.start()  # lease regained
        async with asyncio.timeout(10):
            await asyncio.gather(*stops)
        await assert_running_with_one_reflector(server, inf, seen)
        assert len([t for t in informer_tasks() if t.get_name() == "informer-configmaps"]) == 1


async def test_factory_start_during_stop_runs_again_and_concurrent_stops_wait() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        api = server.api_client()
        try:
            factory = SharedInformerFactory(api, options=FAST)
            inf = factory.informer(CONFIGMAPS)
            seen = Seen(inf)
            factory.start()
            await factory.wait_for_sync(timeout=10)
            stopping = asyncio.create_task(factory.stop())
            await asyncio.sleep(0)
            assert factory.state is InformerState.STOPPING
            factory.start()
            async with asyncio.timeout(10):
                await stopping
            assert factory.state is InformerState.RUNNING
            await assert_running_with_one_reflector(server, inf, seen)
            async with asyncio.timeout(10):
                await asyncio.gather(factory.stop(), factory.stop())
            assert factory.state is InformerState.STOPPED and inf.state is InformerState.STOPPED
            assert informer_tasks() == []
        finally:
            await api.close()


# -- generated interleavings ----------------------------------------------------------------------
@settings(max_examples=30, database=None)
@given(ops=OPS)
def test_any_interleaving_ends_in_the_state_of_the_last_call(ops: list[tuple[str, int]]) -> None:
    asyncio.run(_interleave(ops))


async def _interleave(ops: list[tuple[str, int]]) -> None:
    """The calls interleaved as ``lifecycle_helpers.interleaved`` makes them, against its model;
    running means one watch and live handlers, stopped no task left."""
    async with ApiServer(too_large_wait=0.01) as server:
        api = server.api_client()
        inf = Informer(api, CONFIGMAPS, options=FAST)
        seen = Seen(inf)

        def stopped(effective: list[tuple[str, int]], step: tuple[str, int]) -> bool:
            # returned once stopped, unless a later call started it again or is stopping it
            return inf.state is InformerState.STOPPED or effective[-1] != step

        try:
            async with interleaved(inf, ops, stopped) as out:
                state = InformerState.RUNNING if out.running else InformerState.STOPPED
                assert inf.state is state, (out.effective, inf.state)
                drivers = [t for t in informer_tasks() if t.get_name() == "informer-configmaps"]
                if state is InformerState.RUNNING:
                    assert len(drivers) == 1
                    await assert_running_with_one_reflector(server, inf, seen)
                else:
                    assert drivers == []
                async with asyncio.timeout(10):
                    await inf.stop()
                    if out.driver is not None:
                        assert await out.runs[out.driver] is None
                assert inf.state is InformerState.STOPPED and informer_tasks() == []
        finally:
            await api.close()
