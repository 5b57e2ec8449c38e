"""Exponential backoff with jitter, reset after a healthy period; sleeps are cancellable."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from informer import _checks
from informer.errors import ConfigurationError

__all__ = ["Backoff", "BackoffPolicy"]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Delays grow from ``initial`` by ``factor`` up to ``maximum``; each is jittered into
    ``[d, 2d)``; ``reset_after`` seconds without a failure start again from ``initial``."""

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    reset_after: float = 120.0
    jitter: bool = True
    max_retry_after: float = 300.0

    def __post_init__(self) -> None:
        o = "BackoffPolicy"
        _checks.positive(o, "initial", self.initial)  # 0 would retry a failing server in a loop
        _checks.positive(o, "maximum", self.maximum, infinite=True)
        if self.maximum < self.initial:
            raise ConfigurationError(f"{o}.maximum must be >= initial: {self.maximum!r}")
        _checks.positive(o, "factor", self.factor)
        if self.factor < 1:
            raise ConfigurationError(f"{o}.factor must be >= 1: {self.factor!r}")
        _checks.non_negative(o, "reset_after", self.reset_after, infinite=True)
        _checks.non_negative(o, "max_retry_after", self.max_retry_after, infinite=True)


class Backoff:
    """The state of one backoff sequence."""

    def __init__(
        self,
        policy: BackoffPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy or BackoffPolicy()
        self._clock = clock
        self._rng = rng or random.Random()
        self._attempt = 0
        self._last_failure: float | None = None

    @property
    def attempt(self) -> int:
        """How many delays were taken since the last reset."""
        return self._attempt

    def reset(self) -> None:
        self._attempt = 0
        self._last_failure = None

    def next_delay(self) -> float:
        """The next delay, counting one more failure."""
        p = self.policy
        now = self._clock()
        if self._last_failure is not None and now - self._last_failure >= p.reset_after:
            self._attempt = 0
        self._last_failure = now
        try:
            grown = p.initial * p.factor**self._attempt
        except OverflowError:  # after ~1000 failures without a healthy period
            grown = math.inf
        base = min(p.maximum, grown)
        self._attempt += 1
        return base * (1.0 + self._rng.random()) if p.jitter else base

    async def sleep(self, at_least: float | None = None) -> float:
        """Sleep for the next delay, or ``at_least`` (a server's Retry-After) if longer, capped at
        ``max_retry_after``: a bogus hint must not park a reflector for days."""
        delay = self.next_delay()
        if at_least is not None:
            delay = max(delay, min(at_least, self.policy.max_retry_after))
        await asyncio.sleep(delay)
        return delay
