"""Controller runner behaviours through real HTTP against the test API server.

Changes become keys (for_, owns through the controller owner reference, watches through a
mapper), workers start on a synced cache, priorities of initial and live changes, retries with
backoff, requeue-after, timeouts, graceful shutdown, resync, statistics and logs. Time-based rules
run on a ManualClock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest

from informer._log import capture_logs
from informer.controller import Controller, ControllerState, Request, Result
from informer.informer import Informer
from informer.objects import KubeObject
from informer.resource import CONFIGMAPS, SECRETS
from informer.testing import ApiServer, Fault
from informer.transport import Transport
from informer.workqueue import ExponentialBackoff, ManualClock, Priority
from tests.conftest import FAST, NoApi, cm, wait_until


@asynccontextmanager
async def informers(server: ApiServer, *scopes: dict[str, Any]) -> AsyncIterator[list[Informer]]:
    """Running informers on ``server``, one per scope (Informer keyword arguments)."""
    api = server.api_client()
    try:
        async with AsyncExitStack() as stack:
            infs = []
            for scope in scopes:
                scope = dict(scope)
                resource = scope.pop("resource", CONFIGMAPS)
                inf = Informer(Transport(api), resource, options=FAST, **scope)
                infs.append(await stack.enter_async_context(inf))
            yield infs
    finally:
        await api.close()


class Calls:
    """Reconciled requests in order; ``await calls.wait(n)`` until there are ``n``."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._changed = asyncio.Condition()

    async def record(self, request: Request) -> None:
        async with self._changed:
            self.requests.append(request)
            self._changed.notify_all()

    async def wait(self, count: int, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.requests) >= count)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.requests]


def owned(name: str, owner: str, *, kind: str = "ConfigMap", controller: bool = True) -> Any:
    body = cm(name)
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": kind, "name": owner, "uid": "u", "controller": controller}
    ]
    return body


async def test_each_object_is_reconciled_after_add_update_and_delete(api_server: ApiServer) -> None:
    server = api_server
    calls = Calls()
    seen: list[tuple[str, bool]] = []

    async with informers(server, {}) as (inf,):

        async def reconcile(request: Request) -> None:
            seen.append((request.key, inf.store.get(request.name, request.namespace) is not None))
            await calls.record(request)

        async with Controller(reconcile, for_=inf) as ctl:
            server.create(CONFIGMAPS, cm("a"))
            await calls.wait(1)
            server.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
            await calls.wait(2)
            server.delete(CONFIGMAPS, "a", namespace="default")
            await calls.wait(3)
        assert ctl.state is ControllerState.STOPPED
    assert seen == [("default/a", True), ("default/a", True), ("default/a", False)]
    assert calls.requests[0] == Request("a", "default")


async def test_workers_start_on_a_synced_cache_with_the_initial_state(
    api_server: ApiServer,
) -> None:
    server = api_server
    for i in range(7):  # several list pages (page size 2)
        server.create(CONFIGMAPS, cm(f"cm{i}"))
    calls = Calls()
    sizes: list[int] = []
    async with informers(server, {}, {"resource": SECRETS}) as (inf, secrets):

        async def reconcile(request: Request) -> None:
            sizes.append(len(inf.store))
            await calls.record(request)

        ctl = Controller(reconcile, for_=inf, watches=[(secrets, lambda o: ())])
        async with ctl:
            await calls.wait(7)
    assert sizes == [7] * 7
    assert sorted(calls.names) == [f"cm{i}" for i in range(7)]


async def test_owned_objects_queue_their_controller_owner(api_server: ApiServer) -> None:
    server = api_server
    calls = Calls()
    async with informers(
        server, {"label_selector": "role=parent"}, {"label_selector": "role=child"}
    ) as (parents, children):
        ctl = Controller(calls.record, for_=parents, owns=[children])
        async with ctl:
            await ctl.wait_running(10)

            def child(name: str, owner: str, **kw: Any) -> None:
                body = owned(name, owner, **kw)
                body["metadata"]["labels"] = {"role": "child"}
                server.create(CONFIGMAPS, body)

            child("c1", "p1")
            child("ignored-not-controller", "p2", controller=False)
            child("ignored-other-kind", "p3", kind="Secret")
            child("c4", "p4")
            await calls.wait(2)
            server.delete(CONFIGMAPS, "c1", namespace="default")
            await calls.wait(3)
            await children.wait_for_resource_version(
                server.format_resource_version(server.revision), timeout=10
            )
    assert calls.names == ["p1", "p4", "p1"]
    assert {r.namespace for r in calls.requests} == {"default"}


