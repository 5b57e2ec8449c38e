"""Controller lifecycle through real HTTP: a worker dies only of its own cancellation, a run that
can no longer reconcile fails loudly, ``stop()`` means stopped (for every concurrent caller, and
for a controller driven by ``run()``), one queue for the controller's life, and any interleaving
of start/stop/run/``async with`` from several tasks ends in a defined state (generated).

Waits are on events and server conditions; ``asyncio.timeout`` only bounds a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given, settings

from informer import LEASES, Client, LeaderElector
from informer._log import capture_logs
from informer.controller import Controller, ControllerState, Request
from informer.informer import Informer
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.transport import Transport
from informer.workqueue import ExponentialBackoff, ManualClock
from tests.conftest import ELECTION, FAST, cm, wait_until
from tests.lifecycle_helpers import OPS, interleaved

QUICK_RETRY = ExponentialBackoff(0.001, 0.001)


class Fatal(BaseException):
    """Not an ``Exception``: a reconcile cannot be retried past it (like ``SystemExit``)."""


@asynccontextmanager
async def configmaps(server: ApiServer) -> AsyncIterator[Informer]:
    api = server.api_client()
    try:
        async with Informer(Transport(api), CONFIGMAPS, options=FAST) as inf:
            yield inf
    finally:
        await api.close()


def controller_tasks() -> list[asyncio.Task[Any]]:
    """The controllers' own tasks still alive (drivers, workers, resync loops)."""
    return [
        t for t in asyncio.all_tasks() if t.get_name().startswith("controller-") and not t.done()
    ]


def controller_handlers(inf: Informer) -> int:
    return sum(1 for h in inf.handlers if h.name.startswith("controller-"))


# -- a reconcile's CancelledError ------------------------------------------------------------------
async def test_a_reconcile_that_awaited_a_cancelled_future_is_retried_not_fatal(
    api_server: ApiServer,
) -> None:
    # the reconcile awaits a lookup another task cancelled: CancelledError escapes it although
    # its worker was never cancelled. The worker lives on and the key is retried with backoff.
    api_server.create(CONFIGMAPS, cm("a"))
    attempts: list[str] = []
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> None:
            attempts.append(request.name)
            if len(attempts) == 1:
                shared = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().call_soon(shared.cancel)  # someone else's cancel
                await shared

        ctl = Controller(reconcile, for_=inf, rate_limiter=QUICK_RETRY)
        with capture_logs() as logs:
            running = asyncio.create_task(ctl.run())
            await wait_until(lambda: ctl.statistics().succeeded == 1)
            assert not running.done() and ctl.state is ControllerState.RUNNING
            api_server.create(CONFIGMAPS, cm("b"))  # the one worker still takes new keys
            await wait_until(lambda: ctl.statistics().succeeded == 2)
            async with asyncio.timeout(10):
                await ctl.stop()
                assert await running is None
    stats = ctl.statistics()
    assert attempts == ["a", "a", "b"]
    assert (stats.errors, stats.cancelled, stats.succeeded) == (1, 0, 2)
    reconciled = [e for e in logs if e["event"] == "controller.reconciled"]
    [failure] = [e for e in reconciled if e["result"] == "error"]
    assert failure["key"] == "default/a" and failure["error"].startswith("CancelledError")


async def test_a_stop_still_cancels_a_reconcile_past_the_shutdown_deadline(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, cm("a"))
    started = asyncio.Event()
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> None:
            started.set()
            await asyncio.Event().wait()

        ctl = Controller(reconcile, for_=inf, shutdown_timeout=0.01)
        running = asyncio.create_task(ctl.run())
        async with asyncio.timeout(10):
            await started.wait()
            await ctl.stop()
            assert await running is None
    stats = ctl.statistics()
    assert (stats.cancelled, stats.errors, ctl.state) == (1, 0, ControllerState.STOPPED)
    assert controller_tasks() == []


# -- a run that can no longer reconcile ----------------------------------------------------------
async def test_a_run_whose_worker_died_raises_instead_of_returning(api_server: ApiServer) -> None:
    api_server.create(CONFIGMAPS, cm("a"))
    api_server.create(CONFIGMAPS, cm("b"))
    release = asyncio.Event()
    finished: list[str] = []
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> None:
            if request.name == "a":
                raise Fatal
            await release.wait()  # in flight on the other worker when the run fails
            finished.append(request.name)

        ctl = Controller(reconcile, for_=inf, workers=2)
        running = asyncio.create_task(ctl.run())
        await wait_until(lambda: ctl.state is ControllerState.STOPPING)
        release.set()  # the run stops gracefully: the reconcile in flight finishes
        async with asyncio.timeout(10):
            with pytest.raises(Fatal):
                await running
    assert finished == ["b"]
    assert ctl.state is ControllerState.FAILED and isinstance(ctl.error, Fatal)
    assert controller_tasks() == [] and controller_handlers(inf) == 0


