"""Exponential backoff with jitter, reset by progress or a healthy period; a server's
Retry-After is the wait, not a failure of the sequence. Sleeps are cancellable.

Two kinds of failure wait differently, as client-go's REST client and reflector do:

- the server said how long (a 429, or a 5xx with ``Retry-After``): that long, capped at
  ``max_retry_after``, and the exponential sequence does not grow: a throttled request is not a
  sign the server is broken, and growing the wait on every throttle made a paginated list
  throttled on one request in four never finish. Only a run of ``retry_after_limit`` such answers
  in a row with nothing answered in between (a server answering "retry at once" forever) adds
  the exponential delay, so nothing polls a server in a tight loop;
- anything else: the next delay of the exponential sequence, which ``progress()`` (the work moved
  on: a page arrived, a watch delivered events) or ``reset_after`` seconds without a failure
  start again from ``initial``.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from informer import _checks
from informer.errors import ConfigurationError

__all__ = ["Backoff", "BackoffPolicy", "WaitClock"]


class WaitClock(Protocol):
    """What a backoff waits on: the time (monotonic seconds) and a cancellable sleep.

    The event loop's clock by default; tests pass a virtual one whose ``sleep`` returns at once
    and moves its time on (``informer.workqueue``'s clocks fit too)."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Delays grow from ``initial`` by ``factor`` up to ``maximum``; each is jittered into
    ``[d, 2d)``; progress, or ``reset_after`` seconds without a failure, start again from
    ``initial``. A server's Retry-After is waited as it is, capped at ``max_retry_after``, for up
    to ``retry_after_limit`` throttled answers in a row (then with the exponential delay too)."""

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    reset_after: float = 120.0
    jitter: bool = True
    max_retry_after: float = 300.0
    retry_after_limit: int = 10

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
        _checks.integer(o, "retry_after_limit", self.retry_after_limit, minimum=0)


class Backoff:
    """The state of one backoff sequence (see the module docstring).

    ``clock`` gives the time for ``reset_after``; ``sleep`` waits (both of the event loop by
    default: a test passes a virtual clock's, so waits take no time and can be read back).
    """

    def __init__(
        self,
        policy: BackoffPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.policy = policy or BackoffPolicy()
        self._clock = clock
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._attempt = 0
        self._throttled = 0
        self._last_failure: float | None = None

    @property
    def attempt(self) -> int:
        """How many exponential delays were taken since the last reset."""
        return self._attempt

    @property
    def throttled_in_a_row(self) -> int:
        """Retry-After waits since something was last answered (or the last reset)."""
        return self._throttled

    def reset(self) -> None:
        """Start again from ``initial`` (and forget any run of throttled answers)."""
        self._attempt = 0
        self._throttled = 0
        self._last_failure = None

    def progress(self) -> None:
        """The work moved on (a page arrived, a watch delivered events): the next failure is a
        new one, waited from ``initial``."""
        self.reset()

    def answered(self) -> None:
        """A request was answered (not throttled): a run of Retry-After answers has ended, but
        the exponential sequence goes on (a list that succeeds before a watch that fails at once
        is no progress of the list/watch cycle)."""
        self._throttled = 0

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

    def delay(self, retry_after: float | None = None, *, grow: bool = False) -> float:
        """The wait before the next try after a failure; ``retry_after`` is the server's hint.

        With a hint: the hint (capped at ``max_retry_after``: a bogus one must not park a
        reflector for days), the exponential sequence untouched; past ``retry_after_limit`` hints
        in a row, or with ``grow`` (the caller already retried on hints and gave up), the longer
        of the hint and the next exponential delay. Without: the next exponential delay.
        """
        p = self.policy
        if retry_after is None:
            return self.next_delay()
        hint = min(max(retry_after, 0.0), p.max_retry_after)
        if not grow and self._throttled < p.retry_after_limit:
            self._throttled += 1
            return hint
        return max(hint, self.next_delay())

    async def sleep(self, retry_after: float | None = None, *, grow: bool = False) -> float:
        """Wait ``delay(retry_after, grow=grow)``; returns the seconds waited."""
        delay = self.delay(retry_after, grow=grow)
        await self._sleep(delay)
        return delay
