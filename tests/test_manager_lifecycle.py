"""The Manager's lifecycle through real HTTP, at its edges: what fails while it stops is read,
logged once by name and raised by ``run()``; a part that ignores its cancellation does not hold
the stop past ``shutdown_timeout`` (named, raised, the Lease released); a ``stop()`` at any point
of ``start()`` leaves nothing running or listening; and the rest of the state machine (start
twice, run after stop, a runnable that cannot start, a check that raises).

Waits are on events and server conditions; ``asyncio.timeout`` only bounds a hang.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from informer import (
    CONFIGMAPS,
    LEASES,
    InformerState,
    LeaderElector,
    Manager,
    ManagerState,
    ShutdownTimeout,
)
from informer._log import capture_logs
from informer.testing import ApiServer, Fault
from tests.conftest import ELECTION, FAST, cm, wait_until


def new_manager(server: ApiServer, **kwargs: Any) -> Manager:
    kwargs.setdefault("registry", CollectorRegistry())
    return Manager(server.api_client(), host="127.0.0.1", port=0, options=FAST, **kwargs)


def holder(server: ApiServer, name: str) -> Any:
    lease = server.get(LEASES, name, "default") or {}
    return (lease.get("spec") or {}).get("holderIdentity")


@contextmanager
def unhandled_errors() -> Iterator[list[str]]:
    """What reaches the loop's exception handler ("Task exception was never retrieved", ...),
    garbage-collected tasks included."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    seen: list[str] = []
    loop.set_exception_handler(lambda _, ctx: seen.append(f"{ctx.get('message')}"))
    try:
        yield seen
        gc.collect()  # a task dropped with an unread exception reports it when collected
    finally:
        loop.set_exception_handler(previous)


def fails_when_cancelled(entered: asyncio.Event, error: BaseException) -> Any:
    async def run() -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise error from None

    return run


# -- failures while stopping -------------------------------------------------------------------
async def test_every_part_failing_while_stopped_is_logged_by_name_and_raised_by_run(
    api_server: ApiServer,
) -> None:
    manager = new_manager(api_server, leader_election="failing-stop")
    manager.informer(CONFIGMAPS)
    everywhere, leader = asyncio.Event(), asyncio.Event()
    manager.add_runnable(
        fails_when_cancelled(everywhere, ValueError("everywhere")), name="everywhere"
    )
    manager.add_runnable(
        fails_when_cancelled(leader, KeyError("leader")), name="leader", needs_leader=True
    )
    with unhandled_errors() as unhandled, capture_logs() as logs:
        running = asyncio.create_task(manager.run(handle_signals=False))
        await everywhere.wait()
        await leader.wait()
        manager.request_stop()  # a clean stop, until both fail while being cancelled
        with pytest.raises(ExceptionGroup) as raised:
            await running
        del running
    assert sorted(repr(e) for e in raised.value.exceptions) == [
        "KeyError('leader')",
        "ValueError('everywhere')",
    ]
    assert manager.failure is raised.value
    failed = [
        (e["part"], e["error"].split(" ")[0]) for e in logs if e["event"] == "manager.part_failed"
    ]
    assert sorted(failed) == [
        ("runnable:everywhere", "ValueError"),
        ("runnable:leader", "KeyError"),
    ]
    assert unhandled == []
    assert manager.state is ManagerState.STOPPED
    assert not holder(api_server, "failing-stop")  # released after the runnables stopped


@pytest.mark.parametrize("needs_leader", [False, True], ids=["everywhere", "leader"])
async def test_one_runnable_failing_while_stopped_is_what_run_raises(
    api_server: ApiServer, needs_leader: bool
) -> None:
    manager = new_manager(api_server, leader_election="one-fails")
    manager.informer(CONFIGMAPS)
    entered = asyncio.Event()
    manager.add_runnable(
        fails_when_cancelled(entered, ValueError("planted")), name="r", needs_leader=needs_leader
    )
    with unhandled_errors() as unhandled, capture_logs() as logs:
        running = asyncio.create_task(manager.run(handle_signals=False))
        await entered.wait()
        manager.request_stop()
        with pytest.raises(ValueError, match="planted"):
            await running
        del running
    assert unhandled == []
    assert [(e["event"], e.get("part")) for e in logs if e["log_level"] == "error"] == [
        ("manager.part_failed", "runnable:r")
    ]
    assert manager.state is ManagerState.STOPPED
    assert all(inf.state is InformerState.STOPPED for inf in manager.informers)


