"""The event loop's liveness: a task that ticks every ``interval`` and measures how late it woke.

An asyncio process whose loop is wedged (a callback that blocks, a CPU-bound decode that never
yields) serves nothing: no watch is read, no reconcile runs, and a probe on the same loop is not
answered at all (the kubelet's probe times out, which is the right answer). A loop that is merely
starved, answering late, is caught by the lag: ``LoopWatchdog.check()`` fails while the last tick
woke more than ``max_lag`` seconds late, or while a tick is overdue by more than that.
"""

from __future__ import annotations

import asyncio

from informer._log import get_logger
from informer.workqueue import Clock, MonotonicClock

__all__ = ["LoopWatchdog"]

_log = get_logger("informer.manager")


class LoopWatchdog:
    """Measures the event loop's lag (see the module docstring). ``clock`` is injectable."""

    def __init__(
        self, *, interval: float = 1.0, max_lag: float = 5.0, clock: Clock | None = None
    ) -> None:
        if interval <= 0 or max_lag <= 0:
            raise ValueError("interval and max_lag must be positive")
        self.interval = interval
        self.max_lag = max_lag
        self.clock: Clock = clock or MonotonicClock()
        self.lag = 0.0  # how late the last tick woke, in seconds
        self.max_seen = 0.0  # the largest lag since start
        self._due: float | None = None  # when the next tick should wake
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="informer-loop-watchdog")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])

    async def _run(self) -> None:
        while True:
            self._due = self.clock.now() + self.interval
            await self.clock.sleep(self.interval)
            self.lag = max(0.0, self.clock.now() - self._due)
            self.max_seen = max(self.max_seen, self.lag)
            if self.lag > self.max_lag:
                _log.warning("manager.loop_lag", lag=round(self.lag, 3), max_lag=self.max_lag)

    def check(self) -> str | None:
        """None while the loop keeps time; else why not."""
        if self._task is None or self._task.done():
            return "the watchdog is not running"
        overdue = 0.0 if self._due is None else self.clock.now() - self._due
        lag = max(self.lag, overdue)
        if lag > self.max_lag:
            return f"event loop lag {lag:.3f}s > {self.max_lag}s"
        return None
