"""WorkQueue rules (client-go workqueue + controller-runtime priority queue), on a manual clock."""

from __future__ import annotations

import asyncio

import pytest

from informer.workqueue import (
    ExponentialBackoff,
    ManualClock,
    Priority,
    QueueShutDown,
    WorkQueue,
)


async def settle() -> None:
    """Let every ready task run (yields to the loop; no timed wait)."""
    for _ in range(5):
        await asyncio.sleep(0)


def make(clock: ManualClock | None = None) -> tuple[WorkQueue[str], ManualClock]:
    clock = clock or ManualClock()
    return WorkQueue(clock=clock, rate_limiter=ExponentialBackoff(1.0, 8.0)), clock


async def test_a_key_is_queued_at_most_once() -> None:
    q, _ = make()
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["a", "b"]
    assert q.statistics().adds == 3
    assert q.statistics().new_keys == 2  # client-go's workqueue_adds_total: "a" was queued


async def test_a_key_added_while_held_is_handed_out_again_only_after_done() -> None:
    q, _ = make()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")  # changed while a worker reconciles it
    second = asyncio.create_task(q.get())
    await settle()
    assert not second.done()  # never two workers on one key
    q.done("a")
    assert await second == "a"
    q.done("a")
    assert len(q) == 0 and "a" not in q


async def test_done_without_re_add_leaves_nothing() -> None:
    q, _ = make()
    q.add("a")
    await q.get()
    q.done("a")
    waiter = asyncio.create_task(q.get())
    await settle()
    assert not waiter.done()
    q.add("b")
    assert await waiter == "b"


async def test_keys_are_handed_out_in_order_within_a_priority() -> None:
    q, _ = make()
    for k in "cab":
        q.add(k)
    assert [await q.get() for _ in range(3)] == ["c", "a", "b"]


async def test_add_after_is_ready_only_once_the_delay_passed() -> None:
    q, clock = make()
    q.add_after("a", 5.0)
    assert len(q) == 0 and "a" in q
    assert q.statistics().waiting == 1
    waiter = asyncio.create_task(q.get())
    clock.advance(4.9)
    await settle()
    assert not waiter.done()
    clock.advance(0.1)
    assert await waiter == "a"


async def test_add_after_keeps_the_earliest_readiness() -> None:
    q, clock = make()
    q.add_after("a", 10.0)
    q.add_after("a", 2.0)  # sooner wins
    q.add_after("a", 30.0)  # later is a no-op
    clock.advance(2.0)
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    clock.advance(100.0)
    assert len(q) == 0  # queued once, handed out once


async def test_add_makes_a_delayed_key_ready_now() -> None:
    q, _ = make()
    q.add_after("a", 10.0)
    q.add("a")
    assert len(q) == 1
    assert await q.get() == "a"


async def test_add_after_on_a_held_key_waits_for_both_done_and_the_delay() -> None:
    q, clock = make()
    q.add("a")
    assert await q.get() == "a"
    q.add_after("a", 3.0)  # a reconcile asking to be requeued after 3 s
    q.done("a")
    assert len(q) == 0
    clock.advance(3.0)
    assert await q.get() == "a"


async def test_a_delay_that_passes_while_held_is_handed_out_after_done() -> None:
    q, clock = make()
    q.add("a")
    await q.get()
    q.add_after("a", 1.0)
    clock.advance(1.0)
    waiter = asyncio.create_task(q.get())
    await settle()
    assert not waiter.done()
    q.done("a")
    assert await waiter == "a"


async def test_rate_limited_adds_back_off_exponentially_until_forgotten() -> None:
    q, clock = make()  # 1 s base, 8 s max
    delays = []
    for _ in range(5):
        q.add_rate_limited("a")
        waited = 0.0
        while len(q) == 0:
            clock.advance(0.5)
            waited += 0.5
        delays.append(waited)
        assert await q.get() == "a"
        q.done("a")
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert q.num_requeues("a") == 5
    assert q.statistics().retries == 5
    q.forget("a")
    assert q.num_requeues("a") == 0
    q.add_rate_limited("a")
    clock.advance(1.0)
    assert len(q) == 1


async def test_live_changes_go_before_initial_adds_and_resyncs() -> None:
    q, _ = make()
    q.add("resync", Priority.RESYNC)
    q.add("initial-1", Priority.INITIAL)
    q.add("initial-2", Priority.INITIAL)
    q.add("live", Priority.LIVE)
    got = [await q.get() for _ in range(4)]
    assert got == ["live", "initial-1", "initial-2", "resync"]
    assert q.statistics().depth_by_priority == {}


async def test_adding_a_queued_key_raises_its_priority_never_lowers_it() -> None:
    q, _ = make()
    q.add("x", Priority.INITIAL)
    q.add("a", Priority.INITIAL)
    q.add("b", Priority.LIVE)
    q.add("a", Priority.LIVE)  # a live change of an initial key: it jumps ahead of x
    q.add("b", Priority.RESYNC)  # a resync does not demote a live change
    assert q.statistics().depth_by_priority == {Priority.LIVE: 2, Priority.INITIAL: 1}
    assert [await q.get_with_priority() for _ in range(3)] == [
        ("a", Priority.LIVE),  # keeps its place in line (queued before b)
        ("b", Priority.LIVE),
        ("x", Priority.INITIAL),
    ]


