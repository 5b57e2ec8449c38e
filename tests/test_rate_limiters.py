"""Retry rate limiters: per-key exponential backoff, overall token bucket, and their maximum."""

from __future__ import annotations

import pytest

from informer.workqueue import (
    ExponentialBackoff,
    ManualClock,
    MaxOf,
    TokenBucket,
    WorkQueue,
    default_rate_limiter,
)


def test_exponential_backoff_doubles_per_key_up_to_the_maximum() -> None:
    limiter = ExponentialBackoff(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    assert limiter.when("b") == 0.005  # keys back off independently
    assert limiter.num_requeues("a") == 20
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0 and limiter.when("a") == 0.005


def test_exponential_backoff_does_not_overflow_after_many_failures() -> None:
    limiter = ExponentialBackoff(0.005, 1000.0)
    for _ in range(5000):
        delay = limiter.when("a")
    assert delay == 1000.0


def test_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = ManualClock()
    bucket = TokenBucket(qps=10.0, burst=3, clock=clock)
    assert [bucket.when(k) for k in "abc"] == [0.0, 0.0, 0.0]
    assert bucket.when("d") == pytest.approx(0.1)  # reserves the next token
    assert bucket.when("e") == pytest.approx(0.2)
    clock.advance(10.0)  # refills, at most to the burst
    assert [bucket.when(k) for k in "fgh"] == [0.0, 0.0, 0.0]
    assert bucket.when("i") == pytest.approx(0.1)


def test_max_of_takes_the_largest_delay_and_forgets_in_all() -> None:
    clock = ManualClock()
    limiter = MaxOf(ExponentialBackoff(1.0, 100.0), TokenBucket(qps=1.0, burst=1, clock=clock))
    assert limiter.when("a") == 1.0  # backoff 1 s, bucket 0
    assert limiter.when("b") == 1.0  # backoff 1 s, bucket 1 s
    assert limiter.when("b") == 2.0  # backoff 2 s, bucket 2 s
    assert limiter.when("c") == 3.0  # backoff 1 s, bucket 3 s: the storm is capped for all
    assert limiter.num_requeues("b") == 2
    limiter.forget("b")
    assert limiter.num_requeues("b") == 0


def test_the_default_is_client_gos_controller_rate_limiter() -> None:
    clock = ManualClock()
    limiter = default_rate_limiter(clock)
    assert [limiter.when("a") for _ in range(3)] == [0.005, 0.01, 0.02]
    for i in range(97):
        limiter.when(f"k{i}")  # 100 tokens taken in all
    assert limiter.when("z") == pytest.approx(0.1)  # 10/s once the burst of 100 is spent


def test_a_queue_uses_the_default_limiter_on_its_clock() -> None:
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_rate_limited("a")
    assert len(q) == 0
    clock.advance(0.005)
    assert len(q) == 1


@pytest.mark.parametrize(
    ("base", "maximum"), [(0.0, 1.0), (2.0, 1.0)], ids=["zero-base", "max-below-base"]
)
def test_exponential_backoff_rejects_bad_bounds(base: float, maximum: float) -> None:
    with pytest.raises(ValueError):
        ExponentialBackoff(base, maximum)
