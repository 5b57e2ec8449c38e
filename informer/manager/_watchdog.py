"""The event loop's liveness: a task that ticks every ``interval`` and measures how late it woke.

An asyncio process whose loop is wedged (a callback that blocks, a CPU-bound decode that never
yields) serves nothing: no watch is read, no reconcile runs, and a probe on the same loop is not
answered at all (the kubelet's probe times out, which is the right answer). A loop that is merely
starved, answering late, is caught by the lag: ``LoopWatchdog.check()`` fails while the last tick
woke more than ``max_lag`` seconds late, or while a tick is overdue by more than that.

A loop blocked for good answers no probe and logs nothing, so the kubelet restarts a process that
never said why. A thread (``report_blocked``) pings the loop every ``interval``; when a ping has
waited ``max_lag`` seconds it logs ``manager.loop_blocked`` with where the loop's thread is (the
frames' ``file:line in function``, never their values), and ``manager.loop_unblocked`` with the
duration once the loop answers again.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback

from informer._log import get_logger
from informer.workqueue import Clock, MonotonicClock

__all__ = ["LoopWatchdog"]

_log = get_logger("informer.manager")


class LoopWatchdog:
    """Measures the event loop's lag (see the module docstring). ``clock`` is injectable."""

    def __init__(
        self,
        *,
        interval: float = 1.0,
        max_lag: float = 5.0,
        clock: Clock | None = None,
        report_blocked: bool = True,
    ) -> None:
        if interval <= 0 or max_lag <= 0:
            raise ValueError("interval and max_lag must be positive")
        self.interval = interval
        self.max_lag = max_lag
        self.clock: Clock = clock or MonotonicClock()
        self.lag = 0.0  # how late the last tick woke, in seconds
        self.max_seen = 0.0  # the largest lag since start
        self.report_blocked = report_blocked
        self._due: float | None = None  # when the next tick should wake
        self._task: asyncio.Task[None] | None = None
        self._reporter: _BlockedLoopReporter | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="informer-loop-watchdog")
        if self.report_blocked and self._reporter is None:
            self._reporter = _BlockedLoopReporter(
                asyncio.get_running_loop(), self.interval, self.max_lag
            )
            self._reporter.start()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        reporter, self._reporter = self._reporter, None
        if reporter is not None:
            reporter.stop()

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


class _BlockedLoopReporter(threading.Thread):
    """Logs where a blocked loop's thread is (see the module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float, max_lag: float) -> None:
        super().__init__(name="informer-loop-blocked-reporter", daemon=True)
        self.loop = loop
        self.interval = interval
        self.max_lag = max_lag
        self.loop_thread = threading.get_ident()
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        while not self._stopped.wait(self.interval):
            answered = threading.Event()
            sent = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop is closed
                return
            if answered.wait(self.max_lag):
                continue
            _log.error("manager.loop_blocked", seconds=self.max_lag, where=self._where())
            while not answered.wait(self.interval):
                if self._stopped.is_set():
                    return
            _log.warning("manager.loop_unblocked", seconds=round(time.monotonic() - sent, 3))

    def _where(self) -> str:
        frame = sys._current_frames().get(self.loop_thread)
        if frame is None:
            return ""
        frames = traceback.extract_stack(frame)[-12:]
        return " <- ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in reversed(frames))
