"""shardSelector (KEP-5866) as a v1.36 server answers it: gate on, gate off, watch cache off."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm, names

pytestmark = pytest.mark.asyncio

LOW = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
HIGH = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
INITIAL_END = {"k8s.io/initial-events-end": "true"}


def fnv1a_64(text: str) -> int:
    """Written out again here so the server is checked against an independent hash."""
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) % (1 << 64)
    return h


def low_half(obj: dict[str, Any]) -> bool:
    return fnv1a_64(obj["metadata"]["uid"]) < 1 << 63


async def seeded(factory: Any, count: int = 40, **kwargs: Any) -> tuple[ApiServer, set[str]]:
    """A server with ``count`` ConfigMaps; the names of those in the low half of the uid space."""
    server: ApiServer = await factory(**{"too_large_wait": 0.01, **kwargs})
    low = set()
    for i in range(count):
        obj = server.create(CONFIGMAPS, cm(f"cm-{i:02}", app="a"))
        if low_half(obj):
            low.add(obj["metadata"]["name"])
    assert count < 20 or 0 < len(low) < count  # both halves hold objects (random uids)
    return server, low


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_a_sharded_list_holds_the_range_and_says_so(
    api_server_factory: Any, client: Client
) -> None:
    server, low = await seeded(api_server_factory)
    every = {f"cm-{i:02}" for i in range(40)}
    reply = await client.get(server, CM_PATH, shardSelector=LOW)
    assert reply.status == 200
    assert set(names(reply.body)) == low
    assert reply.body["metadata"]["shardInfo"] == {"selector": LOW}
    high = await client.get(server, CM_PATH, shardSelector=HIGH, resourceVersion="0")
    assert set(names(high.body)) == every - low
    assert high.body["metadata"]["shardInfo"] == {"selector": HIGH}
    both = await client.get(server, CM_PATH, shardSelector=f"{LOW} || {HIGH}")
    assert set(names(both.body)) == every


async def test_the_echo_is_the_servers_spelling_of_what_was_sent(
    api_server_factory: Any, client: Client
) -> None:
    server, low = await seeded(api_server_factory)
    sent = f'( shardRange(object.metadata.uid,"0x0000000000000000","0x8000000000000000"))||{LOW}'
    reply = await client.get(server, CM_PATH, shardSelector=sent)
    assert set(names(reply.body)) == low
    assert reply.body["metadata"]["shardInfo"] == {"selector": f"{LOW} || {LOW}"}


async def test_namespaces_shard_whole_namespaces(api_server_factory: Any, client: Client) -> None:
    server: ApiServer = await api_server_factory()
    for ns in ("a", "b", "c", "d"):
        server.create(CONFIGMAPS, cm("x", namespace=ns))
    first = "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"
    reply = await client.get(server, "/api/v1/configmaps", shardSelector=first)
    got = {item["metadata"]["namespace"] for item in reply.body["items"]}
    assert got == {ns for ns in ("a", "b", "c", "d") if fnv1a_64(ns) < 1 << 63}


async def test_every_page_is_filtered_and_counts_the_unfiltered_rest(
    api_server_factory: Any, client: Client
) -> None:
    server, low = await seeded(api_server_factory)
    seen: list[str] = []
    first = await client.get(server, CM_PATH, shardSelector=LOW, limit=5)
    body = first.body
    assert len(body["items"]) == 5
    # the count is of the whole collection after the page: it over-estimates the shard's rest
    last = body["items"][-1]["metadata"]["name"]
    assert body["metadata"]["remainingItemCount"] == sum(
        1 for i in range(40) if f"cm-{i:02}" > last
    )
    while True:
        assert body["metadata"]["shardInfo"] == {"selector": LOW}
        seen += names(body)
        token = body["metadata"].get("continue")
        if not token:
            break
        body = (
            await client.get(server, CM_PATH, shardSelector=LOW, limit=5, **{"continue": token})
        ).body
    assert seen == sorted(low)


async def test_a_continue_token_does_not_remember_the_selector(
    api_server_factory: Any, client: Client
) -> None:
    server, _ = await seeded(api_server_factory)
    first = (await client.get(server, CM_PATH, shardSelector=LOW, limit=3)).body
    token = first["metadata"]["continue"]
    rest = (await client.get(server, CM_PATH, **{"continue": token})).body
    last = first["items"][-1]["metadata"]["name"]
    assert names(rest) == [f"cm-{i:02}" for i in range(40) if f"cm-{i:02}" > last]
    assert "shardInfo" not in rest["metadata"]


@pytest.mark.parametrize(
    ("selector", "why"),
    [
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
            '(did you mean "0x0000000000000000"?)',
        ),
        (f"{LOW} && {HIGH}", 'unsupported function "_&&_"; only shardRange() and || are allowed'),
        ("  ", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
    ],
)
async def test_a_malformed_selector_is_a_500_without_reason(
    api_server_factory: Any, client: Client, selector: str, why: str
) -> None:
    server, _ = await seeded(api_server_factory, 2)
    expected = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"invalid shard selector: {why}",
        "code": 500,
    }
    reply = await client.get(server, CM_PATH, shardSelector=selector)
    assert (reply.status, reply.body) == (500, expected)
    async with client.watch(server, CM_PATH, shardSelector=selector) as watch:
        assert watch.status == 500
        assert await watch.next() == expected  # a plain answer, not a stream line


async def test_an_empty_selector_is_the_parameter_absent(
    api_server_factory: Any, client: Client
) -> None:
    server, _ = await seeded(api_server_factory, 4)
    reply = await client.get(server, CM_PATH, shardSelector="")
    assert len(reply.body["items"]) == 4
    assert "shardInfo" not in reply.body["metadata"]


async def test_a_sharded_watch_sends_only_events_of_its_range(
    api_server_factory: Any, client: Client
) -> None:
    server, _ = await seeded(api_server_factory, 4)
    async with client.watch(
        server, CM_PATH, shardSelector=LOW, resourceVersion=server.revision
    ) as watch:
        made = [server.create(CONFIGMAPS, cm(f"new-{i:02}")) for i in range(20)]
        inside = [o["metadata"]["name"] for o in made if low_half(o)]
        for name in [o["metadata"]["name"] for o in made]:
            server.patch(CONFIGMAPS, name, {"data": {"k": "2"}}, "default")
            server.delete(CONFIGMAPS, name, "default")
        events = await watch.take(3 * len(inside))
    expected = [("ADDED", n) for n in inside]
    for n in inside:
        expected += [("MODIFIED", n), ("DELETED", n)]
    assert summary(events) == expected


async def test_a_sharded_streaming_list_sends_the_sharded_list(
    api_server_factory: Any, client: Client
) -> None:
    server, low = await seeded(api_server_factory)
    query = {
        "shardSelector": HIGH,
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    async with client.watch(server, CM_PATH, **query) as watch:
        events = await watch.take(40 - len(low) + 1)
    assert {n for _, n in summary(events[:-1])} == {f"cm-{i:02}" for i in range(40)} - low
    assert events[-1]["type"] == "BOOKMARK"
    assert events[-1]["object"]["metadata"]["annotations"] == INITIAL_END


async def test_with_the_gate_off_the_selector_is_ignored(
    api_server_factory: Any, client: Client
) -> None:
    server, _ = await seeded(api_server_factory, shard_selectors="off")
    reply = await client.get(server, CM_PATH, shardSelector=LOW)
    assert len(reply.body["items"]) == 40
    assert "shardInfo" not in reply.body["metadata"]
    bad = await client.get(server, CM_PATH, shardSelector="shardRange(")
    assert bad.status == 200
    async with client.watch(server, CM_PATH, shardSelector=LOW) as watch:
        assert len(await watch.take(40)) == 40


async def test_without_a_watch_cache_only_watches_with_a_selector_are_filtered(
    api_server_factory: Any, client: Client
) -> None:
    server, low = await seeded(api_server_factory, shard_selectors="no-watch-cache")
    reply = await client.get(server, CM_PATH, shardSelector=LOW)
    assert set(names(reply.body)) == low
    assert reply.body["metadata"]["shardInfo"] == {"selector": LOW}
    streaming = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    async with client.watch(server, CM_PATH, shardSelector=LOW, **streaming) as watch:
        events = await watch.take(41)  # every object, then the same end bookmark
    assert events[-1]["object"]["metadata"]["annotations"] == INITIAL_END
    assert len({n for _, n in summary(events[:-1])}) == 40
    async with client.watch(
        server, CM_PATH, shardSelector=LOW, labelSelector="!unused", **streaming
    ) as watch:
        events = await watch.take(len(low) + 1)
    assert {n for _, n in summary(events[:-1])} == low
    async with client.watch(server, CM_PATH, shardSelector="shardRange(") as watch:
        assert watch.status == 500  # still parsed, then not applied
