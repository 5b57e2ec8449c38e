"""Read-your-own-writes in the controller: no reconcile on a cache older than the controller's
own last write, through real HTTP, with the children's watch stalled by a Fault.

The classic duplicate create: a controller creates a child (``generateName``) per parent; the
parent changes again before the child's watch event arrived; a controller reading its cache sees
no child and creates a second one. With the writes client given to the Controller, the second
reconcile waits for the cache to show the child, and while it does not, the key is requeued
(a stale skip) instead of reconciled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from informer._log import capture_logs
from informer.client import Client
from informer.controller import Controller, ControllerState, Request, controller_owner
from informer.informer import Informer
from informer.objects import KubeObject
from informer.resource import CONFIGMAPS, SECRETS
from informer.testing import ApiServer, Fault
from informer.transport import Transport
from informer.workqueue import ExponentialBackoff
from tests.conftest import FAST, cm, wait_until

CHILD_WATCH_STALL = 60.0  # ended by restarting the children's informer, never waited out


def is_child_request(r: Any) -> bool:
    return r.verb in ("list", "watch") and r.query.get("labelSelector") == "role=child"


def is_child_watch(r: Any) -> bool:
    return r.verb == "watch" and is_child_request(r)


@dataclass
class Setup:
    server: ApiServer
    client: Client
    parents: Informer
    children: Informer

    def children_of(self, request: Request) -> list[KubeObject]:
        return [
            c
            for c in self.children.store.list(request.namespace)
            if controller_owner(c, CONFIGMAPS) == request
        ]

    def creates(self) -> int:
        return sum(1 for r in self.server.requests if r.verb == "create")

    async def stall_children_watch(self) -> None:
        """From now on the children's watch delivers nothing (until ``resume_children``).

        The running informer's watch must have been answered before it is stopped: a watch
        request still in flight would reach the server after the stop, take the fault and
        stall a stream nobody reads, while the new run's watch delivers everything."""
        requests = self.server.requests

        def watch_answered() -> bool:
            last = [r for r in requests if is_child_request(r)][-1]
            return is_child_watch(last) and last.status != 0

        await wait_until(watch_answered)
        await self.children.stop()
        fault = self.server.faults.add(
            Fault(verb="watch", predicate=is_child_watch, after_events=1, stall=CHILD_WATCH_STALL)
        )
        self.children.start()  # a new watch, that the fault applies to
        stalled = (await self.server.wait_for_requests(lambda r: r.fault is fault))[0]
        await wait_until(lambda: stalled.status == 200)  # streaming from before the noise
        noise = cm("noise")
        noise["metadata"]["labels"] = {"role": "child"}
        self.server.create(CONFIGMAPS, noise)  # the one event delivered before the stall
        await wait_until(lambda: "default/noise" in self.children.store)
        since = requests[next(i for i, r in enumerate(requests) if r is stalled) + 1 :]
        assert not any(is_child_request(r) for r in since), "the stalled watch is not the one read"

    async def resume_children(self) -> None:
        await self.children.stop()  # cuts the stalled stream; the fault fired once already
        self.children.start()


@asynccontextmanager
async def setup(server: ApiServer) -> AsyncIterator[Setup]:
    api = server.api_client()
    try:
        options = replace(FAST, idle_timeout=CHILD_WATCH_STALL * 2)
        parents = Informer(Transport(api), CONFIGMAPS, label_selector="role=parent", options=FAST)
        children = Informer(
            Transport(api), CONFIGMAPS, label_selector="role=child", options=options
        )
        async with parents, children:
            await parents.wait_for_sync(10)
            await children.wait_for_sync(10)
            yield Setup(server, Client(api), parents, children)
            await children.stop()  # before the server: a stalled stream would hold it
    finally:
        await api.close()


def one_child_per_parent(s: Setup) -> Any:
    """The reconcile of a controller that creates one child per parent (by generateName)."""

    async def reconcile(request: Request) -> None:
        parent = s.parents.store.get(request.name, request.namespace)
        if parent is None or s.children_of(request):
            return
        await s.client.create(
            CONFIGMAPS,
            {
                "metadata": {
                    "generateName": f"{request.name}-",
                    "namespace": request.namespace,
                    "labels": {"role": "child"},
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "name": parent.name,
                            "uid": parent.uid,
                            "controller": True,
                        }
                    ],
                }
            },
        )

    return reconcile


def parent(name: str) -> dict[str, Any]:
    body = cm(name)
    body["metadata"]["labels"] = {"role": "parent"}
    return body


FAST_RETRY = ExponentialBackoff(0.005, 0.05)


