"""WATCH: start semantics, expiry, timeouts, bookmarks, selector transitions, watch-list."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

INITIAL_END = {"k8s.io/initial-events-end": "true"}


async def seeded(factory: Any, count: int = 3, **kwargs: Any) -> ApiServer:
    server: ApiServer = await factory(**{"too_large_wait": 0.01, **kwargs})
    for i in range(count):
        server.create(CONFIGMAPS, cm(f"cm-{i}", app="a"))
    return server


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_rv_unset_sends_synthetic_added_then_changes(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(server, CM_PATH) as watch:
        assert watch.status == 200
        assert watch.response.headers["Content-Type"].startswith("application/json")
        initial = await watch.take(3)
        assert summary(initial) == [("ADDED", "cm-0"), ("ADDED", "cm-1"), ("ADDED", "cm-2")]
        assert initial[0]["object"]["kind"] == "ConfigMap"
        server.patch(CONFIGMAPS, "cm-1", {"data": {"k": "v2"}}, "default")
        deleted = server.delete(CONFIGMAPS, "cm-0", "default")
        modified, gone = await watch.take(2)
        assert modified["type"] == "MODIFIED"
        assert modified["object"]["metadata"]["resourceVersion"] == str(server.revision - 1)
        assert gone["type"] == "DELETED"
        assert gone["object"]["metadata"]["resourceVersion"] == str(server.revision)
        assert deleted["metadata"]["resourceVersion"] == str(server.revision)


async def test_rv0_sends_synthetic_added(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(server, CM_PATH, resourceVersion="0") as watch:
        assert summary(await watch.take(3))[0] == ("ADDED", "cm-0")


async def test_rvN_sends_only_changes_after_N(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    start = server.revision - 1  # cm-2 was created after it
    async with client.watch(server, CM_PATH, resourceVersion=start) as watch:
        server.create(CONFIGMAPS, cm("cm-3"))
        events = await watch.take(2)
    assert summary(events) == [("ADDED", "cm-2"), ("ADDED", "cm-3")]


async def test_future_rv_waits_for_the_revision(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(server, CM_PATH, resourceVersion=server.revision + 1) as watch:
        await server.wait_for_watchers(1)
        server.create(CONFIGMAPS, cm("skipped"))  # revision N+1 itself is not "after N+1"
        server.create(CONFIGMAPS, cm("seen"))
        assert summary(await watch.take(1)) == [("ADDED", "seen")]


async def test_compacted_rv_is_200_then_one_error_event(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, watch_cache_quirks=False)  # etcd serves it
    old = server.revision - 2
    server.compact()
    async with client.watch(server, CM_PATH, resourceVersion=old) as watch:
        assert watch.status == 200
        raw = await watch.line()
        assert raw == (
            b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":'
            b'"Failure","message":"The resourceVersion for the provided watch is too old.",'
            b'"reason":"Expired","code":410}}\n'
        )
        assert await watch.next() is None


async def test_compacted_rv_from_the_watch_cache_uses_its_wording(
    api_server_factory: Any, client: Client
) -> None:
    # list-watch-semantics.md: watch cache on -> `too old resource version: 98 (103)`
    server = await seeded(api_server_factory)
    old = server.revision - 2
    server.compact()
    async with client.watch(server, CM_PATH, resourceVersion=old) as watch:
        assert watch.status == 200
        assert await watch.rest() == [
            {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": f"too old resource version: {old} ({server.revision})",
                    "reason": "Expired",
                    "code": 410,
                },
            }
        ]


async def test_compaction_by_count_and_age(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, compaction_window=1)
    async with client.watch(server, CM_PATH, resourceVersion=server.revision - 2) as watch:
        assert (await watch.take(1))[0]["type"] == "ERROR"
    aged = await seeded(api_server_factory, history_max_age=0.0)
    assert aged.compacted_revision == aged.revision


async def test_running_watch_keeps_events_across_compaction(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, compaction_window=1)
    async with client.watch(server, CM_PATH, resourceVersion=server.revision) as watch:
        await server.wait_for_watchers(1)
        for i in range(5):
            server.create(CONFIGMAPS, cm(f"burst-{i}"))
        server.compact()
        assert [n for _, n in summary(await watch.take(5))] == [f"burst-{i}" for i in range(5)]


async def test_timeout_seconds_ends_the_stream_cleanly(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=1)
    async with client.watch(server, CM_PATH, timeoutSeconds=1) as watch:
        events = await watch.rest()
    assert summary(events) == [("ADDED", "cm-0")]


async def test_bookmarks_only_after_a_newer_event_with_quirks(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    start = server.revision
    async with client.watch(
        server, CM_PATH, resourceVersion=start, allowWatchBookmarks="true"
    ) as watch:
        await server.wait_for_watchers(1)
        assert server.send_bookmarks(CONFIGMAPS) == 1  # a quiet resource gets none
        server.create(CONFIGMAPS, cm("new"))
        assert (await watch.take(1))[0]["type"] == "ADDED"
        server.send_bookmarks()
        bookmark = (await watch.take(1))[0]
    assert bookmark == {
        "type": "BOOKMARK",
        "object": {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(start + 1)},
        },
    }


async def test_forced_bookmark_on_a_quiet_watch(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(
        server, CM_PATH, resourceVersion=server.revision, allowWatchBookmarks="true"
    ) as watch:
        await server.wait_for_watchers(1)
        server.send_bookmarks(force=True)
        bookmark = (await watch.take(1))[0]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["resourceVersion"] == str(server.revision)


@pytest.mark.parametrize(
    ("personality", "metadata_keys"),
    [("modern", ["resourceVersion"]), ("legacy", ["resourceVersion", "creationTimestamp"])],
)
async def test_bookmark_metadata_is_the_servers_generation(
    api_server_factory: Any, client: Client, personality: str, metadata_keys: list[str]
) -> None:
    """v1.36 bookmarks carry only the RV; v1.21 ones also ``"creationTimestamp":null``."""
    server = await seeded(api_server_factory, personality=personality)
    async with client.watch(
        server, CM_PATH, resourceVersion=server.revision, allowWatchBookmarks="true"
    ) as watch:
        await server.wait_for_watchers(1)
        server.send_bookmarks(force=True)
        bookmark = (await watch.take(1))[0]
    metadata = bookmark["object"]["metadata"]
    assert list(metadata) == metadata_keys
    assert metadata.get("creationTimestamp", None) is None


async def test_no_bookmarks_without_allow(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, watch_cache_quirks=False)
    async with client.watch(server, CM_PATH, resourceVersion=server.revision) as watch:
        await server.wait_for_watchers(1)
        assert server.send_bookmarks(force=True) == 0
        server.create(CONFIGMAPS, cm("x"))
        assert summary(await watch.take(1)) == [("ADDED", "x")]


async def test_periodic_and_pre_timeout_bookmarks_without_quirks(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(
        api_server_factory,
        watch_cache_quirks=False,
        bookmark_interval=0.05,
        bookmark_before_timeout=0.9,
    )
    async with client.watch(
        server,
        CM_PATH,
        resourceVersion=server.revision,
        allowWatchBookmarks="true",
        timeoutSeconds=1,
    ) as watch:
        events = await watch.rest()
    assert events and {e["type"] for e in events} == {"BOOKMARK"}
    assert events[-1]["object"]["metadata"]["resourceVersion"] == str(server.revision)


async def test_pre_timeout_bookmark(api_server_factory: Any, client: Client) -> None:
    server = await seeded(
        api_server_factory,
        watch_cache_quirks=False,
        bookmark_interval=3600,
        bookmark_before_timeout=0.95,
    )
    async with client.watch(
        server,
        CM_PATH,
        resourceVersion=server.revision,
        allowWatchBookmarks="true",
        timeoutSeconds=1,
    ) as watch:
        events = await watch.rest()
    assert [e["type"] for e in events] == ["BOOKMARK"]


async def test_no_bookmark_after_the_pre_timeout_one(
    api_server_factory: Any, client: Client
) -> None:
    # cacheWatcher.nextBookmarkTime: min(now + interval, deadline - 2s), never again afterwards
    server = await seeded(
        api_server_factory,
        watch_cache_quirks=False,
        bookmark_interval=0.3,
        bookmark_before_timeout=0.9,
    )
    async with client.watch(
        server,
        CM_PATH,
        resourceVersion=server.revision,
        allowWatchBookmarks="true",
        timeoutSeconds=1,
    ) as watch:
        events = await watch.rest()
    assert [e["type"] for e in events] == ["BOOKMARK"]


async def test_no_bookmarks_when_the_timeout_is_shorter_than_the_pre_timeout_margin(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(
        api_server_factory,
        watch_cache_quirks=False,
        bookmark_interval=0.01,
        bookmark_before_timeout=2.0,
    )
    async with client.watch(
        server,
        CM_PATH,
        resourceVersion=server.revision,
        allowWatchBookmarks="true",
        timeoutSeconds=1,
    ) as watch:
        assert await watch.rest() == []


async def test_label_selector_transitions(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=1)
    async with client.watch(
        server, CM_PATH, resourceVersion=server.revision, labelSelector="app=a"
    ) as watch:
        await server.wait_for_watchers(1)
        server.patch(CONFIGMAPS, "cm-0", {"metadata": {"labels": {"app": "b"}}}, "default")
        server.patch(CONFIGMAPS, "cm-0", {"data": {"k": "ignored"}}, "default")
        server.patch(CONFIGMAPS, "cm-0", {"metadata": {"labels": {"app": "a"}}}, "default")
        server.patch(CONFIGMAPS, "cm-0", {"data": {"k": "seen"}}, "default")
        events = await watch.take(3)
    assert [e["type"] for e in events] == ["DELETED", "ADDED", "MODIFIED"]
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == [server.revision - 3, server.revision - 1, server.revision]
    assert events[0]["object"]["metadata"]["labels"] == {"app": "a"}  # the last matching state


async def test_field_selector_namespace_and_object_watch(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=2)
    async with client.watch(server, "/api/v1/watch/namespaces/default/configmaps/cm-1") as watch:
        assert summary(await watch.take(1)) == [("ADDED", "cm-1")]
    async with client.watch(
        server, "/api/v1/configmaps", fieldSelector="metadata.namespace=other"
    ) as watch:
        await server.wait_for_watchers(1)
        server.create(CONFIGMAPS, cm("cm-9"))  # default: filtered out
        server.create(CONFIGMAPS, cm("o", namespace="other"))
        assert summary(await watch.take(1)) == [("ADDED", "o")]


async def test_watch_list_initial_events_then_end_bookmark(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(
        server,
        CM_PATH,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
    ) as watch:
        events = await watch.take(4)
        assert summary(events[:3]) == [("ADDED", "cm-0"), ("ADDED", "cm-1"), ("ADDED", "cm-2")]
        end = events[3]
        assert end["type"] == "BOOKMARK"
        assert end["object"]["metadata"] == {
            "resourceVersion": str(server.revision),
            "annotations": INITIAL_END,
        }
        server.create(CONFIGMAPS, cm("after"))
        assert summary(await watch.take(1)) == [("ADDED", "after")]


async def test_watch_list_without_allow_bookmarks_has_no_end_bookmark(
    api_server_factory: Any, client: Client
) -> None:
    # cacher.isListWatchRequest needs allowWatchBookmarks: the initial events come, no end marker
    server = await seeded(api_server_factory, watch_cache_quirks=False)
    async with client.watch(
        server,
        CM_PATH,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        timeoutSeconds=1,
    ) as watch:
        events = await watch.rest()
    assert summary(events) == [("ADDED", "cm-0"), ("ADDED", "cm-1"), ("ADDED", "cm-2")]


async def test_watch_list_future_rv_is_an_error_event_not_http_504(
    api_server_factory: Any, client: Client
) -> None:
    # waitUntilFreshLocked fails inside cacher.Watch: newErrWatcher, a 200 stream with one ERROR
    server = await seeded(api_server_factory)
    async with client.watch(
        server,
        CM_PATH,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        resourceVersion="999999",
        allowWatchBookmarks="true",
    ) as watch:
        assert watch.status == 200
        raw = await watch.line()
        assert raw == (
            b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":'
            b'"Failure","message":"Timeout: Too large resource version: 999999, current: '
            + str(server.revision).encode()
            + b'","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge",'
            b'"message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}}\n'
        )
        assert await watch.next() is None


async def test_watch_list_from_an_rv_the_server_reaches(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(
        server,
        CM_PATH,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        resourceVersion=server.revision - 1,
        allowWatchBookmarks="true",
    ) as watch:
        events = await watch.take(4)
    assert [e["type"] for e in events] == ["ADDED"] * 3 + ["BOOKMARK"]
    assert events[3]["object"]["metadata"]["annotations"] == INITIAL_END
    assert events[3]["object"]["metadata"]["resourceVersion"] == str(server.revision)


async def test_watch_list_send_initial_false_starts_at_now(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory)
    async with client.watch(
        server, CM_PATH, sendInitialEvents="false", resourceVersionMatch="NotOlderThan"
    ) as watch:
        await server.wait_for_watchers(1)
        server.create(CONFIGMAPS, cm("after"))
        assert summary(await watch.take(1)) == [("ADDED", "after")]


@pytest.mark.parametrize(
    ("params", "messages"),
    [
        (
            {"sendInitialEvents": "true"},
            [
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                "resourceVersionMatch to NotOlderThan"
            ],
        ),
        (
            {"resourceVersionMatch": "NotOlderThan"},
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch "
                "unless sendInitialEvents is provided"
            ],
        ),
        (
            {"sendInitialEvents": "true", "resourceVersionMatch": "Exact"},
            [
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                "resourceVersionMatch to NotOlderThan",
                'resourceVersionMatch: Unsupported value: "Exact": '
                'supported values: "NotOlderThan"',
            ],
        ),
    ],
)
async def test_watch_validation(
    api_server_factory: Any, client: Client, params: dict[str, str], messages: list[str]
) -> None:
    server = await seeded(api_server_factory)
    reply = await client.get(server, CM_PATH, watch="true", **params)
    assert reply.status == 422
    body = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    assert reply.body["message"] == f'ListOptions.meta.k8s.io "" is invalid: {body}'


async def test_stop_closes_open_watches(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=0)
    async with client.watch(server, CM_PATH) as watch:
        await server.wait_for_watchers(1, resource=CONFIGMAPS)
        await server.stop()
        assert await watch.rest() == []
    assert server.watcher_count() == 0


async def test_watcher_count_drops_when_client_goes_away(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=0)
    async with client.watch(server, CM_PATH):
        await server.wait_for_watchers(1, resource="configmaps")
    await server.wait_for_watchers_closed()
    assert server.watcher_count() == 0
