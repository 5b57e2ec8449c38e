"""The Manager's /healthz, /readyz and /metrics over real HTTP, across its lifecycle: not ready
before its informers have synced, ready after; a standby replica ready; liveness failing when an
informer's task has died or the event loop lags; metrics from the registry, or a clear 501."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from informer import (
    CONFIGMAPS,
    LEASES,
    NAMESPACES,
    Informer,
    InformerState,
    LeaderElector,
    Manager,
    ManagerState,
    Request,
    SharedInformerFactory,
    ShutdownTimeout,
)
from informer._log import capture_logs
from informer.manager import LoopWatchdog
from informer.testing import ApiServer, Fault
from informer.workqueue import ManualClock
from tests.conftest import ELECTION, FAST, cm, wait_until


async def get(manager: Manager, path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{manager.port}{path}") as response,
    ):
        return response.status, await response.text()


async def reconcile_nothing(request: Request) -> None:
    return None


def new_manager(server: ApiServer, **kwargs: Any) -> Manager:
    kwargs.setdefault("registry", CollectorRegistry())
    return Manager(server.api_client(), host="127.0.0.1", port=0, options=FAST, **kwargs)


@pytest.fixture
async def manager(api_server: ApiServer) -> AsyncIterator[Manager]:
    manager = new_manager(api_server)
    try:
        yield manager
    finally:
        await manager.stop()


@pytest.mark.asyncio
async def test_not_ready_until_the_informers_have_synced(
    api_server: ApiServer, manager: Manager
) -> None:
    failing = api_server.faults.add(
        Fault(verb="list", resource="configmaps", status=500, times=None)
    )
    sources = manager.informer(CONFIGMAPS)
    controller = manager.controller(reconcile_nothing, for_=sources)
    await manager.start()
    await api_server.wait_for_requests(lambda _: failing.fired >= 2)

    status, body = await get(manager, "/readyz")
    assert status == 500
    assert "[-]informer-synced:configmaps failed: not synced" in body
    assert "[-]controller:configmap failed: controller" in body
    assert body.endswith("readyz check failed\n")
    assert await get(manager, "/healthz") == (200, "ok")  # alive, only not ready

    api_server.faults.remove(failing)
    await manager.wait_synced(timeout=10)
    await controller.wait_running(timeout=10)
    assert manager.state is ManagerState.RUNNING
    assert await get(manager, "/readyz") == (200, "ok")
    status, body = await get(manager, "/readyz?verbose")
    assert status == 200
    assert "[+]informer-synced:configmaps ok" in body
    assert "[+]controller:configmap ok" in body
    status, body = await get(manager, "/healthz?verbose")
    assert status == 200
    assert "[+]event-loop ok" in body
    assert "[+]informer:configmaps ok" in body


@pytest.mark.asyncio
async def test_a_standby_replica_is_ready(api_server: ApiServer) -> None:
    """Two replicas with a Lease: one leads and reconciles, the other keeps warm caches, does not
    reconcile, and is ready too."""
    api_server.create(CONFIGMAPS, cm("a"))
    replicas: list[Manager] = []
    try:
        for i in range(2):
            m = new_manager(api_server)
            m.elector = LeaderElector(m.client, "probes", "default", identity=f"r{i}", **ELECTION)
            m.controller(reconcile_nothing, for_=m.informer(CONFIGMAPS))
            replicas.append(m)
        await replicas[0].start()
        assert replicas[0].elector is not None
        await asyncio.wait_for(replicas[0].elector.wait_until_leading(), 10)
        await replicas[0].controllers[0].wait_running(timeout=10)
        await replicas[1].start()
        await replicas[1].wait_synced(timeout=10)
        standby = replicas[1].elector
        assert standby is not None
        # until the standby has seen the leader's Lease (a request of its own answered)
        await api_server.wait_for_requests(lambda _: standby.leader == "r0")

        for m in replicas:
            status, body = await get(m, "/readyz?verbose")
            assert status == 200, body
            assert "[+]controller:configmap ok" in body
        assert replicas[0].is_leading and not replicas[1].is_leading
        assert replicas[1].controllers[0].state.value == "new"  # it never reconciled
    finally:
        for m in replicas:
            await m.stop()


@pytest.mark.asyncio
async def test_healthz_fails_when_an_informer_task_died(
    api_server: ApiServer, manager: Manager
) -> None:
    inf = manager.informer(CONFIGMAPS)
    run = inf.reflector.run
    die = asyncio.Event()

    async def dies_on_demand() -> None:  # the reflector, until a planted crash
        reflector = asyncio.ensure_future(run())
        try:
            await die.wait()
            raise RuntimeError("planted")
        finally:
            reflector.cancel()
            await asyncio.wait([reflector])

    inf.reflector.run = dies_on_demand  # type: ignore[method-assign]
    await manager.start()
    await manager.wait_synced(timeout=10)
    assert await get(manager, "/healthz") == (200, "ok")

    with capture_logs() as logs:
        die.set()
        await wait_until(lambda: inf.state is InformerState.STOPPED)  # its task has ended
    assert [e["error"].split(" ")[0] for e in logs if e["event"] == "informer.failed"] == [
        "RuntimeError"
    ]
    status, body = await get(manager, "/healthz")
    assert status == 500
    assert "[-]informer:configmaps failed: informer stopped" in body
    assert "[+]event-loop ok" in body
    assert body.endswith("healthz check failed\n")


@pytest.mark.asyncio
async def test_healthz_fails_while_the_event_loop_lags(api_server: ApiServer) -> None:
    clock = ManualClock()
    watchdog = LoopWatchdog(interval=1.0, max_lag=2.0, clock=clock)
    manager = new_manager(api_server, watchdog=watchdog)
    async with manager:
        await manager.wait_synced(timeout=10)
        clock.advance(1.5)  # a tick 0.5 s late: within bounds
        await get(manager, "/")  # a round trip: the watchdog has run since
        assert await get(manager, "/healthz") == (200, "ok")
        assert watchdog.lag == pytest.approx(0.5)

        clock.advance(10.0)  # the loop stalled 10 s
        status, body = await get(manager, "/healthz")
        assert status == 500
        assert "[-]event-loop failed: event loop lag" in body

        clock.advance(1.0)  # on time again
        await get(manager, "/")
        assert await get(manager, "/healthz") == (200, "ok")


@pytest.mark.asyncio
async def test_metrics_serves_the_registry(api_server: ApiServer) -> None:
    """Histograms, the request metrics and the leader's status, as dashboards read them."""
    api_server.create(CONFIGMAPS, cm("a"))
    manager = new_manager(api_server, leader_election="metrics")
    controller = manager.controller(reconcile_nothing, for_=manager.informer(CONFIGMAPS))
    async with manager:
        await controller.wait_running(timeout=10)
        await wait_until(lambda: controller.statistics().reconciles >= 1)
        status, body = await get(manager, "/metrics")
    assert status == 200
    samples = [line for line in body.splitlines() if not line.startswith("#")]

    def sample(name: str, *labels: str) -> list[str]:
        return [s for s in samples if s.startswith(name + "{") and all(x in s for x in labels)]

    assert sample("reflector_lists_total", 'resource="configmaps"')
    assert sample("controller_runtime_reconcile_total", 'controller="configmap"')
    assert sample("controller_runtime_reconcile_time_seconds_bucket", 'le="+Inf"')
    assert sample("workqueue_queue_duration_seconds_bucket")
    assert sample("rest_client_requests_total", 'method="GET"', 'code="200"')
    assert sample("rest_client_request_duration_seconds_bucket")
    assert sample("leader_election_master_status", 'name="metrics"') == [
        'leader_election_master_status{name="metrics"} 1.0'
    ]