async def test_leaving_async_with_raises_what_failed(api_server: ApiServer) -> None:
    entered = asyncio.Event()
    manager = new_manager(api_server)
    manager.add_runnable(fails_when_cancelled(entered, ValueError("planted")), name="r")
    with pytest.raises(ValueError, match="planted"):
        async with manager:
            await entered.wait()
    assert manager.state is ManagerState.STOPPED


# -- the graceful stop's deadline ------------------------------------------------------------------
def manager_tasks() -> list[str]:
    """The manager's parts still running (controllers, runnables, the election)."""
    return [
        t.get_name()
        for t in asyncio.all_tasks()
        if t.get_name().startswith("informer-manager-") and not t.done()
    ]


def ignores_cancellation(entered: asyncio.Event, release: asyncio.Event) -> Any:
    async def run() -> None:
        entered.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                pass  # every time: only the test's release ends it

    return run


async def leading(manager: Manager) -> None:
    assert manager.elector is not None
    await asyncio.wait_for(manager.elector.wait_until_leading(), 10)


@pytest.mark.parametrize("needs_leader", [False, True], ids=["everywhere", "leader"])
async def test_past_the_grace_period_run_raises_naming_what_did_not_stop_and_releases_the_lease(
    api_server: ApiServer, needs_leader: bool
) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    manager = new_manager(api_server, leader_election="stubborn", shutdown_timeout=0.2)
    manager.informer(CONFIGMAPS)
    manager.add_runnable(
        ignores_cancellation(entered, release), name="stubborn", needs_leader=needs_leader
    )
    try:
        with capture_logs() as logs:
            running = asyncio.create_task(manager.run(handle_signals=False))
            await entered.wait()
            await leading(manager)
            assert holder(api_server, "stubborn")
            manager.request_stop()
            with pytest.raises(ShutdownTimeout) as raised:
                await running
        error = raised.value
        assert isinstance(error, TimeoutError)
        assert str(error).startswith(
            "failed waiting for all runnables to end within grace period of 0.2s"
        )
        assert "runnable:stubborn" in error.not_stopped
        assert manager.failure is error
        cut = [e for e in logs if e["event"] == "manager.shutdown_deadline"]
        assert [e["not_stopped"] for e in cut] == [list(error.not_stopped)]
        assert manager.state is ManagerState.STOPPED
        assert all(inf.state is InformerState.STOPPED for inf in manager.informers)
        assert not holder(api_server, "stubborn")  # released: a standby takes over at once
        assert "informer-manager-runnable:stubborn" in manager_tasks()  # left behind, named
    finally:
        release.set()  # the process would exit here; the test lets it end
        await manager.stop()
        await wait_until(lambda: not manager_tasks())


async def test_past_the_grace_period_a_lease_not_to_be_released_is_kept(
    api_server: ApiServer,
) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    manager = new_manager(api_server, shutdown_timeout=0.2)
    manager.elector = LeaderElector(
        manager.client, "kept", "default", release_on_cancel=False, **ELECTION
    )
    manager.add_runnable(ignores_cancellation(entered, release), needs_leader=True)
    try:
        running = asyncio.create_task(manager.run(handle_signals=False))
        await entered.wait()
        manager.request_stop()
        with pytest.raises(ShutdownTimeout):
            await running
        assert holder(api_server, "kept")  # as asked: left to expire
    finally:
        release.set()
        await manager.stop()
        await wait_until(lambda: not manager_tasks())