async def test_a_run_whose_worker_was_cancelled_by_someone_else_raises(
    api_server: ApiServer,
) -> None:
    async with configmaps(api_server) as inf:
        ctl = Controller(lambda r: asyncio.sleep(0), for_=inf, workers=2)
        running = asyncio.create_task(ctl.run())
        await ctl.wait_running(timeout=10)
        [worker] = [t for t in controller_tasks() if t.get_name() == "controller-configmap-1"]
        worker.cancel()  # not a stop: the run has one worker less than it was asked for
        async with asyncio.timeout(10):
            with pytest.raises(RuntimeError, match="controller-configmap-1 cancelled"):
                await running
    assert ctl.state is ControllerState.FAILED and controller_tasks() == []


async def test_a_started_controller_whose_worker_died_fails_and_stop_raises_it(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, cm("a"))
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> None:
            raise Fatal

        ctl = Controller(reconcile, for_=inf)
        with capture_logs() as logs:
            ctl.start()
            await wait_until(lambda: ctl.state is ControllerState.FAILED)
            with pytest.raises(Fatal):
                await ctl.stop()
            await ctl.stop()  # reported once
        assert [e["event"] for e in logs if e["log_level"] == "error"] == ["controller.failed"]
        assert [e["log_level"] for e in logs if e["event"] == "controller.worker_ended"] == [
            "warning"  # which worker ended and why; one failure, one error line
        ]
        api_server.create(CONFIGMAPS, cm("b"))
        ctl.reconcile = lambda request: asyncio.sleep(0)
        async with ctl:  # a failed controller can be started again
            await wait_until(lambda: ctl.statistics().succeeded == 2)
            assert ctl.error is None


async def test_a_leader_whose_controller_died_gives_up_its_lease(api_server: ApiServer) -> None:
    # under LeaderElector.run(on_started_leading=ctl.run), a controller reconciling nothing must
    # not keep renewing: its run raises, the elector ends the term and releases the Lease
    api_server.create(CONFIGMAPS, cm("a"))
    api = api_server.api_client()
    try:
        async with configmaps(api_server) as inf:

            async def reconcile(request: Request) -> None:
                raise Fatal

            ctl = Controller(reconcile, for_=inf)
            elector = LeaderElector(Client(api), "ctl", "default", identity="one", **ELECTION)
            async with asyncio.timeout(10):
                with pytest.raises(Fatal):
                    await elector.run(on_started_leading=ctl.run)
        lease = api_server.get(LEASES, "ctl", namespace="default")
        assert lease is not None and not lease["spec"].get("holderIdentity")
    finally:
        await api.close()


# -- stop() means stopped ------------------------------------------------------------------------
async def test_concurrent_stops_all_return_once_the_reconcile_in_flight_finished(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, cm("a"))
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> None:
            started.set()
            await release.wait()
            finished.append(request.name)

        ctl = Controller(reconcile, for_=inf)
        ctl.start()
        async with asyncio.timeout(10):
            await started.wait()
        returned: list[tuple[ControllerState, list[str], int]] = []

        async def stop() -> None:
            await ctl.stop()
            returned.append((ctl.state, list(finished), len(controller_tasks())))

        stops = [asyncio.create_task(stop()) for _ in range(3)]
        await wait_until(lambda: ctl.state is ControllerState.STOPPING)
        for _ in range(5):
            await asyncio.sleep(0)  # yields: a stop that does not wait returns meanwhile
        release.set()
        async with asyncio.timeout(10):
            await asyncio.gather(*stops)
    assert returned == [(ControllerState.STOPPED, ["a"], 0)] * 3


async def test_stop_ends_a_controller_driven_by_run(api_server: ApiServer) -> None:
    api_server.create(CONFIGMAPS, cm("a"))
    async with configmaps(api_server) as inf:
        ctl = Controller(lambda r: asyncio.sleep(0), for_=inf)
        running = asyncio.create_task(ctl.run())
        await wait_until(lambda: ctl.statistics().succeeded == 1)
        async with asyncio.timeout(10):
            await ctl.stop()
            assert ctl.state is ControllerState.STOPPED
            assert await running is None  # stopped, not cancelled
        assert controller_tasks() == [] and controller_handlers(inf) == 0