@pytest.mark.asyncio
async def test_metrics_without_prometheus_client_answer_501(
    api_server: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # not installed
    manager = Manager(api_server.api_client(), host="127.0.0.1", port=0, options=FAST)
    async with manager:
        status, body = await get(manager, "/metrics")
        assert status == 501
        assert "prometheus-client" in body
        assert await get(manager, "/healthz") == (200, "ok")


@pytest.mark.asyncio
async def test_readyz_fails_once_stopping_and_the_port_closes_when_stopped(
    api_server: ApiServer,
) -> None:
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow(request: Request) -> None:
        entered.set()
        await release.wait()

    api_server.create(CONFIGMAPS, cm("a"))
    manager = new_manager(api_server)
    manager.controller(slow, for_=manager.informer(CONFIGMAPS), shutdown_timeout=30)
    await manager.start()
    await entered.wait()
    stopping = asyncio.create_task(manager.stop())
    while manager.state is not ManagerState.STOPPING:  # noqa: ASYNC110 - a state, no event
        await asyncio.sleep(0)
    status, body = await get(manager, "/readyz")
    assert status == 500
    assert "[-]shutdown failed: shutting down" in body
    assert await get(manager, "/healthz") == (200, "ok")
    release.set()
    await stopping
    assert manager.state is ManagerState.STOPPED
    with pytest.raises(aiohttp.ClientConnectionError):
        await get(manager, "/healthz")


@pytest.mark.asyncio
async def test_a_failing_collector_answers_500_without_its_message(api_server: ApiServer) -> None:
    class Broken:
        def collect(self) -> Any:
            raise RuntimeError("secret-value")

    registry = CollectorRegistry()
    registry.register(Broken())  # type: ignore[arg-type]
    async with new_manager(api_server, registry=registry) as manager:
        with capture_logs() as logs:
            status, body = await get(manager, "/metrics")
    assert (status, body) == (500, "collecting metrics failed: RuntimeError\n")
    assert "secret-value" not in repr(logs)
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["manager.metrics_failed"]


@pytest.mark.asyncio
async def test_a_failed_controller_stops_the_manager_and_run_raises(api_server: ApiServer) -> None:
    manager = new_manager(api_server, leader_election="failing")
    controller = manager.controller(reconcile_nothing, for_=manager.informer(CONFIGMAPS))

    async def crashes() -> None:
        raise RuntimeError("planted")

    controller.run = crashes  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="planted"):
        await manager.run(handle_signals=False)
    assert manager.state is ManagerState.STOPPED
    assert all(inf.state is InformerState.STOPPED for inf in manager.informers)
    lease = api_server.get(LEASES, "failing", "default")
    assert lease is not None and not lease["spec"].get("holderIdentity")  # given up at once