async def test_past_the_grace_period_a_handler_ignoring_its_cancellation_does_not_hold_the_stop(
    api_server: ApiServer,
) -> None:
    """An informer's handler is the application's code too: one that ignores its cancellation
    keeps its informer from stopping, and the stop from ending, unless the cut stops waiting."""
    entered, release = asyncio.Event(), asyncio.Event()
    manager = new_manager(api_server, shutdown_timeout=0.2)
    stubborn = ignores_cancellation(entered, release)

    returned = asyncio.Event()

    async def on_add(obj: Any, initial: bool) -> None:
        await stubborn()
        returned.set()

    manager.informer(CONFIGMAPS).add_handler(on_add=on_add)
    api_server.create(CONFIGMAPS, cm("a"))
    try:
        with capture_logs() as logs:
            running = asyncio.create_task(manager.run(handle_signals=False))
            await entered.wait()
            manager.request_stop()
            with pytest.raises(ShutdownTimeout) as raised:
                async with asyncio.timeout(10):  # bounds a hang: the failure this test is about
                    await running
        assert raised.value.not_stopped == ("informers",)
        assert manager.state is ManagerState.STOPPED
        assert [e["event"] for e in logs if e["event"] == "manager.informers_not_stopped"] == [
            "manager.informers_not_stopped"
        ]
    finally:
        release.set()
        await returned.wait()  # then the cancellation it swallowed comes again (as at an exit)
        for task in asyncio.all_tasks():
            if task.get_name().startswith("informer-handler-"):
                task.cancel()
        await manager.stop()
        await asyncio.gather(*(inf.stop() for inf in manager.informers))


