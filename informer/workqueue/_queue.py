"""The work queue: keys to reconcile, each queued at most once and held by at most one worker.

Semantics are client-go's workqueue with controller-runtime's priority queue on top:

- A key is queued at most once: adding a queued key only raises its priority (highest wins) or
  makes it ready sooner (earliest readiness wins).
- A key handed out by ``get`` is held until ``done``; adding it meanwhile queues it again, and it is
  handed out again only after ``done``, so two workers never hold one key.
- ``add_after(key, delay)`` makes it ready after ``delay``; ``add_rate_limited(key)`` after the
  rate limiter's delay (per-key exponential backoff combined with an overall token bucket);
  ``forget`` clears the key's backoff; ``num_requeues`` counts its retries since.
- Ready keys are handed out by priority (higher first), then in the order they became ready. Live
  watch changes use ``Priority.LIVE``, changes found by a list (the initial one or a relist)
  ``Priority.INITIAL``, periodic resyncs ``Priority.RESYNC``; ``get_with_priority`` tells a
  worker the priority a requeue should keep.
- ``shutdown()`` stops at once: adds are ignored, ``get`` raises ``QueueShutDown``; the keys queued
  are dropped. ``await shutdown_with_drain()`` also ignores adds, but ``get`` keeps handing out the
  keys already ready until none is left, and it returns when no key is queued or held.
  ``restart()`` takes adds again, empty, with its counters and retry history carried on (one
  queue, and one series of statistics, over a controller's successive runs).

All time goes through an injectable ``Clock`` (``ManualClock`` in tests).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Generic, TypeVar

from informer.workqueue._clock import Clock, MonotonicClock, Timer
from informer.workqueue._rate_limiters import RateLimiter, default_rate_limiter
from informer.workqueue._stats import WorkQueueStats, _Window

__all__ = ["Priority", "QueueShutDown", "WorkQueue"]

K = TypeVar("K", bound=Hashable)


class Priority(IntEnum):
    """Usual priorities (any int works; higher goes first)."""

    LIVE = 0
    INITIAL = -100
    RESYNC = -200


class QueueShutDown(Exception):
    """``get`` on a queue that is shut down (and, when draining, has nothing ready left)."""


class _State(Enum):
    RUNNING = "running"
    DRAINING = "draining"
    SHUT_DOWN = "shut_down"


@dataclass(slots=True)
class _Entry:
    priority: int
    ready_at: float  # the key may be handed out once now >= ready_at
    version: int  # heap entries of an older version are stale
    order: int | None = None  # FIFO among equal priorities: when it became ready


class WorkQueue(Generic[K]):
    """A priority work queue of keys with delays and rate-limited retries (see module doc)."""

    def __init__(
        self,
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        name: str = "",
    ) -> None:
        self.name = name
        self._clock = clock or MonotonicClock()
        self.rate_limiter = rate_limiter or default_rate_limiter(self._clock)
        self._state = _State.RUNNING
        self._queued: dict[K, _Entry] = {}  # the dirty set: every key waiting or ready
        self._processing: dict[K, float] = {}  # key -> when handed out
        self._ready: list[tuple[int, int, int, K]] = []  # (-priority, order, version, key)
        self._waiting: list[tuple[float, int, K]] = []  # (ready_at, version, key)
        self._timer: Timer | None = None
        self._timer_at = float("inf")
        self._versions = itertools.count()
        self._orders = itertools.count()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._adds = 0
        self._new_keys = 0
        self._retries = 0
        self._latency = _Window()
        self._durations = _Window()

    # -- adding ------------------------------------------------------------------------------
    def add(self, key: K, priority: int = Priority.LIVE) -> None:
        """Queue ``key`` now (or raise its priority / make it ready if already queued)."""
        self._add(key, 0.0, priority)

    def add_after(self, key: K, delay: float, priority: int = Priority.LIVE) -> None:
        """Queue ``key`` to be ready after ``delay`` seconds (``<= 0``: now)."""
        self._add(key, delay, priority)

    def add_rate_limited(self, key: K, priority: int = Priority.LIVE) -> None:
        """Queue ``key`` after the rate limiter's delay for it (a retry)."""
        if self._state is not _State.RUNNING:
            return
        self._retries += 1
        self._add(key, self.rate_limiter.when(key), priority)

    def forget(self, key: K) -> None:
        """Clear ``key``'s retry history (it succeeded)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """Retries of ``key`` since it was last forgotten."""
        return self.rate_limiter.num_requeues(key)

    def _add(self, key: K, delay: float, priority: int) -> None:
        if self._state is not _State.RUNNING:
            return
        self._adds += 1
        now = self._clock.now()
        ready_at = now + max(delay, 0.0)
        entry = self._queued.get(key)
        if entry is None:
            entry = _Entry(priority, ready_at, next(self._versions))
            self._queued[key] = entry
            self._new_keys += 1
            self._idle.clear()
        else:
            was_ready = entry.ready_at <= now
            if priority <= entry.priority and (was_ready or ready_at >= entry.ready_at):
                return  # already queued at least as soon and as high
            entry.priority = max(priority, entry.priority)
            entry.version = next(self._versions)  # its older heap entries are now stale
            if not was_ready:
                entry.ready_at = min(ready_at, entry.ready_at)
        if entry.ready_at <= now:
            self._make_ready(key, entry)
        else:
            heapq.heappush(self._waiting, (entry.ready_at, entry.version, key))
        self._schedule()

    def _make_ready(self, key: K, entry: _Entry) -> None:
        """Put ``key`` in line (unless a worker holds it: ``done`` does it then)."""
        if entry.order is None:
            entry.order = next(self._orders)
        if key not in self._processing:
            heapq.heappush(self._ready, (-entry.priority, entry.order, entry.version, key))
            self._wakeup.set()

    def _schedule(self) -> None:
        """Keep one timer, at the earliest waiting key's readiness."""
        while self._waiting and not self._is_current(self._waiting[0][2], self._waiting[0][1]):
            heapq.heappop(self._waiting)
        when = self._waiting[0][0] if self._waiting else float("inf")
        if when == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = when
        if self._waiting:
            self._timer = self._clock.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = float("inf")
        now = self._clock.now()
        while self._waiting and self._waiting[0][0] <= now:
            _, version, key = heapq.heappop(self._waiting)
            if self._is_current(key, version):
                self._make_ready(key, self._queued[key])
        self._schedule()

    def _is_current(self, key: K, version: int) -> bool:
        entry = self._queued.get(key)
        return entry is not None and entry.version == version

    # -- taking ------------------------------------------------------------------------------
    async def get(self) -> K:
        """The next ready key (highest priority first); the caller must call ``done`` with it."""
        key, _ = await self.get_with_priority()
        return key

    async def get_with_priority(self) -> tuple[K, int]:
        """The next ready key and the priority it was queued with."""
        while True:
            if self._state is _State.SHUT_DOWN:
                raise QueueShutDown(self.name)
            while self._ready:
                _, _, version, key = heapq.heappop(self._ready)
                if not self._is_current(key, version) or key in self._processing:
                    continue
                entry = self._queued.pop(key)
                now = self._clock.now()
                self._processing[key] = now
                self._latency.add(max(0.0, now - entry.ready_at))
                return key, entry.priority
            if self._state is _State.DRAINING and not self._queued:
                raise QueueShutDown(self.name)  # (a key held and re-added is still to come)
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, key: K) -> None:
        """The worker finished ``key``; if it was added meanwhile, it becomes available again."""
        started = self._processing.pop(key, None)
        if started is None:
            return
        self._durations.add(max(0.0, self._clock.now() - started))
        entry = self._queued.get(key)
        if entry is not None and entry.ready_at <= self._clock.now():
            self._make_ready(key, entry)
        self._check_idle()

    def _check_idle(self) -> None:
        if not self._processing and not self._queued:
            self._idle.set()
            if self._state is _State.DRAINING:
                self._state = _State.SHUT_DOWN
                self._wakeup.set()

    # -- shutting down -----------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop now: adds are ignored, ``get`` raises ``QueueShutDown``, queued keys are dropped."""
        self._state = _State.SHUT_DOWN
        self._drop_waiting()
        self._queued.clear()
        self._ready.clear()
        self._wakeup.set()
        self._check_idle()

    async def shutdown_with_drain(self) -> None:
        """Stop taking adds; hand out the keys already ready; return once none is queued or held.

        Keys still waiting for their delay are dropped.
        """
        if self._state is _State.RUNNING:
            self._state = _State.DRAINING
            self._drop_waiting()
            self._wakeup.set()
            self._check_idle()
        await self._idle.wait()

    def restart(self) -> None:
        """Take adds and hand out keys again (after ``shutdown``), starting empty: keys still
        queued or waiting are dropped. The counters, the latency and duration samples and the
        rate limiter's per-key retry history carry on, so the queue's statistics stay cumulative
        over its life (a controller's new run, e.g. a new leadership term, starts from its caches
        on the same queue). A key a worker still holds stays held until ``done``."""
        self._state = _State.RUNNING
        self._queued.clear()
        self._ready.clear()
        self._waiting.clear()
        self._schedule()
        self._check_idle()

    def _drop_waiting(self) -> None:
        for _, version, key in self._waiting:
            if self._is_current(key, version):
                del self._queued[key]
        self._waiting.clear()
        self._schedule()

    @property
    def is_shutting_down(self) -> bool:
        return self._state is not _State.RUNNING

    # -- inspecting --------------------------------------------------------------------------
    def __len__(self) -> int:
        """Keys queued and ready (as client-go's ``Len``), including those held meanwhile."""
        now = self._clock.now()
        return sum(1 for e in self._queued.values() if e.ready_at <= now)

    def __contains__(self, key: object) -> bool:
        return key in self._queued

    def statistics(self) -> WorkQueueStats:
        now = self._clock.now()
        by_priority: dict[int, int] = {}
        waiting = 0
        for entry in self._queued.values():
            if entry.ready_at <= now:
                by_priority[entry.priority] = by_priority.get(entry.priority, 0) + 1
            else:
                waiting += 1
        started = self._processing.values()
        oldest = min(started, default=now)
        return WorkQueueStats(
            depth=sum(by_priority.values()),
            depth_by_priority=by_priority,
            waiting=waiting,
            processing=len(self._processing),
            adds=self._adds,
            new_keys=self._new_keys,
            retries=self._retries,
            queue_latency=self._latency.percentiles(),
            work_duration=self._durations.percentiles(),
            longest_running=now - oldest,
            unfinished_work=sum(now - t for t in started),
        )