async def test_watches_map_any_object_to_keys_old_and_new(api_server: ApiServer) -> None:
    server = api_server
    calls = Calls()

    def by_label(obj: KubeObject) -> list[Request]:
        target = obj.labels.get("for")
        return [Request(target, obj.namespace)] if target else []

    async with informers(server, {"label_selector": "kind=main"}, {"resource": SECRETS}) as (
        main,
        secrets,
    ):
        async with Controller(calls.record, for_=main, watches=[(secrets, by_label)]) as ctl:
            await ctl.wait_running(10)
            server.create(
                SECRETS,
                {
                    **cm("s"),
                    "kind": "Secret",
                    "metadata": {"name": "s", "namespace": "default", "labels": {"for": "x"}},
                },
            )
            await calls.wait(1)
            server.patch(SECRETS, "s", {"metadata": {"labels": {"for": "y"}}}, namespace="default")
            await calls.wait(3)
    assert calls.names[0] == "x"
    assert sorted(calls.names[1:]) == ["x", "y"]  # an update queues the old and the new key


async def test_live_changes_are_reconciled_before_the_initial_list(api_server: ApiServer) -> None:
    server = api_server
    for i in range(4):
        server.create(CONFIGMAPS, cm(f"init{i}"))
    calls = Calls()
    release = asyncio.Event()
    async with informers(server, {}) as (inf,):

        async def reconcile(request: Request) -> None:
            await calls.record(request)
            if len(calls.requests) == 1:
                await release.wait()

        async with Controller(reconcile, for_=inf) as ctl:
            await calls.wait(1)  # the one worker holds the first initial key
            assert ctl.queue.statistics().depth_by_priority == {Priority.INITIAL: 3}
            server.create(CONFIGMAPS, cm("live"))
            await wait_until(lambda: Request("live", "default") in ctl.queue)
            release.set()
            await calls.wait(5)
    assert calls.names[:2] == ["init0", "live"]


async def test_changes_found_by_a_relist_are_queued_behind_live_ones(api_server: ApiServer) -> None:
    # controller-runtime's priority queue: what a relist (here after a watch 410) finds goes in
    # at INITIAL, like the first list; what a live watch shows goes in at LIVE
    server = api_server
    for name in ("a", "b", "c"):
        server.create(CONFIGMAPS, cm(name))
    server.faults.add(Fault(verb="watch", nth=1, close_after_events=1))
    server.faults.add(Fault(verb="watch", nth=2, status=410))
    calls = Calls()
    async with informers(server, {}) as (inf,):
        with capture_logs() as logs:
            async with Controller(calls.record, for_=inf):
                await calls.wait(3)
                await server.wait_for_watchers(1)
                # no await in between: the first watch delivers "live" then closes, the second
                # is answered 410, and the relist finds the other three changes
                server.create(CONFIGMAPS, cm("live"))
                server.patch(CONFIGMAPS, "b", {"data": {"k": "2"}}, namespace="default")
                server.delete(CONFIGMAPS, "c", namespace="default")
                server.create(CONFIGMAPS, cm("d"))
                await calls.wait(7)
                assert inf.statistics().relists == 1
    reconciled = [e for e in logs if e["event"] == "controller.reconciled"]
    assert [e["priority"] for e in reconciled[:3]] == [Priority.INITIAL] * 3
    priorities = {e["key"]: e["priority"] for e in reconciled[3:]}
    assert priorities == {
        "default/live": Priority.LIVE,
        "default/b": Priority.INITIAL,
        "default/c": Priority.INITIAL,
        "default/d": Priority.INITIAL,
    }