async def test_a_cancelled_run_returns_only_after_its_reconcile_finished(
    api_server: ApiServer,
) -> None:
    # a leader's term ends by cancelling run(): when run() is done, nothing reconciles any more,
    # even when it is cancelled again while it stops
    api_server.create(CONFIGMAPS, cm("a"))
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> None:
            started.set()
            await release.wait()
            finished.append(request.name)

        ctl = Controller(reconcile, for_=inf)
        running = asyncio.create_task(ctl.run())
        async with asyncio.timeout(10):
            await started.wait()
        running.cancel()
        await wait_until(lambda: ctl.state is ControllerState.STOPPING)
        running.cancel()  # again
        for _ in range(5):
            await asyncio.sleep(0)
        assert not running.done()
        release.set()
        async with asyncio.timeout(10):
            with pytest.raises(asyncio.CancelledError):
                await running
    assert finished == ["a"] and ctl.state is ControllerState.STOPPED


# -- one queue for the controller's life ----------------------------------------------------------
async def test_the_queue_and_its_counters_last_across_runs_and_a_new_run_drops_stale_keys(
    api_server: ApiServer,
) -> None:
    # e.g. a leadership change: the work-queue series keep counting; what the last term left
    # queued (here a requeue-after an hour away) is dropped, the caches' state queued instead
    clock = ManualClock()
    api_server.create(CONFIGMAPS, cm("a"))
    async with configmaps(api_server) as inf:

        async def reconcile(request: Request) -> float:
            return 3600.0

        ctl = Controller(reconcile, for_=inf, clock=clock)
        queue = ctl.queue
        async with ctl:
            await wait_until(lambda: ctl.queue.statistics().waiting == 1)
        first = ctl.statistics()
        api_server.create(CONFIGMAPS, cm("b"))
        await inf.wait_for_resource_version(
            api_server.format_resource_version(api_server.revision), timeout=10
        )
        running = asyncio.create_task(ctl.run())
        await wait_until(lambda: ctl.statistics().requeued_after == 3)
        await wait_until(lambda: ctl.queue.statistics().waiting == 2)
        second = ctl.statistics()
        async with asyncio.timeout(10):
            await ctl.stop()
            await running
    assert ctl.queue is queue
    assert (first.runs, second.runs) == (1, 2)
    assert (first.queue.adds, first.queue.work_duration.count) == (2, 1)  # a, its requeue
    assert (second.queue.adds, second.queue.work_duration.count) == (6, 3)  # + a, b, requeues
    assert second.queue.waiting == 2  # a and b once each: the first run's "a" is gone
    assert second.reconciles == 3


# -- generated interleavings ----------------------------------------------------------------------
@settings(max_examples=25, database=None)
@given(ops=OPS)
def test_any_interleaving_ends_in_the_state_of_the_last_call(ops: list[tuple[str, int]]) -> None:
    asyncio.run(_interleave(ops))


async def _interleave(ops: list[tuple[str, int]]) -> None:
    """The calls interleaved as ``lifecycle_helpers.interleaved`` makes them, against its model;
    stopped is STOPPED (or NEW, if it never ran). Running means: one set of workers and
    handlers, and a change is reconciled."""
    async with ApiServer(too_large_wait=0.01) as server, configmaps(server) as inf:
        await inf.wait_for_sync(timeout=10)
        reconciled: list[str] = []

        async def reconcile(request: Request) -> None:
            reconciled.append(request.name)

        ctl = Controller(reconcile, for_=inf, catch_up=False)

        def stopped(effective: list[tuple[str, int]], step: tuple[str, int]) -> bool:
            # returned once stopped, unless a later call started it again
            return ctl.state in (ControllerState.STOPPED, ControllerState.NEW) or any(
                o in ("start", "enter", "run") for o, _ in effective[effective.index(step) :]
            )

        async with interleaved(ctl, ops, stopped) as out:
            if out.running:
                await ctl.wait_running(timeout=10)
                assert ctl.state is ControllerState.RUNNING, (out.effective, ctl.state)
                assert controller_handlers(inf) == 1
                worker = "controller-configmap-0"
                assert [t.get_name() for t in controller_tasks()].count(worker) == 1
                name = f"probe-{server.revision}"
                server.create(CONFIGMAPS, cm(name))
                await wait_until(lambda: name in reconciled)
            else:
                expected = ControllerState.STOPPED if out.started else ControllerState.NEW
                assert ctl.state is expected, (out.effective, ctl.state)
                assert controller_tasks() == [] and controller_handlers(inf) == 0
            async with asyncio.timeout(10):
                await ctl.stop()
                if out.driver is not None:
                    assert await out.runs[out.driver] is None
            assert ctl.state in (ControllerState.STOPPED, ControllerState.NEW)
            assert controller_tasks() == [] and controller_handlers(inf) == 0
