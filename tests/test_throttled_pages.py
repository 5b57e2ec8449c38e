"""A page of a paginated list that fails transiently (429, 5xx, a cut connection) is requested
again with its still-valid continue token, as client-go's request retries do, instead of
restarting the whole list from its first page; after ``page_retries`` failures of one page the
usual fallback (back off, list again) applies. A throttled page waits the server's Retry-After,
no more: the waits do not grow from one throttled page to the next, and pages that arrive in
between are progress (a 5xx page backs off from ``initial`` again)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from conftest import FAST, VirtualClock, cm, running_informer

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


def _nth_list(server: ApiServer) -> Callable[[RecordedRequest], int]:
    """The position of a request among the LISTs the server received (1-based)."""

    def nth(request: RecordedRequest) -> int:
        lists = [r for r in server.requests if r.verb == "list"]
        return next(i for i, r in enumerate(lists, 1) if r is request)

    return nth


async def test_a_long_list_throttled_on_one_list_in_four_waits_only_what_the_server_says() -> None:
    """600 objects in pages of 50; one LIST in four answers 429 with Retry-After 1 or 0 in turn.
    The initial list and the relist a watch's 410 forces both complete without starting over,
    each throttled page retried once after exactly its Retry-After (on real servers, waits that
    grew with every throttle made this relist do 3-6 of its 12 pages in a minute)."""
    clock = VirtualClock()
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(600):
            server.create(CONFIGMAPS, cm(f"c{i:03d}"))
        nth = _nth_list(server)
        for rest, seconds in ((4, 1), (0, 0)):
            server.faults.add(
                Fault(
                    verb="list",
                    predicate=lambda r, rest=rest: nth(r) % 8 == rest,  # type: ignore[misc]
                    times=None,
                    status=429,
                    retry_after=seconds,
                )
            )
        server.faults.add(Fault(verb="watch", status=410))  # the first watch: relist
        async with running_informer(server, page_size=50, clock=clock) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            assert len(inf.store) == 600
            stats = inf.statistics()
            backoff = inf.reflector._backoff
        lists = _lists(server)
        first_pages = [r for r in lists if r.page == 1 and r.status == 200]
        assert len(first_pages) == 2  # two lists, neither started over
        watch_410 = next(r for r in server.requests if r.verb == "watch")
        assert server.requests.index(first_pages[0]) < server.requests.index(watch_410)
        assert server.requests.index(watch_410) < server.requests.index(first_pages[1])
        throttled = [r for r in lists if r.status == 429]
        assert len(lists) == 24 + len(throttled) and len(throttled) == 7
        for r in throttled:  # the same page again, answered
            after = lists[lists.index(r) + 1]
            assert after.query == r.query and after.status == 200
        assert (stats.lists, stats.relists, stats.list_pages) == (2, 1, 24)
        assert stats.page_retries == len(throttled)
        # every wait was the throttled answer's Retry-After, and the backoff never grew
        assert clock.waits == [float(r.fault.retry_after) for r in throttled if r.fault]
        assert clock.waits == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
        assert backoff.attempt == 0


async def test_5xx_pages_between_good_ones_each_back_off_from_initial() -> None:
    """A 503 without Retry-After on one page in three: each waits the first delay of the
    backoff (pages that arrived in between were progress); two failures of one page grow."""
    clock = VirtualClock()
    initial = FAST.backoff.initial
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(24):
            server.create(CONFIGMAPS, cm(f"c{i:02d}"))
        server.faults.add(Fault(verb="list", predicate=_every(3), times=None, status=503))
        server.faults.add(Fault(verb="list", page=12, status=500, times=2))
        async with running_informer(server, page_size=2, clock=clock) as inf:
            assert len(inf.store) == 24
        lists = _lists(server)
        failed = [r for r in lists if r.status >= 500]
        assert [r.page for r in lists if r.status == 200] == list(range(1, 13))
        assert len(clock.waits) == len(failed)
        twice = [i for i, r in enumerate(failed) if r.page == 12]
        for i, wait in enumerate(clock.waits):
            if i in twice[1:]:
                assert initial * 2 <= wait < initial * 4 * 2  # the same page again: grown
            else:
                assert initial <= wait < 2 * initial, (i, clock.waits)


async def test_a_5xx_page_with_retry_after_waits_it() -> None:
    clock = VirtualClock()
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="list", page=2, status=503, retry_after=3))
        async with running_informer(server, page_size=2, clock=clock) as inf:
            assert len(inf.store) == 6
        assert clock.waits == [3.0]
        assert [(r.page, r.status) for r in _lists(server)] == [
            (1, 200),
            (2, 503),
            (2, 200),
            (3, 200),
        ]