async def test_a_controller_never_creates_a_child_twice_while_its_cache_lags(
    api_server: ApiServer,
) -> None:
    async with setup(api_server) as s:
        ctl = Controller(
            one_child_per_parent(s),
            for_=s.parents,
            owns=[s.children],
            client=s.client,
            freshness_timeout=0.05,
            rate_limiter=FAST_RETRY,
        )
        async with ctl:
            await ctl.wait_running(10)
            await s.stall_children_watch()
            s.server.create(CONFIGMAPS, parent("p"))
            await wait_until(lambda: s.creates() == 1)
            s.server.patch(CONFIGMAPS, "p", {"data": {"k": "2"}}, namespace="default")
            await wait_until(lambda: ctl.statistics().stale_skips >= 2)
            assert s.creates() == 1  # the cache shows no child, yet the controller waits
            await s.resume_children()
            await wait_until(lambda: len(s.children_of(Request("p", "default"))) == 1)
            await wait_until(lambda: ctl.statistics().succeeded >= 2)
            stats = ctl.statistics()
        assert s.creates() == 1
        assert stats.writes_tracked == 1 and stats.errors == 0
        assert stats.freshness_wait.count >= 3


async def test_only_informers_that_can_hold_the_write_are_waited_for(
    api_server_factory: Any,
) -> None:
    """Parents and children are ConfigMaps told apart by a label selector: the parents' informer
    never sees a child's event (its cache version moves on bookmarks only), so waiting for it
    would stall every reconcile until the freshness bound."""
    server = await api_server_factory(bookmark_interval=3600.0)  # no bookmark moves it on
    async with setup(server) as s:
        ctl = Controller(
            one_child_per_parent(s),
            for_=s.parents,
            owns=[s.children],
            client=s.client,
            freshness_timeout=60.0,
        )
        async with ctl:
            s.server.create(CONFIGMAPS, parent("p"))
            await wait_until(lambda: len(s.children_of(Request("p", "default"))) == 1)
            # the child's own event queues its owner: reconciled without waiting for the parents
            await wait_until(lambda: ctl.statistics().succeeded == 2)
            stats = ctl.statistics()
        assert (stats.stale_skips, stats.writes_tracked, s.creates()) == (0, 1, 1)


async def test_without_read_your_writes_the_same_controller_creates_twice(
    api_server: ApiServer,
) -> None:
    async with setup(api_server) as s:
        ctl = Controller(one_child_per_parent(s), for_=s.parents, owns=[s.children])
        async with ctl:  # no client: nothing recorded, nothing awaited
            await ctl.wait_running(10)
            await s.stall_children_watch()
            s.server.create(CONFIGMAPS, parent("p"))
            await wait_until(lambda: s.creates() == 1)
            s.server.patch(CONFIGMAPS, "p", {"data": {"k": "2"}}, namespace="default")
            await wait_until(lambda: s.creates() == 2)  # the classic duplicate
            await s.resume_children()
            await wait_until(lambda: len(s.children_of(Request("p", "default"))) == 2)
        assert ctl.statistics().stale_skips == 0


async def test_a_delete_is_awaited_by_uid_before_the_next_reconcile(api_server: ApiServer) -> None:
    deletes: list[str] = []
    async with setup(api_server) as s:

        async def reconcile(request: Request) -> None:
            for child in s.children_of(request):  # the parent wants no children
                deletes.append(child.name)
                await s.client.delete(CONFIGMAPS, child.name, child.namespace)

        ctl = Controller(
            reconcile,
            for_=s.parents,
            owns=[s.children],
            client=s.client,
            freshness_timeout=0.05,
            rate_limiter=FAST_RETRY,
        )
        p = s.server.create(CONFIGMAPS, parent("p"))
        kid = cm("kid")
        kid["metadata"]["labels"] = {"role": "child"}
        kid["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "p",
                "uid": p["metadata"]["uid"],
                "controller": True,
            }
        ]
        s.server.create(CONFIGMAPS, kid)
        await wait_until(lambda: "default/kid" in s.children.store)
        await s.stall_children_watch()
        async with ctl:
            await wait_until(lambda: deletes == ["kid"])
            s.server.patch(CONFIGMAPS, "p", {"data": {"k": "2"}}, namespace="default")
            await wait_until(lambda: ctl.statistics().stale_skips >= 2)
            assert "default/kid" in s.children.store  # still cached: reconciling would delete again
            await s.resume_children()
            await wait_until(lambda: "default/kid" not in s.children.store)
            await wait_until(lambda: ctl.statistics().succeeded >= 2)
    assert deletes == ["kid"]
    assert sum(1 for r in s.server.requests if r.verb == "delete") == 1


async def test_writes_outside_a_reconcile_or_to_unwatched_resources_are_not_tracked(
    api_server: ApiServer,
) -> None:
    async with setup(api_server) as s:

        async def write_a_secret(request: Request) -> None:  # no informer of secrets: no wait
            body = {"metadata": {"name": request.name, "namespace": "default"}}
            await s.client.create(SECRETS, body)

        ctl = Controller(write_a_secret, for_=s.parents, client=s.client)
        async with ctl:
            await ctl.wait_running(10)
            await s.client.create(CONFIGMAPS, parent("outside"))  # not in a reconcile
            await wait_until(lambda: ctl.statistics().succeeded == 1)
        assert ctl.statistics().writes_tracked == 0
        assert s.server.get(SECRETS, "outside", namespace="default") is not None


