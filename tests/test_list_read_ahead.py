"""A paginated list requests the next page before it builds the current page's items (one
request ahead), so a server's time to answer overlaps the client's work; the items still come in
the server's order, and a build that fails leaves no request running."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import cm

from informer.objects import KubeObject
from informer.pager import list_all
from informer.resource import CONFIGMAPS, Resource
from informer.testing import ApiServer, Fault
from informer.transport import ListPage, Transport


def _page_requests() -> list[asyncio.Task[Any]]:
    """The pager's page requests still running (the server's own tasks are not counted)."""
    return [t for t in asyncio.all_tasks() if "page_at" in t.get_coro().__qualname__]


class CountingTransport(Transport):
    """A transport that counts the LIST requests it has sent."""

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        self.sent = 0

    async def list_page(self, resource: Resource, **kwargs: Any) -> ListPage:
        self.sent += 1
        return await super().list_page(resource, **kwargs)


async def test_the_next_page_is_requested_before_the_items_of_this_one_are_built() -> None:
    async with ApiServer() as server:
        for i in range(6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        api = server.api_client()
        try:
            transport = CountingTransport(api)
            sent_at_build: list[int] = []

            def known(key: str, rv: str) -> KubeObject | None:
                sent_at_build.append(transport.sent)
                return None

            result = await list_all(transport, CONFIGMAPS, limit=2, known=known)
        finally:
            await api.close()
    assert [o.name for o in result.items] == [f"c{i}" for i in range(6)]
    assert result.pages == 3
    # building page 1 (items 1-2): page 2 was requested; page 2: page 3 was; page 3: no more
    assert sent_at_build == [2, 2, 3, 3, 3, 3]


async def test_a_failed_build_cancels_the_request_ahead() -> None:
    async with ApiServer() as server:
        for i in range(4):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="list", page=2, latency=60))  # page 2 would keep it busy
        api = server.api_client()
        try:
            transport = CountingTransport(api)

            def known(key: str, rv: str) -> KubeObject | None:
                raise ValueError("a failing build")

            with pytest.raises(ValueError, match="a failing build"):
                await list_all(transport, CONFIGMAPS, limit=2, known=known)
            assert transport.sent == 2
            for _ in range(1000):  # the cancelled request winds down within a few loop turns
                if not _page_requests():
                    break
                await asyncio.sleep(0)
            assert not _page_requests()
        finally:
            await api.close()
