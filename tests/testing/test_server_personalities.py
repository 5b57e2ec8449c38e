"""One test (or a few) per personality: the servers a client must survive."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.resource_version import is_comparable
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm, names

pytestmark = pytest.mark.asyncio


async def seeded(factory: Any, personality: str, count: int = 5, **kwargs: Any) -> ApiServer:
    server: ApiServer = await factory(personality, **{"too_large_wait": 0.01, **kwargs})
    for i in range(count):
        server.create(CONFIGMAPS, cm(f"cm-{i}"))
    return server


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


# -- legacy ------------------------------------------------------------------------------------


async def test_legacy_not_older_than_with_limit_acts_exact_and_may_410(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "legacy")
    old = server.revision - 2
    reply = await client.get(
        server, CM_PATH, resourceVersion=old, resourceVersionMatch="NotOlderThan", limit=2
    )
    assert reply.body["metadata"]["resourceVersion"] == str(old)  # Exact, not newest
    server.compact()
    gone = await client.get(
        server, CM_PATH, resourceVersion=old, resourceVersionMatch="NotOlderThan", limit=2
    )
    assert gone.status == 410
    assert gone.body["message"] == "The resourceVersion for the provided list is too old."


async def test_legacy_exact_without_limit_acts_not_older_than(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "legacy")
    old = server.revision - 2
    reply = await client.get(server, CM_PATH, resourceVersion=old, resourceVersionMatch="Exact")
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == str(server.revision) != str(old)


async def test_legacy_ignores_invalid_match_and_send_initial_events(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "legacy", count=2)
    reply = await client.get(server, CM_PATH, resourceVersionMatch="Exact", sendInitialEvents="1")
    assert reply.status == 200 and len(reply.body["items"]) == 2
    async with client.watch(
        server,
        CM_PATH,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
        timeoutSeconds=1,
    ) as watch:
        events = await watch.rest()
    assert kinds(events)[:2] == ["ADDED", "ADDED"]
    assert not any("annotations" in e["object"]["metadata"] for e in events[2:])  # no end marker


async def test_legacy_rv0_limit_paginates(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, "legacy")
    reply = await client.get(server, CM_PATH, resourceVersion="0", limit=2)
    assert names(reply.body) == ["cm-0", "cm-1"]  # no watch-cache quirk by default


# -- no-watch-list (v1.21) ---------------------------------------------------------------------


async def test_v121_watch_with_match_is_422(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, "no-watch-list")
    reply = await client.get(
        server,
        CM_PATH,
        watch="true",
        resourceVersion="1",
        resourceVersionMatch="NotOlderThan",
        sendInitialEvents="true",
    )
    assert reply.status == 422
    assert reply.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        '"ListOptions.meta.k8s.io \\"\\" is invalid: resourceVersionMatch: Forbidden: '
        'resourceVersionMatch is forbidden for watch","reason":"Invalid","details":{"group":'
        '"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":'
        '"Forbidden: resourceVersionMatch is forbidden for watch","field":'
        '"resourceVersionMatch"}]},"code":422}\n'
    )
    no_rv = await client.get(
        server, CM_PATH, watch="true", resourceVersionMatch="NotOlderThan", sendInitialEvents="true"
    )
    assert no_rv.status == 422
    assert len(no_rv.body["details"]["causes"]) == 2


async def test_v121_ignores_send_initial_events_without_match(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "no-watch-list", count=2)
    async with client.watch(
        server, CM_PATH, sendInitialEvents="true", allowWatchBookmarks="true", timeoutSeconds=1
    ) as watch:
        events = await watch.rest()
    assert kinds(events) == ["ADDED", "ADDED"]  # quirks: no bookmark on a quiet resource
    async with client.watch(
        server, CM_PATH, sendInitialEvents="true", resourceVersion=server.revision
    ) as watch:
        await server.wait_for_watchers(1)
        server.create(CONFIGMAPS, cm("later"))
        assert kinds(await watch.take(1)) == ["ADDED"]  # plain watch from the RV


async def test_v121_list_supports_match(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, "no-watch-list")
    old = server.revision - 1
    reply = await client.get(server, CM_PATH, resourceVersion=old, resourceVersionMatch="Exact")
    assert reply.body["metadata"]["resourceVersion"] == str(old)
    sie = await client.get(server, CM_PATH, sendInitialEvents="true")
    assert sie.status == 200  # unknown parameter on a v1.21 list


# -- stale-replica -----------------------------------------------------------------------------


async def test_stale_replica_rv0_lags_and_consistent_read_is_fresh(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "stale-replica", count=8, stale_lag=3)
    stale = await client.get(server, CM_PATH, resourceVersion="0")
    assert stale.body["metadata"]["resourceVersion"] == str(server.revision - 3)
    assert sorted(names(stale.body)) == [f"cm-{i}" for i in range(5)]
    fresh = await client.get(server, CM_PATH)
    assert fresh.body["metadata"]["resourceVersion"] == str(server.revision)
    assert len(fresh.body["items"]) == 8
    got = await client.get(server, CM_PATH + "/cm-7", resourceVersion="0")
    assert got.status == 404  # the lagging cache has not seen it yet


async def test_stale_replica_newer_rv_is_504_too_large(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "stale-replica", stale_lag=3)
    reply = await client.get(
        server, CM_PATH, resourceVersion=server.revision, resourceVersionMatch="NotOlderThan"
    )
    assert reply.status == 504
    assert reply.body["message"] == (
        f"Timeout: Too large resource version: {server.revision}, current: {server.revision - 3}"
    )
    assert reply.headers["Retry-After"] == "1"
    ok = await client.get(server, CM_PATH, resourceVersion=server.revision - 3)
    assert ok.status == 200


async def test_stale_replica_watch_from_a_newer_rv_waits_for_the_replica(
    api_server_factory: Any, client: Client
) -> None:
    # a real watch never answers 504: the cacher establishes it and waits for changes after N
    server = await seeded(api_server_factory, "stale-replica", stale_lag=3)
    fresh = server.revision
    async with client.watch(server, CM_PATH, resourceVersion=fresh) as watch:
        assert watch.status == 200
        await server.wait_for_watchers(1)
        for i in range(4):  # the lagging view passes `fresh` after three more writes
            server.create(CONFIGMAPS, cm(f"new-{i}"))
        event = (await watch.take(1))[0]
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "new-0")
    assert event["object"]["metadata"]["resourceVersion"] == str(fresh + 1)


async def test_stale_replica_watch_events_arrive_late(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "stale-replica", count=3, stale_lag=2)
    async with client.watch(server, CM_PATH, resourceVersion="0") as watch:
        initial = await watch.take(1)  # the lagged state: cm-0 only
        assert [e["object"]["metadata"]["name"] for e in initial] == ["cm-0"]
        server.create(CONFIGMAPS, cm("cm-3"))
        server.create(CONFIGMAPS, cm("cm-4"))
        events = await watch.take(2)  # cm-1 and cm-2 become visible as the view advances
    assert [e["object"]["metadata"]["name"] for e in events] == ["cm-1", "cm-2"]


# -- opaque-rv ---------------------------------------------------------------------------------


async def test_opaque_rvs_are_not_decimal_and_are_accepted_back(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "opaque-rv")
    listed = await client.get(server, CM_PATH, limit=2)
    rv = listed.body["metadata"]["resourceVersion"]
    assert not is_comparable(rv)
    assert not any(is_comparable(i["metadata"]["resourceVersion"]) for i in listed.body["items"])
    exact = await client.get(server, CM_PATH, resourceVersion=rv, resourceVersionMatch="Exact")
    assert exact.body["metadata"]["resourceVersion"] == rv
    rest = await client.get(
        server, CM_PATH, limit=5, **{"continue": listed.body["metadata"]["continue"]}
    )
    assert rest.body["metadata"]["resourceVersion"] == rv and len(rest.body["items"]) == 3
    async with client.watch(server, CM_PATH, resourceVersion=rv) as watch:
        await server.wait_for_watchers(1)
        server.create(CONFIGMAPS, cm("new"))
        event = (await watch.take(1))[0]
    assert event["object"]["metadata"]["resourceVersion"] == server.format_resource_version(
        server.revision
    )
    bad = await client.get(server, CM_PATH, resourceVersion="12")
    assert bad.status == 400


# -- restored ----------------------------------------------------------------------------------


async def test_restored_goes_back_in_time_and_closes_watches(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, "restored", count=2)
    snapshot = server.revision
    server.create(CONFIGMAPS, cm("lost"))
    before = server.revision
    async with client.watch(server, CM_PATH, resourceVersion=before) as watch:
        await server.wait_for_watchers(1)
        server.restore(snapshot)
        assert await watch.rest() == []  # closed cleanly
    assert server.revision == snapshot < before
    assert server.get(CONFIGMAPS, "lost", "default") is None
    server.create(CONFIGMAPS, cm("reborn"))
    assert server.revision == snapshot + 1  # the counter reuses revisions
    listed = await client.get(server, CM_PATH)
    assert listed.body["metadata"]["resourceVersion"] == str(snapshot + 1)
    assert names(listed.body) == ["cm-0", "cm-1", "reborn"]
    old = await client.get(server, CM_PATH, resourceVersion=snapshot - 1, limit=1)
    assert old.status == 410  # the history window restarts at the restore


async def test_restored_future_watch_waits(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, "restored", count=2)
    snapshot = server.revision
    for i in range(3):
        server.create(CONFIGMAPS, cm(f"lost-{i}"))
    seen = server.revision
    server.restore(snapshot)
    async with client.watch(server, CM_PATH, resourceVersion=seen) as watch:
        await server.wait_for_watchers(1)
        for i in range(4):
            server.create(CONFIGMAPS, cm(f"new-{i}"))
        event = (await watch.take(1))[0]
    # the classic trap: new-0..new-2 reuse revisions the client already "saw" and are skipped
    assert event["object"]["metadata"]["name"] == "new-3"


async def test_unknown_personality_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown personality"):
        ApiServer("ancient")


async def test_every_personality_serves_lists(api_server_factory: Any, client: Client) -> None:
    from informer.testing import PERSONALITIES

    servers = await asyncio.gather(*(seeded(api_server_factory, p, count=1) for p in PERSONALITIES))
    for server in servers:
        reply = await client.get(server, CM_PATH)
        assert names(reply.body) == ["cm-0"], server.personality