# -- stop() racing start() ------------------------------------------------------------------------
class Observed:
    """A manager with a runnable in every replica and one on the leader, each recording when its
    body begins and ends, and whether ``stop()`` had been called by then."""

    def __init__(self, server: ApiServer, election: bool) -> None:
        self.server = server
        self.manager = new_manager(server, leader_election="race" if election else None)
        if self.manager.elector is not None:
            self.manager.elector = LeaderElector(self.manager.client, "race", "default", **ELECTION)
        self.manager.informer(CONFIGMAPS)
        self.stop_called = False
        self.began: list[tuple[str, bool]] = []  # (runnable, stop called by then)
        self.ended: list[str] = []
        self.running = asyncio.Event()
        for name, leader in (("everywhere", False), ("leader", True)):
            self.manager.add_runnable(self.runnable(name), name=name, needs_leader=leader)

    def runnable(self, name: str) -> Any:
        async def run() -> None:
            self.began.append((name, self.stop_called))
            self.running.set()
            try:
                await asyncio.Event().wait()
            finally:
                self.ended.append(name)

        return run

    async def stop(self) -> None:
        self.stop_called = True
        await self.manager.stop()

    async def check_stopped(self, bound: int | None) -> None:
        """What must hold once ``stop()`` has returned."""
        manager = self.manager
        assert manager.state is ManagerState.STOPPED
        assert [name for name, after_stop in self.began if after_stop] == []
        assert sorted(self.ended) == sorted(name for name, _ in self.began)
        left = [
            t.get_name()
            for t in asyncio.all_tasks()
            if not t.done()
            and t.get_name().startswith(("informer-manager", "informer-loop", "informer-config"))
        ]
        assert left == []
        assert all(inf.state is InformerState.STOPPED for inf in manager.informers)
        assert not holder(self.server, "race")
        if bound:  # nothing listens on the port the start bound
            with pytest.raises(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", bound)
                writer.close()


async def race(server: ApiServer, election: bool, driver: str, point: Any) -> None:
    """Start (``start()`` or ``run()``), ``stop()`` at ``point``, check the outcome."""
    observed = Observed(server, election)
    manager = observed.manager
    if driver == "run":
        started = asyncio.create_task(manager.run(handle_signals=False))
    else:
        started = asyncio.create_task(manager.start())
    try:
        async with asyncio.timeout(30):
            await point(observed)
            await observed.stop()
            assert manager.state is ManagerState.STOPPED  # stop() returned: stopped
            assert await started is None  # start() (or run()) returns: the stop won, no error
            await observed.check_stopped(manager.port)
    finally:
        if not started.done():
            started.cancel()
        await manager.stop()


def after_yields(n: int) -> Any:
    async def point(observed: Observed) -> None:
        for _ in range(n):
            await asyncio.sleep(0)  # an interleaving point, not a wait for time

    return point


def when_requested(verb: str, resource: str) -> Any:
    async def point(observed: Observed) -> None:
        await observed.server.wait_for_requests(lambda r: r.verb == verb and r.resource == resource)

    return point


async def when_running(observed: Observed) -> None:
    await observed.running.wait()


POINTS = {
    "before-the-start-ran": after_yields(0),
    "binding-the-port": after_yields(1),
    "just-bound": after_yields(4),
    "listing": when_requested("list", "configmaps"),
    "campaigning": when_requested("get", "leases"),
    "runnable-running": when_running,
}


@pytest.mark.parametrize("driver", ["start", "run"])
@pytest.mark.parametrize("point", list(POINTS))
async def test_a_stop_at_any_point_of_the_start_leaves_nothing_running_or_listening(
    api_server: ApiServer, point: str, driver: str
) -> None:
    await race(api_server, election=True, driver=driver, point=POINTS[point])


@settings(max_examples=20, database=None)
@given(yields=st.integers(0, 40), election=st.booleans(), driver=st.sampled_from(["start", "run"]))
def test_a_stop_after_any_number_of_loop_steps_leaves_nothing_running_or_listening(
    yields: int, election: bool, driver: str
) -> None:
    async def main() -> None:
        async with ApiServer(too_large_wait=0.01) as server:
            await race(server, election, driver, after_yields(yields))

    asyncio.run(main())


async def test_a_start_that_cannot_bind_stops_once_and_says_why(api_server: ApiServer) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        manager = new_manager(api_server)
        manager.port = taken.getsockname()[1]
        with capture_logs() as logs:
            with pytest.raises(OSError) as raised:
                await manager.start()
            await manager.stop()  # stopped already: returns, stops nothing twice
    assert manager.state is ManagerState.STOPPED
    assert manager.failure is raised.value
    assert [e["event"] for e in logs if e["event"].startswith("manager.stop")] == [
        "manager.stopping",
        "manager.stopped",
    ]
    assert [e.get("part") for e in logs if e["event"] == "manager.part_failed"] == ["endpoints"]
    with pytest.raises(RuntimeError, match="runs once"):
        await manager.start()


async def test_a_stop_while_the_lease_is_being_acquired_releases_it(api_server: ApiServer) -> None:
    """The server applies the Lease's creation but answers late; the stop comes in between: the
    campaign lets the attempt end and releases what it wrote, rather than leave a Lease naming
    a replica that is gone (every standby would wait for it to expire)."""
    late = api_server.faults.add(Fault(verb="create", resource="leases", answer_latency=0.5))
    manager = new_manager(api_server, leader_election="late")
    manager.informer(CONFIGMAPS)
    await manager.start()
    await api_server.wait_for_requests(
        lambda _: api_server.get(LEASES, "late", "default") is not None  # created, not answered
    )
    await manager.stop()
    assert late.fired == 1
    assert manager.elector is not None and not manager.elector.is_leader
    assert not holder(api_server, "late")


# -- the rest of the lifecycle ---------------------------------------------------------------------
async def test_a_runnable_that_cannot_start_fails_the_run_by_name_and_the_rest_stops(
    api_server: ApiServer,
) -> None:
    began, ended = asyncio.Event(), asyncio.Event()

    async def fine() -> None:
        began.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    def not_a_coroutine_function() -> None:
        return None

    manager = new_manager(api_server)
    manager.informer(CONFIGMAPS)
    with pytest.raises(TypeError, match="coroutine function"):
        manager.add_runnable(fine())  # type: ignore[arg-type]  # a coroutine, not its function
    manager.add_runnable(fine, name="fine")
    manager.add_runnable(not_a_coroutine_function, name="sync")  # type: ignore[arg-type]
    with capture_logs() as logs, pytest.raises(TypeError):
        await manager.run(handle_signals=False)
    assert [(e["event"], e.get("part")) for e in logs if e["log_level"] == "error"] == [
        ("manager.part_failed", "runnable:sync")
    ]
    assert began.is_set() == ended.is_set()
    assert manager.state is ManagerState.STOPPED


async def test_a_manager_runs_once(api_server: ApiServer) -> None:
    manager = Manager(api_server.api_client(), port=None, options=FAST)
    first, second = manager.start(), manager.start()
    await first
    with pytest.raises(RuntimeError, match="runs once"):
        await second  # a concurrent second start
    await manager.stop()
    with pytest.raises(RuntimeError, match="runs once"):
        await manager.run(handle_signals=False)
    with pytest.raises(RuntimeError, match="runs once"):
        async with manager:
            pass
    assert manager.state is ManagerState.STOPPED