@pytest.mark.asyncio
async def test_past_the_shutdown_timeout_the_rest_is_cut_named_and_the_lease_released(
    api_server: ApiServer,
) -> None:
    entered, release, returned = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def stuck(request: Request) -> None:
        entered.set()
        try:
            await release.wait()  # past the manager's shutdown_timeout, within the controller's
        finally:
            returned.set()

    api_server.create(CONFIGMAPS, cm("a"))
    manager = new_manager(api_server, leader_election="stuck", shutdown_timeout=0.2)
    manager.controller(stuck, for_=manager.informer(CONFIGMAPS), shutdown_timeout=60)
    with capture_logs() as logs:
        running = asyncio.create_task(manager.run(handle_signals=False))
        await entered.wait()
        manager.request_stop()
        with pytest.raises(ShutdownTimeout) as raised:
            await running
    warned = [e for e in logs if e["event"] == "manager.controller_shutdown_timeout_too_long"]
    assert [e["controller"] for e in warned] == ["configmap"]  # said at start
    assert "controller:configmap" in raised.value.not_stopped
    assert manager.state is ManagerState.STOPPED
    assert all(inf.state is InformerState.STOPPED for inf in manager.informers)
    lease = api_server.get(LEASES, "stuck", "default")
    assert lease is not None and not lease["spec"]["holderIdentity"]  # released, as on a signal
    release.set()  # the process would exit here; the test lets the reconcile end
    await returned.wait()


