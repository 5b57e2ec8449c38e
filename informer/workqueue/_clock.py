"""Clocks for time-based rules: the monotonic clock of the running loop, and a manual one for tests.

A clock gives the time (``now``) and runs a callback at a later time (``call_at``). Everything
time-based in the work queue and the controller goes through one, so tests advance time by hand
(``ManualClock.advance``) instead of sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "ManualClock", "MonotonicClock", "Timer"]


class Timer(Protocol):
    """A scheduled callback that can be cancelled."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """The source of time of a work queue or controller."""

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean something)."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` (from the event loop) once ``now() >= when``."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock (cancellable)."""
        ...


class MonotonicClock:
    """The event loop's clock (``loop.time()``, monotonic)."""

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()  # the default loop clock, outside a loop

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_at(when, callback)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _ManualTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told to: ``advance(seconds)`` runs the callbacks now due, in
    time order, synchronously. For tests of time-based rules without sleeping."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        done = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        timer = self.call_at(self._now + seconds, wake)
        try:
            await done
        finally:
            timer.cancel()

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and run every callback due by then."""
        if seconds < 0:
            raise ValueError("time only moves forward")
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            self._now = max(self._now, when)
            if not timer.cancelled:
                timer.callback()
        self._now = target

    @property
    def pending_timers(self) -> int:
        """Callbacks scheduled and not cancelled (to await that a sleeper has started)."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)
