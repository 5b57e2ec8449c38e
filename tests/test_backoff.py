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


async def test_sleep_honours_a_longer_retry_after_and_is_cancellable() -> None:
    b = Backoff(BackoffPolicy(initial=0.0001, jitter=False))
    assert await b.sleep() == 0.0001
    assert await b.sleep(at_least=0.001) == 0.001
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
    assert await b.sleep(at_least=999_999_999.0) == 0.001