@pytest.mark.asyncio
async def test_informers_and_factories_built_elsewhere_run_from_start_to_stop(
    api_server: ApiServer,
) -> None:
    api = api_server.api_client()
    own = Informer(api, CONFIGMAPS, namespace="default", options=FAST)
    factory = SharedInformerFactory(api, options=FAST)
    shared = factory.informer(NAMESPACES)
    manager = new_manager(api_server)
    manager.add(own, factory, own)
    assert manager.informers.count(own) == 1
    async with manager:
        await manager.wait_synced(timeout=10)
        assert own.has_synced and shared.has_synced
        status, body = await get(manager, "/readyz?verbose")
        assert status == 200
        assert "[+]informer-synced:configmaps/default ok" in body
        assert "[+]informer-synced:namespaces ok" in body
        with pytest.raises(RuntimeError):
            manager.add(Informer(api, CONFIGMAPS))  # parts come before the start
    assert own.state is InformerState.STOPPED and shared.state is InformerState.STOPPED
    await api.close()


@pytest.mark.asyncio
async def test_a_blocked_loop_is_reported_with_where_it_is_blocked(api_server: ApiServer) -> None:
    watchdog = LoopWatchdog(interval=0.02, max_lag=0.05)

    def blocking_call(logs: list[dict[str, Any]]) -> None:  # sync code in a coroutine: a bug
        deadline = time.monotonic() + 30
        while not any(e["event"] == "manager.loop_blocked" for e in logs):
            assert time.monotonic() < deadline, "never reported"
            time.sleep(0.01)  # the loop is blocked here until the watchdog's thread reports it

    async with new_manager(api_server, watchdog=watchdog):
        with capture_logs() as logs:
            blocking_call(logs)
            await wait_until(lambda: any(e["event"] == "manager.loop_unblocked" for e in logs))
    blocked = next(e for e in logs if e["event"] == "manager.loop_blocked")
    assert blocked["log_level"] == "error"
    assert blocked["where"].split(" <- ")[0].endswith(" in blocking_call")
    assert "test_manager_probes.py" in blocked["where"]


@pytest.mark.asyncio
async def test_runnables_run_where_they_should_and_stop_before_the_lease_and_informers(
    api_server: ApiServer,
) -> None:
    seen: list[tuple[str, str, Any, str]] = []  # (runnable, event, lease holder, informer state)
    manager = new_manager(api_server, leader_election="runnables")
    inf = manager.informer(CONFIGMAPS)
    running: dict[str, asyncio.Event] = {"everywhere": asyncio.Event(), "leader": asyncio.Event()}

    def runnable(name: str) -> Any:
        async def run() -> None:
            running[name].set()
            try:
                await asyncio.Event().wait()
            finally:
                lease = api_server.get(LEASES, "runnables", "default") or {}
                holder = lease.get("spec", {}).get("holderIdentity")
                seen.append((name, "cancelled", holder, inf.state.value))

        return run

    manager.add_runnable(runnable("everywhere"))
    manager.add_runnable(runnable("leader"), needs_leader=True)
    async with manager:
        await running["everywhere"].wait()
        await running["leader"].wait()
        assert manager.is_leading
    identity = manager.elector.identity if manager.elector else None
    assert sorted(seen) == [  # both stopped while the Lease was held and the informer ran
        ("everywhere", "cancelled", identity, "running"),
        ("leader", "cancelled", identity, "running"),
    ]
    lease = api_server.get(LEASES, "runnables", "default")
    assert lease is not None and not lease["spec"].get("holderIdentity")


@pytest.mark.asyncio
async def test_a_failed_runnable_stops_the_manager_and_run_raises(api_server: ApiServer) -> None:
    manager = new_manager(api_server)
    manager.informer(CONFIGMAPS)

    async def fails() -> None:
        raise ValueError("planted")

    manager.add_runnable(fails, name="fails")
    with capture_logs() as logs, pytest.raises(ValueError, match="planted"):
        await manager.run(handle_signals=False)
    assert manager.state is ManagerState.STOPPED
    assert [(e["event"], e["part"]) for e in logs if e["log_level"] == "error"] == [
        ("manager.part_failed", "runnable:fails")
    ]


