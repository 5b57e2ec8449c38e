"""Defaults and strategies of the reflector, indexes through an informer, backwards detection."""

from __future__ import annotations

import pytest
from conftest import NoApi, cm, running_informer

from informer.objects import KubeObject
from informer.reflector import Reflector, ReflectorOptions
from informer.reflector._watch import _ServerWentBackwards
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.transport import Transport, WatchEvent


async def test_default_watch_timeout_is_random_in_300_600_with_idle_margin() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        async with running_informer(server, options=ReflectorOptions(list_strategy="list")):
            watch = (await server.wait_for_requests(lambda r: r.verb == "watch"))[0]
        assert 300 <= int(watch.query["timeoutSeconds"]) <= 600
        assert ReflectorOptions().page_size == 500
        assert ReflectorOptions().list_strategy == "auto"
        assert ReflectorOptions().initial_list == "consistent"


async def test_stream_strategy_on_modern() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, list_strategy="stream") as inf:
            assert len(inf.store) == 1
        assert [r.verb for r in server.requests] == ["watch"]


async def test_stream_strategy_on_a_server_without_it_backs_off_and_never_lists() -> None:
    async with ApiServer("no-watch-list", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False, list_strategy="stream") as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=3)
            assert not inf.has_synced
            assert inf.statistics().errors >= 2
        assert all(r.verb == "watch" and r.status == 422 for r in server.requests)


async def test_indexes_through_an_informer() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a", "ns1", app="web"))
        server.create(CONFIGMAPS, cm("b", "ns2", app="web"))
        server.create(CONFIGMAPS, cm("c", "ns1", app="db"))
        async with running_informer(server) as inf:
            inf.store.add_index("app", lambda o: [o.labels.get("app", "")])
            assert sorted(o.name for o in inf.store.by_index("app", "web")) == ["a", "b"]
            assert sorted(o.name for o in inf.store.list("ns1")) == ["a", "c"]
            made = server.patch(CONFIGMAPS, "c", {"metadata": {"labels": {"app": "web"}}}, "ns1")
            await inf.wait_for_write(made, timeout=10)
            assert sorted(o.name for o in inf.store.by_index("app", "web")) == ["a", "b", "c"]
            assert inf.store.by_index("app", "db") == []


def _event(type_: str, name: str, rv: str) -> WatchEvent:
    body = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "d", "resourceVersion": rv},
    }
    return WatchEvent(type_, KubeObject.from_dict(body))  # type: ignore[arg-type]


def test_events_older_than_cache_again_and_again_mean_the_server_went_back() -> None:
    r = Reflector(Transport(NoApi()), CONFIGMAPS, options=ReflectorOptions(backwards_after=3))
    r.store.replace([], "100")
    r._handle(_event("ADDED", "a", "90"))  # one stale replay: dropped, counted
    r._handle(_event("ADDED", "b", "101"))  # progress resets the count
    r._handle(_event("BOOKMARK", "", "95"))  # an old bookmark never moves the RV back
    assert r.store.resource_version == "101"
    r._handle(_event("ADDED", "c", "91"))
    with pytest.raises(_ServerWentBackwards):
        r._handle(_event("ADDED", "d", "92"))
    assert r.statistics().stale_events_dropped == 2
