"""Rate limiters for retries, as client-go's workqueue: how long a key waits before it is retried.

``when(key)`` records one more failure of ``key`` and returns the delay before its retry;
``forget(key)`` clears its history (after a success); ``num_requeues(key)`` counts failures since.
The default combines a per-key exponential backoff with an overall token bucket and takes the
larger delay, so one hot key backs off alone and a storm of failures is capped for all keys.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from informer.workqueue._clock import Clock, MonotonicClock

__all__ = [
    "ExponentialBackoff",
    "MaxOf",
    "RateLimiter",
    "TokenBucket",
    "default_rate_limiter",
]


class RateLimiter(Protocol):
    """Decides the delay of each retry of a key."""

    def when(self, key: Hashable) -> float:
        """Seconds before ``key`` is retried (records a failure)."""
        ...

    def forget(self, key: Hashable) -> None:
        """Stop tracking ``key`` (it succeeded)."""
        ...

    def num_requeues(self, key: Hashable) -> int:
        """Failures of ``key`` since it was last forgotten."""
        ...


class ExponentialBackoff:
    """Per key: ``base * 2**failures``, capped at ``maximum`` (client-go: 5 ms to 1000 s)."""

    def __init__(self, base: float = 0.005, maximum: float = 1000.0) -> None:
        if base <= 0 or maximum < base:
            raise ValueError("need 0 < base <= maximum")
        self.base = base
        self.maximum = maximum
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        # 2.0**1100 overflows a float: beyond 2**64 every base is past any sane maximum anyway
        return min(self.maximum, self.base * 2.0 ** min(failures, 64))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class TokenBucket:
    """Overall: ``qps`` retries per second with bursts of ``burst`` (client-go: 10/s, burst 100).

    Each ``when`` takes a token, reserving a future one when the bucket is empty (as Go's
    ``rate.Limiter.Reserve``): the delay is the time until that token exists.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("need qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock or MonotonicClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, key: Hashable) -> float:
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: Hashable) -> None:
        pass

    def num_requeues(self, key: Hashable) -> int:
        return 0


class MaxOf:
    """The largest delay of several limiters (all of them record every failure)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("need at least one rate limiter")
        self.limiters = limiters

    def when(self, key: Hashable) -> float:
        return max(limiter.when(key) for limiter in self.limiters)

    def forget(self, key: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return max(limiter.num_requeues(key) for limiter in self.limiters)


def default_rate_limiter(clock: Clock | None = None) -> RateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: exponential 5 ms..1000 s per key, at most
    10 retries/s overall with bursts of 100."""
    return MaxOf(ExponentialBackoff(0.005, 1000.0), TokenBucket(10.0, 100, clock))