@pytest.mark.asyncio
async def test_by_default_it_listens_on_every_interface_ipv4_and_ipv6_on_one_port(
    api_server: ApiServer,
) -> None:
    manager = Manager(api_server.api_client(), port=0, options=FAST, registry=CollectorRegistry())
    async with manager, aiohttp.ClientSession() as http:
        hosts = ["127.0.0.1"]
        with socket.socket(socket.AF_INET6) as probe:
            with contextlib.suppress(OSError):
                probe.bind(("::1", 0))
                hosts.append("[::1]")  # this machine has IPv6
        for host in hosts:
            async with http.get(f"http://{host}:{manager.port}/healthz") as response:
                assert (response.status, await response.text()) == (200, "ok")


@pytest.mark.asyncio
async def test_a_stop_while_the_informers_cannot_sync_is_clean(api_server: ApiServer) -> None:
    failing = api_server.faults.add(
        Fault(verb="list", resource="configmaps", status=500, times=None)
    )
    manager = new_manager(api_server, leader_election="never-synced")
    manager.controller(reconcile_nothing, for_=manager.informer(CONFIGMAPS))
    running = asyncio.create_task(manager.run(handle_signals=False))
    await api_server.wait_for_requests(lambda _: failing.fired >= 2)
    manager.request_stop()
    assert await running is None  # a clean stop, nothing to release
    assert manager.failure is None and manager.state is ManagerState.STOPPED
    assert api_server.get(LEASES, "never-synced", "default") is None  # it never campaigned


@pytest.mark.asyncio
async def test_a_taken_port_fails_the_start_and_nothing_runs(api_server: ApiServer) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        manager = new_manager(api_server)
        manager.port = taken.getsockname()[1]
        inf = manager.informer(CONFIGMAPS)
        with pytest.raises(OSError):
            await manager.run(handle_signals=False)
    assert manager.state is ManagerState.STOPPED
    assert inf.state is InformerState.STOPPED
    assert not [r for r in api_server.requests if r.resource == "configmaps"]


@pytest.mark.asyncio
async def test_a_check_that_raises_fails_its_probe_logged_once_per_outage_without_its_message(
    api_server: ApiServer,
) -> None:
    broken = True

    def flaky() -> str | None:
        if broken:
            raise ValueError("secret-value")
        return None

    manager = new_manager(api_server)
    manager.add_ready_check("flaky", flaky)
    async with manager:
        with capture_logs() as logs:
            for _ in range(3):  # one outage, probed three times
                status, body = await get(manager, "/readyz?verbose")
                assert status == 500
                assert "[-]flaky failed: check raised ValueError\n" in body
            broken = False
            assert await get(manager, "/readyz") == (200, "ok")
            broken = True  # a second outage
            assert (await get(manager, "/readyz"))[0] == 500
    raised = [e for e in logs if e["event"] == "manager.check_raised"]
    assert [(e["check"], e["probe"], e["log_level"]) for e in raised] == [
        ("flaky", "readyz", "error"),
        ("flaky", "readyz", "error"),
    ]
    assert raised[0]["error"].startswith("ValueError in flaky (")  # where, for the operator
    assert "secret-value" not in repr(logs)


@pytest.mark.asyncio
async def test_a_check_must_be_a_plain_function_returning_none_or_a_reason(
    api_server: ApiServer,
) -> None:
    async def asynchronous() -> str | None:
        return None

    manager = new_manager(api_server)
    with pytest.raises(TypeError, match="plain function"):
        manager.add_ready_check("async", asynchronous)  # type: ignore[arg-type]
    manager.add_health_check("truthy", lambda: True)  # type: ignore[arg-type,return-value]
    async with manager:
        status, body = await get(manager, "/healthz?verbose")
    assert status == 500
    assert "[-]truthy failed: check returned bool, not None or a reason\n" in body