async def test_a_failing_reconcile_is_retried_with_backoff_and_success_forgets_it(
    api_server: ApiServer,
) -> None:
    server = api_server
    clock = ManualClock()
    attempts: list[int] = []
    server.create(CONFIGMAPS, cm("a"))
    async with informers(server, {}) as (inf,):
        ctl = Controller(
            lambda r: fail_twice(r),
            for_=inf,
            clock=clock,
            rate_limiter=ExponentialBackoff(1.0, 60.0),
        )

        async def fail_twice(request: Request) -> None:
            attempts.append(ctl.queue.num_requeues(request))
            if len(attempts) <= 2:
                raise RuntimeError("secret-value-in-message")

        with capture_logs() as logs:
            async with ctl:
                await wait_until(lambda: len(attempts) == 1)
                await wait_until(lambda: ctl.queue.statistics().waiting == 1)
                clock.advance(0.9)
                assert len(attempts) == 1  # 1 s backoff not passed
                clock.advance(0.1)
                await wait_until(lambda: len(attempts) == 2)
                await wait_until(lambda: ctl.queue.statistics().waiting == 1)
                clock.advance(2.0)  # doubled
                await wait_until(lambda: ctl.statistics().succeeded == 1)
        stats = ctl.statistics()
    assert attempts == [0, 1, 2]
    assert ctl.queue.num_requeues(Request("a", "default")) == 0
    assert (stats.reconciles, stats.errors, stats.succeeded) == (3, 2, 1)
    failures = [e for e in logs if e["event"] == "controller.reconciled" and e["result"] == "error"]
    assert len(failures) == 2
    assert failures[0]["key"] == "default/a" and failures[0]["error"].startswith("RuntimeError in")
    assert "secret-value" not in repr(logs)


async def test_a_reconcile_returning_a_delay_is_requeued_after_it(api_server: ApiServer) -> None:
    server = api_server
    clock = ManualClock()
    calls = Calls()
    server.create(CONFIGMAPS, cm("a"))
    async with informers(server, {}) as (inf,):

        async def reconcile(request: Request) -> float | Result:
            await calls.record(request)
            return 30.0 if len(calls.requests) == 1 else Result(requeue_after=None)

        async with Controller(reconcile, for_=inf, clock=clock) as ctl:
            await calls.wait(1)
            await wait_until(lambda: ctl.queue.statistics().waiting == 1)
            clock.advance(29.0)
            assert len(calls.requests) == 1
            clock.advance(1.0)
            await calls.wait(2)
            await wait_until(lambda: ctl.statistics().succeeded == 1)
            stats = ctl.statistics()
    assert (stats.requeued_after, stats.succeeded, stats.errors) == (1, 1, 0)


async def test_a_reconcile_over_its_timeout_is_cut_counted_and_retried(
    api_server: ApiServer,
) -> None:
    server = api_server
    calls = Calls()
    server.create(CONFIGMAPS, cm("a"))
    async with informers(server, {}) as (inf,):

        async def reconcile(request: Request) -> None:
            await calls.record(request)
            if len(calls.requests) == 1:
                await asyncio.Event().wait()  # hangs: only the timeout ends it

        ctl = Controller(
            reconcile,
            for_=inf,
            reconcile_timeout=0.05,
            rate_limiter=ExponentialBackoff(0.001, 0.001),
        )
        async with ctl:
            await calls.wait(2)
            await wait_until(lambda: ctl.statistics().succeeded == 1)
    stats = ctl.statistics()
    assert (stats.timeouts, stats.succeeded) == (1, 1)


async def test_stopping_lets_a_reconcile_in_flight_finish(api_server: ApiServer) -> None:
    server = api_server
    server.create(CONFIGMAPS, cm("a"))
    server.create(CONFIGMAPS, cm("b"))
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []
    async with informers(server, {}) as (inf,):

        async def reconcile(request: Request) -> None:
            started.set()
            await release.wait()
            finished.append(request.name)

        ctl = Controller(reconcile, for_=inf)
        ctl.start()
        await started.wait()
        stopping = asyncio.create_task(ctl.stop())
        await wait_until(lambda: ctl.state is ControllerState.STOPPING)
        release.set()
        await stopping
    assert finished == ["a"]  # finished, and b was never taken
    assert ctl.state is ControllerState.STOPPED
    assert ctl.statistics().cancelled == 0


async def test_a_reconcile_past_the_shutdown_deadline_is_cancelled(api_server: ApiServer) -> None:
    server = api_server
    server.create(CONFIGMAPS, cm("a"))
    started = asyncio.Event()
    async with informers(server, {}) as (inf,):

        async def reconcile(request: Request) -> None:
            started.set()
            await asyncio.Event().wait()

        ctl = Controller(reconcile, for_=inf, shutdown_timeout=0.01)
        ctl.start()
        await started.wait()
        await ctl.stop()
    assert ctl.statistics().cancelled == 1
    assert ctl.state is ControllerState.STOPPED


