"""A page of a paginated list that fails transiently (429, 5xx, a cut connection) is requested
again with its still-valid continue token, as client-go's request retries do, instead of
restarting the whole list from its first page; after ``page_retries`` failures of one page the
usual fallback (back off, list again) applies."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from conftest import cm, running_informer

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault, RecordedRequest


def _lists(server: ApiServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.verb == "list"]


def _every(n: int) -> Callable[[RecordedRequest], bool]:
    count = itertools.count(1)
    return lambda _r: next(count) % n == 0


async def test_server_throttling_a_quarter_of_lists_still_completes_a_ten_page_list() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(20):
            server.create(CONFIGMAPS, cm(f"c{i:02d}"))
        # every 4th LIST is throttled: restarting from page 1 never reaches page 10
        server.faults.add(
            Fault(verb="list", predicate=_every(4), times=None, status=429, retry_after=0)
        )
        async with running_informer(server, page_size=2) as inf:
            assert len(inf.store) == 20
            stats = inf.statistics()
        lists = _lists(server)
        throttled = [r for r in lists if r.status == 429]
        assert [r for r in lists if r.status == 200 and r.page == 1] == [lists[0]]  # one list
        assert len(lists) == 10 + len(throttled) and len(throttled) <= 4  # few extra requests
        for r in throttled:  # the same page again, with the same continue token
            after = lists[lists.index(r) + 1]
            assert after.query == r.query and after.status == 200
        assert stats.list_pages == 10 and stats.page_retries == len(throttled)
        assert stats.lists == 1


async def test_5xx_on_a_continuation_retries_that_page() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="list", page=2, status=503))
        server.faults.add(Fault(verb="list", page=3, status=500))
        async with running_informer(server, page_size=2) as inf:
            assert len(inf.store) == 6
        lists = _lists(server)
        assert [(r.page, r.status) for r in lists] == [
            (1, 200),
            (2, 503),
            (2, 200),
            (3, 500),
            (3, 200),
        ]
        assert lists[1].query == lists[2].query and lists[3].query == lists[4].query


async def test_a_page_failing_past_its_retries_falls_back_to_a_new_list() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(4):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="list", page=2, status=429, retry_after=0, times=3))
        async with running_informer(server, page_size=2, page_retries=2) as inf:
            assert len(inf.store) == 4
            assert inf.statistics().page_retries == 2
        pages = [(r.page, r.status) for r in _lists(server)]
        assert pages == [(1, 200), (2, 429), (2, 429), (2, 429), (1, 200), (2, 200)]