async def test_a_requeue_keeps_the_priority_it_is_given() -> None:
    q, clock = make()
    q.add("low", Priority.INITIAL)
    key, priority = await q.get_with_priority()
    q.add_rate_limited(key, priority)  # the reconcile failed: retry at its own priority
    q.add("other", Priority.INITIAL)
    q.add("live", Priority.LIVE)
    q.done(key)
    clock.advance(1.0)
    assert [await q.get_with_priority() for _ in range(3)] == [
        ("live", Priority.LIVE),
        ("other", Priority.INITIAL),
        ("low", Priority.INITIAL),
    ]


async def test_a_higher_priority_waits_for_readiness_too() -> None:
    q, clock = make()
    q.add_after("a", 5.0, Priority.LIVE)
    q.add("b", Priority.RESYNC)
    assert await q.get() == "b"
    clock.advance(5.0)
    assert await q.get() == "a"


async def test_shutdown_stops_getters_and_ignores_adds() -> None:
    q, _ = make()
    q.add("a")
    waiter_key = await q.get()
    q.add("b")
    waiter = asyncio.create_task(q.get())  # gets b
    blocked = asyncio.create_task(q.get())
    await settle()
    assert await waiter == "b"
    q.shutdown()
    with pytest.raises(QueueShutDown):
        await blocked
    q.add("c")
    q.add_after("d", 1.0)
    q.add_rate_limited("e")
    assert len(q) == 0
    with pytest.raises(QueueShutDown):
        await q.get()
    q.done(waiter_key)  # held keys may still be marked done
    q.done("b")
    assert q.statistics().processing == 0


async def test_shutdown_drops_queued_and_delayed_keys() -> None:
    q, clock = make()
    q.add("a")
    q.add_after("b", 1.0)
    q.shutdown()
    clock.advance(2.0)
    assert len(q) == 0 and "a" not in q and "b" not in q
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_restart_after_shutdown_starts_empty_and_keeps_counting() -> None:
    q, clock = make()
    q.add("a")
    assert await q.get() == "a"
    q.add_rate_limited("a")  # held and re-added: a retry after 1 s
    q.done("a")
    q.add_after("b", 60.0)
    q.shutdown()
    q.restart()
    assert len(q) == 0 and "a" not in q and "b" not in q
    clock.advance(120.0)  # the dropped keys' timers do not bring them back
    assert len(q) == 0
    q.add("c")
    assert await q.get() == "c"
    q.done("c")
    stats = q.statistics()
    assert (stats.adds, stats.retries, stats.work_duration.count) == (4, 1, 2)
    assert q.num_requeues("a") == 1  # the retry history carries on


async def test_shutdown_with_drain_hands_out_ready_keys_then_returns() -> None:
    q, _ = make()
    q.add("held")
    assert await q.get() == "held"
    q.add("held")  # re-added while held: still to be processed
    q.add("ready")
    q.add_after("later", 10.0)  # not ready: dropped
    drained = asyncio.create_task(q.shutdown_with_drain())
    await settle()
    q.add("new")  # ignored while draining
    assert await q.get() == "ready"
    q.done("ready")
    waiter = asyncio.create_task(q.get())
    await settle()
    assert not drained.done() and not waiter.done()
    q.done("held")
    assert await waiter == "held"
    assert not drained.done()  # still held by a worker
    q.done("held")
    await drained
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shutdown_with_drain_of_an_idle_queue_returns_at_once() -> None:
    q, _ = make()
    await q.shutdown_with_drain()
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_statistics_report_depth_latency_durations_and_longest_running() -> None:
    q, clock = make()
    q.add("a")
    q.add("b", Priority.INITIAL)
    q.add_after("c", 10.0)
    stats = q.statistics()
    assert (stats.depth, stats.waiting, stats.processing) == (2, 1, 0)
    assert stats.depth_by_priority == {Priority.LIVE: 1, Priority.INITIAL: 1}
    clock.advance(2.0)
    assert await q.get() == "a"  # waited 2 s
    clock.advance(3.0)
    assert await q.get() == "b"  # waited 5 s
    clock.advance(1.0)
    q.done("a")  # worked 4 s
    stats = q.statistics()
    assert stats.longest_running == 1.0  # b, handed out 1 s ago
    assert stats.queue_latency.count == 2 and stats.queue_latency.max == 5.0
    assert stats.work_duration.count == 1 and stats.work_duration.p50 == 4.0
    clock.advance(4.0)
    assert await q.get() == "c"  # ready at 10, handed out at 10: latency counts from readiness
    latency = q.statistics().queue_latency  # samples 0, 2, 5
    assert (latency.count, latency.p50, latency.max) == (3, 2.0, 5.0)
