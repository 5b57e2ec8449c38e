"""What the reflector waits before trying again: the server's Retry-After when it gave one (a
429, a 5xx), as it is and without growing the backoff; otherwise a backoff that grows with
failures in a row and starts from ``initial`` again once the work moved on (a watch that
delivered). Waits run on a virtual clock: the test reads back what was waited."""

from __future__ import annotations

from dataclasses import replace

from conftest import FAST, VirtualClock, cm, running_informer, verbs

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault

INITIAL = FAST.backoff.initial


async def test_watch_429s_wait_their_retry_after_and_rewatch_without_relist() -> None:
    clock = VirtualClock()
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", times=4, status=429, retry_after=2))
        async with running_informer(server, clock=clock) as inf:
            await server.wait_for_watchers(1)
            backoff = inf.reflector._backoff
        assert verbs(server) == ["list"] + ["watch"] * 5
        assert clock.waits == [2.0, 2.0, 2.0, 2.0]  # not 2, then longer and longer
        assert backoff.attempt == 0


async def test_retry_at_once_forever_is_not_a_tight_loop() -> None:
    """A server answering 429 "Retry-After: 0" to every watch: after ``retry_after_limit`` of
    them in a row, the exponential backoff applies too."""
    clock = VirtualClock()
    policy = replace(FAST.backoff, retry_after_limit=3, jitter=False)
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", times=None, status=429, retry_after=0))
        async with running_informer(server, clock=clock, backoff=policy):
            await server.wait_for_requests(lambda r: r.verb == "watch", count=7)
        assert clock.waits[:6] == [0.0, 0.0, 0.0, INITIAL, 2 * INITIAL, 4 * INITIAL]


async def test_a_rewatch_after_a_watch_that_delivered_backs_off_from_initial() -> None:
    """Three refused watches grow the backoff; the fourth delivers an event and is then cut: the
    re-watch after it waits the first delay again, not the fourth."""
    clock = VirtualClock()
    policy = replace(FAST.backoff, jitter=False)
    async with ApiServer(too_large_wait=0.01) as server:
        server.faults.add(Fault(verb="watch", times=3, status=503))
        async with running_informer(server, clock=clock, backoff=policy) as inf:
            await server.wait_for_watchers(1)
            made = server.create(CONFIGMAPS, cm("a"))
            await inf.wait_for_resource_version(made["metadata"]["resourceVersion"], timeout=10)
            server.disrupt_watches(Fault(cut_mid_line=True))
            server.create(CONFIGMAPS, cm("b"))
            await server.wait_for_requests(lambda r: r.verb == "watch", count=5)
        assert clock.waits == [INITIAL, 2 * INITIAL, 4 * INITIAL, INITIAL]


async def test_streaming_list_429s_wait_their_retry_after_and_keep_streaming() -> None:
    clock = VirtualClock()
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", times=4, status=429, retry_after=1))
        async with running_informer(server, clock=clock, list_strategy="auto") as inf:
            stats = inf.statistics()
        assert clock.waits == [1.0, 1.0, 1.0, 1.0]
        assert verbs(server) == ["watch"] * 5  # streamed in the end: throttling is no failure
        assert stats.stream_lists == 1 and stats.stream_failures == 0


async def test_a_page_throttled_for_good_makes_the_relists_back_off() -> None:
    """Page 2 always 429 "Retry-After: 0": its retries wait the hint; once they run out the list
    starts over after a backoff that grows each time (pages that arrive before the throttled
    one do not make the loop a busy one)."""
    clock = VirtualClock()
    policy = replace(FAST.backoff, jitter=False)
    async with ApiServer(too_large_wait=0.01) as server:
        for i in range(4):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        server.faults.add(Fault(verb="list", page=2, times=None, status=429, retry_after=0))
        async with running_informer(
            server, sync=False, clock=clock, backoff=policy, page_retries=2
        ):
            await server.wait_for_requests(lambda r: r.verb == "list" and r.page == 1, count=4)
        per_list = [0.0, 0.0]  # page 2's two retries, after its Retry-After
        assert clock.waits[:9] == [
            *per_list,
            INITIAL,
            *per_list,
            2 * INITIAL,
            *per_list,
            4 * INITIAL,
        ]