async def test_resync_queues_every_key_at_the_lowest_priority(api_server: ApiServer) -> None:
    server = api_server
    clock = ManualClock()
    calls = Calls()
    for name in ("a", "b"):
        server.create(CONFIGMAPS, cm(name))
    async with informers(server, {}) as (inf,):
        ctl = Controller(calls.record, for_=inf, clock=clock, resync_period=60.0)
        with capture_logs() as logs:
            async with ctl:
                await calls.wait(2)
                await wait_until(lambda: clock.pending_timers == 1)
                clock.advance(59.0)
                assert len(calls.requests) == 2
                clock.advance(1.0)
                await calls.wait(4)
    assert sorted(calls.names[2:]) == ["a", "b"]
    priorities = [e["priority"] for e in logs if e["event"] == "controller.reconciled"]
    assert priorities == [Priority.INITIAL] * 2 + [Priority.RESYNC] * 2


async def test_a_controller_runs_again_after_stopping_from_the_caches(
    api_server: ApiServer,
) -> None:
    server = api_server
    calls = Calls()
    server.create(CONFIGMAPS, cm("a"))
    async with informers(server, {}) as (inf,):
        ctl = Controller(calls.record, for_=inf)
        async with ctl:
            await calls.wait(1)
        server.create(CONFIGMAPS, cm("b"))
        await inf.wait_for_resource_version(
            server.format_resource_version(server.revision), timeout=10
        )
        async with ctl:  # e.g. leadership regained: every cached key is reconciled
            await calls.wait(3)
            with pytest.raises(RuntimeError):
                await ctl.run()  # already running
    assert calls.names[0] == "a" and sorted(calls.names[1:]) == ["a", "b"]


async def test_statistics_and_a_log_line_per_reconcile(api_server: ApiServer) -> None:
    server = api_server
    calls = Calls()
    server.create(CONFIGMAPS, cm("a"))
    async with informers(server, {}) as (inf,):
        with capture_logs() as logs:
            async with Controller(calls.record, for_=inf, name="mirror", workers=3) as ctl:
                await calls.wait(1)
                await wait_until(lambda: ctl.statistics().succeeded == 1)
                stats = ctl.statistics()
    assert stats.state is ControllerState.RUNNING
    assert (stats.workers, stats.reconciles, stats.duration.count) == (3, 1, 1)
    assert stats.queue.adds == 1
    [line] = [e for e in logs if e["event"] == "controller.reconciled"]
    assert line["controller"] == "mirror" and line["key"] == "default/a"
    assert line["result"] == "succeeded" and line["priority"] == Priority.INITIAL
    assert isinstance(line["duration"], float)


def test_options_are_checked() -> None:
    inf = Informer(Transport(NoApi()), CONFIGMAPS, options=replace(FAST))
    with pytest.raises(ValueError):
        Controller(lambda r: asyncio.sleep(0), for_=inf, workers=0)


async def test_a_requeue_keeps_the_keys_priority_unless_the_reconcile_sets_one(
    api_server: ApiServer,
) -> None:
    clock = ManualClock()
    calls = Calls()
    api_server.create(CONFIGMAPS, cm("a"))
    async with informers(api_server, {}) as (inf,):

        async def reconcile(request: Request) -> float | Result | None:
            await calls.record(request)
            if len(calls.requests) == 1:
                return 1.0  # keeps INITIAL
            if len(calls.requests) == 2:
                return Result(requeue_after=1.0, priority=Priority.LIVE + 5)
            return None

        ctl = Controller(reconcile, for_=inf, clock=clock)
        with capture_logs() as logs:
            async with ctl:
                for n in (1, 2):
                    await calls.wait(n)
                    await wait_until(lambda: ctl.queue.statistics().waiting == 1)
                    clock.advance(1.0)
                await calls.wait(3)
                await wait_until(lambda: ctl.statistics().succeeded == 1)
    priorities = [e["priority"] for e in logs if e["event"] == "controller.reconciled"]
    assert priorities == [Priority.INITIAL, Priority.INITIAL, Priority.LIVE + 5]
