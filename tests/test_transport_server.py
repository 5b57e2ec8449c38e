"""The transport against the test API server: pages, continue tokens, watch events, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from conftest import cm, running_informer

from informer.errors import ResourceExpired, TooLargeResourceVersion, TooManyRequests
from informer.pager import list_all
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault
from informer.transport import Transport


@pytest.fixture
async def served() -> AsyncIterator[tuple[ApiServer, Transport]]:
    async with ApiServer(too_large_wait=0.01, bookmark_interval=0.01) as server:
        api = server.api_client()
        try:
            yield server, Transport(api)
        finally:
            await api.close()


async def test_pages_share_the_first_page_rv(served: tuple[ApiServer, Transport]) -> None:
    server, transport = served
    for i in range(5):
        server.create(CONFIGMAPS, cm(f"c{i}"))
    first = await transport.list_page(CONFIGMAPS, limit=2)
    assert first.continue_ and first.remaining_item_count == 3
    server.create(CONFIGMAPS, cm("later"))
    rest = await list_all(transport, CONFIGMAPS, limit=2)
    assert [o.name for o in rest.items] == ["c0", "c1", "c2", "c3", "c4", "later"]
    second = await transport.list_page(CONFIGMAPS, limit=2, continue_=first.continue_)
    assert second.resource_version == first.resource_version
    assert [o.name for o in second.items] == ["c2", "c3"]
    assert all(o.kind == "ConfigMap" and o["apiVersion"] == "v1" for o in second.items)


async def test_watch_events_and_bookmarks(served: tuple[ApiServer, Transport]) -> None:
    server, transport = served
    start = server.format_resource_version(server.revision)
    server.create(CONFIGMAPS, cm("a"))  # history after `start`: the watch replays it
    server.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
    server.delete(CONFIGMAPS, "a", namespace="default")
    seen = []
    async with transport.watch(CONFIGMAPS, resource_version=start, timeout_seconds=30) as events:
        async for event in events:
            seen.append(event.type)
            if event.type == "DELETED":
                server.send_bookmarks(force=True)
            if event.type == "BOOKMARK" and "DELETED" in seen:
                assert event.object.resource_version == server.format_resource_version(
                    server.revision
                )
                break
    seen = [t for t in seen[:-1] if t != "BOOKMARK"] + seen[-1:]
    assert seen == ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


async def test_compacted_watch_is_a_typed_410(served: tuple[ApiServer, Transport]) -> None:
    server, transport = served
    old = server.format_resource_version(server.revision)
    for i in range(3):
        server.create(CONFIGMAPS, cm(f"c{i}"))
    server.compact()
    with pytest.raises(ResourceExpired):
        async with transport.watch(CONFIGMAPS, resource_version=old) as events:
            async for _ in events:
                pass


async def test_expired_continue_and_future_rv_are_typed(
    served: tuple[ApiServer, Transport],
) -> None:
    server, transport = served
    for i in range(4):
        server.create(CONFIGMAPS, cm(f"c{i}"))
    first = await transport.list_page(CONFIGMAPS, limit=2)
    server.create(CONFIGMAPS, cm("x"))
    server.compact()
    with pytest.raises(ResourceExpired) as expired:
        await transport.list_page(CONFIGMAPS, limit=2, continue_=first.continue_)
    assert expired.value.continue_token  # the inconsistent token the server offers
    with pytest.raises(TooLargeResourceVersion) as too_large:
        await transport.list_page(
            CONFIGMAPS, resource_version="999999", resource_version_match="NotOlderThan"
        )
    assert too_large.value.retry_after == 1


async def test_text_plain_429(served: tuple[ApiServer, Transport]) -> None:
    server, transport = served
    server.faults.add(Fault(verb="list", status=429, text_body="slow down\n", retry_after=2))
    with pytest.raises(TooManyRequests) as err:
        await transport.list_page(CONFIGMAPS)
    assert err.value.retry_after == 2


async def test_a_list_body_that_is_not_json_is_a_counted_recovery() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=200, text_body="<html>proxy</html>"))
        async with running_informer(server) as inf:
            assert len(inf.store) == 1
            assert inf.statistics().errors == 1
