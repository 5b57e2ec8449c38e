"""Backoff: exponential from initial to maximum, jitter in [d, 2d), reset after a healthy period."""

from __future__ import annotations

import asyncio
import random

import pytest

from informer.backoff import Backoff, BackoffPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_defaults_match_the_contract() -> None:
    p = BackoffPolicy()
    assert (p.initial, p.maximum, p.factor, p.reset_after) == (0.8, 30.0, 2.0, 120.0)


def test_grows_by_factor_up_to_maximum_without_jitter() -> None:
    b = Backoff(BackoffPolicy(jitter=False), clock=Clock())
    assert [b.next_delay() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


@pytest.mark.parametrize("seed", range(20))
def test_jitter_stays_in_d_to_2d(seed: int) -> None:
    b = Backoff(clock=Clock(), rng=random.Random(seed))
    for base in [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]:
        d = b.next_delay()
        assert base <= d < 2 * base


def test_resets_after_a_healthy_period() -> None:
    clock = Clock()
    b = Backoff(BackoffPolicy(jitter=False), clock=clock)
    b.next_delay()
    b.next_delay()
    clock.now += 119.0
    assert b.next_delay() == 3.2  # still failing within 2 minutes
    clock.now += 120.0
    assert b.next_delay() == 0.8
    assert b.attempt == 1
    b.reset()
    assert b.attempt == 0


async def test_sleep_waits_the_delay_and_is_cancellable() -> None:
    b = Backoff(BackoffPolicy(initial=0.0001, jitter=False))
    assert await b.sleep() == 0.0001
    assert await b.sleep(retry_after=0.001) == 0.001
    long = Backoff(BackoffPolicy(initial=3600.0, maximum=3600.0))
    task = asyncio.create_task(long.sleep())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_long_run_of_failures_stays_at_the_maximum() -> None:
    """Hours of failures 30 s apart (never the reset period): no float overflow, no crash."""
    clock = Clock()
    b = Backoff(BackoffPolicy(jitter=False), clock=clock)
    delays = []
    for _ in range(5000):
        delays.append(b.next_delay())
        clock.now += 30.0
    assert delays[:3] == [0.8, 1.6, 3.2]
    assert set(delays[6:]) == {30.0}
    assert b.attempt == 5000


def test_an_unbounded_maximum_does_not_overflow() -> None:
    b = Backoff(BackoffPolicy(maximum=float("inf"), jitter=False), clock=Clock())
    delays = [b.next_delay() for _ in range(2000)]
    assert delays[:3] == [0.8, 1.6, 3.2]
    assert all(d > 0 for d in delays)


async def test_a_huge_retry_after_is_capped() -> None:
    b = Backoff(BackoffPolicy(initial=0.0001, jitter=False, max_retry_after=0.001))
    assert await b.sleep(retry_after=999_999_999.0) == 0.001


def test_a_retry_after_is_the_wait_and_does_not_grow_the_sequence() -> None:
    """A throttled request waits what the server said, however many came before: the
    exponential sequence neither grows nor lengthens it."""
    b = Backoff(BackoffPolicy(jitter=False), clock=Clock())
    assert [b.delay(1.0), b.delay(0.0), b.delay(1.0), b.delay(0.0)] == [1.0, 0.0, 1.0, 0.0]
    assert b.attempt == 0
    assert b.next_delay() == 0.8  # the first failure without a hint starts from initial
    assert b.delay(0.5) == 0.5  # shorter than the grown delay: still the server's word
    assert b.next_delay() == 1.6


def test_a_long_run_of_retry_afters_with_nothing_answered_backs_off_too() -> None:
    """A server answering "retry at once" forever must not be polled in a tight loop: past
    ``retry_after_limit`` hints in a row the exponential delay applies as well; anything
    answered in between ends the run."""
    b = Backoff(BackoffPolicy(jitter=False, retry_after_limit=3), clock=Clock())
    assert [b.delay(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert [b.delay(0.0), b.delay(0.0), b.delay(5.0)] == [0.8, 1.6, 5.0]
    b.answered()
    assert [b.delay(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.attempt == 3  # answered() ends the throttled run, not the failure sequence
    assert b.delay(0.0) == 6.4


def test_progress_starts_the_sequence_again() -> None:
    b = Backoff(BackoffPolicy(jitter=False), clock=Clock())
    assert [b.next_delay() for _ in range(3)] == [0.8, 1.6, 3.2]
    b.progress()
    assert b.attempt == 0 and b.throttled_in_a_row == 0
    assert b.next_delay() == 0.8


async def test_sleep_goes_through_the_given_sleep() -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    b = Backoff(BackoffPolicy(jitter=False), clock=Clock(), sleep=sleep)
    assert await b.sleep(2.0) == 2.0
    assert await b.sleep() == 0.8
    assert waited == [2.0, 0.8]


def test_a_hint_after_the_caller_gave_up_on_hints_grows_the_sequence() -> None:
    b = Backoff(BackoffPolicy(jitter=False), clock=Clock())
    assert [b.delay(0.0, grow=True), b.delay(0.0, grow=True), b.delay(5.0, grow=True)] == [
        0.8,
        1.6,
        5.0,
    ]
    assert b.attempt == 3