async def test_opaque_resource_versions_fail_open_logged_once(api_server_factory: Any) -> None:
    server = await api_server_factory("opaque-rv")
    async with setup(server) as s:
        ctl = Controller(
            one_child_per_parent(s), for_=s.parents, owns=[s.children], client=s.client
        )
        with capture_logs() as logs:
            async with ctl:
                s.server.create(CONFIGMAPS, parent("p1"))
                s.server.create(CONFIGMAPS, parent("p2"))
                await wait_until(lambda: s.creates() == 2)
                await wait_until(lambda: ctl.statistics().succeeded >= 2)
    warnings = [e for e in logs if e["event"] == "controller.rv_not_comparable"]
    assert len(warnings) == 1
    assert ctl.statistics().stale_skips == 0


async def test_stopping_does_not_wait_out_a_freshness_wait(api_server: ApiServer) -> None:
    async with setup(api_server) as s:
        ctl = Controller(
            one_child_per_parent(s),
            for_=s.parents,
            owns=[s.children],
            client=s.client,
            freshness_timeout=3600.0,  # only a stop can end it
        )
        ctl.start()
        await ctl.wait_running(10)
        await s.stall_children_watch()
        s.server.create(CONFIGMAPS, parent("p"))
        await wait_until(lambda: s.creates() == 1)
        s.server.patch(CONFIGMAPS, "p", {"data": {"k": "2"}}, namespace="default")
        # the first reconcile is over; the second is taken and waits for the child's event
        await wait_until(
            lambda: ctl.statistics().reconciles == 1 and ctl.queue.statistics().processing == 1
        )
        async with asyncio.timeout(10):
            await ctl.stop()  # the worker waiting for freshness is cut, not awaited
        stats = ctl.statistics()
        assert (stats.reconciles, stats.stale_skips, s.creates()) == (1, 0, 1)


def is_catch_up_list(r: Any) -> bool:
    return r.verb == "list" and r.query.get("limit") == "500"


async def test_a_run_first_catches_up_with_the_server_as_a_new_leader_must(
    api_server: ApiServer,
) -> None:
    """Warm caches can lag behind the previous leader's writes: the workers start only once the
    caches hold what a consistent list showed when the run started."""
    async with setup(api_server) as s:
        await s.stall_children_watch()
        late = cm("late")
        late["metadata"]["labels"] = {"role": "child"}
        s.server.create(CONFIGMAPS, late)  # written by "the previous leader": not in the cache
        seen: list[str] = []

        async def reconcile(request: Request) -> None:
            seen.append(request.name)

        lists = sum(1 for r in s.server.requests if is_catch_up_list(r))
        ctl = Controller(reconcile, for_=s.children, freshness_timeout=3600.0)
        ctl.start()
        await s.server.wait_for_requests(is_catch_up_list, count=lists + 1)
        await wait_until(lambda: s.server.requests[-1].status != 0)
        assert ctl.state is ControllerState.SYNCING and seen == []
        await s.resume_children()
        await ctl.wait_running(10)
        await wait_until(lambda: sorted(seen) == ["late", "noise"])
        await ctl.stop()


async def test_without_catch_up_a_run_starts_on_the_cache_as_it_is(api_server: ApiServer) -> None:
    async with setup(api_server) as s:
        await s.stall_children_watch()
        late = cm("late")
        late["metadata"]["labels"] = {"role": "child"}
        s.server.create(CONFIGMAPS, late)
        seen: list[str] = []

        async def reconcile(request: Request) -> None:
            seen.append(request.name)

        async with Controller(reconcile, for_=s.children, catch_up=False) as ctl:
            await ctl.wait_running(10)
            await wait_until(lambda: seen == ["noise"])
            await s.resume_children()
            await wait_until(lambda: sorted(seen) == ["late", "noise"])


async def test_catching_up_waits_for_deletions_the_cache_has_not_seen(
    api_server: ApiServer,
) -> None:
    async with setup(api_server) as s:
        await s.stall_children_watch()
        s.server.delete(CONFIGMAPS, "noise", namespace="default")  # the cache still holds it
        seen: list[tuple[str, bool]] = []

        async def reconcile(request: Request) -> None:
            seen.append((request.name, request.key in s.children.store))

        lists = sum(1 for r in s.server.requests if is_catch_up_list(r))
        ctl = Controller(reconcile, for_=s.children, freshness_timeout=3600.0)
        ctl.start()
        await s.server.wait_for_requests(is_catch_up_list, count=lists + 1)
        await wait_until(lambda: s.server.requests[-1].status != 0)
        assert ctl.state is ControllerState.SYNCING
        await s.resume_children()
        await ctl.wait_running(10)
        assert "default/noise" not in s.children.store
        await ctl.stop()
    assert seen in ([], [("noise", False)])  # never reconciled as if it still existed
