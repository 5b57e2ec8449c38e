"""One handler of an informer: its pending changes, and the task that delivers them in order.

The pending changes hold at most one entry per object key: when a handler falls behind,
successive changes of one object are coalesced (added+updated -> added, updated+updated ->
updated from the first old to the last new, added+deleted -> nothing, updated+deleted ->
deleted), so its memory is bounded by the number of objects and it always ends at the cache's
state, as a level-triggered controller wants. A delete followed by a re-create is kept as two
deliveries. A handler that raises is logged and counted; the next change still comes. A delivery
interrupted by ``stop`` stays queued and is made again when the handler is started again.

A list's changes reaching a handler with nothing pending are queued as they came, as one batch,
and delivered from it: a list holds each key once (or twice, as a deleted+added pair when an
object was re-created), so the per-key entries would merge nothing there, and a sync of 100,000
objects costs no per-key bookkeeping. The batch becomes per-key entries the moment anything else
is queued behind it, so coalescing works as above from then on.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from informer._histogram import WORKQUEUE_BUCKETS, Histogram, HistogramSnapshot
from informer._log import get_logger
from informer.store import Delta

__all__ = ["DeliveryLatency", "Handler", "HandlerStats"]

_log = get_logger("informer.informer")


@dataclass(frozen=True, slots=True)
class DeliveryLatency:
    """Seconds from a change being queued for a handler to the handler's call, over the last
    ``count`` sampled deliveries (at most 1024); ``histogram`` counts every sampled delivery
    since the start (cumulative, in the work queue's bucket layout: what metrics export)."""

    count: int = 0
    p50: float = 0.0
    p99: float = 0.0
    histogram: HistogramSnapshot = field(default_factory=HistogramSnapshot)


@dataclass(frozen=True, slots=True)
class HandlerStats:
    """Counters of one handler, and its recent delivery latency."""

    delivered: int
    coalesced: int
    errors: int
    pending: int
    latency: DeliveryLatency = DeliveryLatency()


async def _cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel ``task`` and wait for it; raises only if the caller itself is cancelled again."""
    if task is not None:
        task.cancel()
        await asyncio.wait([task])


def _merge(first: Delta, then: Delta) -> list[Delta]:
    """What a handler must still see when ``first`` is pending and ``then`` arrives.

    A merged delta is ``from_list`` only when both were: a live change in it keeps it live.
    """
    from_list = first.from_list and then.from_list
    if first.type == "added":
        if then.type == "updated":
            return [Delta("added", then.obj, None, first.is_initial, from_list)]
        if then.type == "deleted":
            return []
    elif first.type == "updated":
        if then.type == "updated":
            return [Delta("updated", then.obj, first.old, from_list=from_list)]
        if then.type == "deleted":
            return [Delta("deleted", then.obj, first.old, from_list=from_list)]
    return [first, then]


_LATENCY_SAMPLE = 64
"""Of the changes queued at once, the first and every 64th get their queueing time recorded (the
latency statistics are percentiles: a sample serves, and a relist's 100,000 keys cost less)."""


class Handler:
    """One registered handler: its pending changes and the task that delivers them.

    The pending changes are a list's batch (``push_list``; delivered first, from ``_batch_at``
    on), or one entry per key (a ``Delta``, or a list when two changes of a key cannot be merged)
    and the keys in the order they were queued. A key whose entry was delivered or merged away
    may still be in that order: it is skipped when reached. There is never both a batch and
    per-key entries: queueing behind a batch turns what is left of it into entries first.
    """

    def __init__(
        self,
        deliver: Callable[[Delta], Awaitable[None] | None],
        name: str,
        log: Any = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self._deliver = deliver
        self._on_stop = on_stop
        self.name = name
        self._log = (log or _log).bind(handler=name)
        self._batch: Sequence[Delta] | None = None
        self._batch_at = 0
        self._batch_since = 0.0
        self._pending: dict[str, Delta | list[Delta]] = {}
        self._order: deque[str] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._delivered = 0
        self._coalesced = 0
        self._errors = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._queued_at: dict[str, float] = {}  # sampled keys -> when they became pending
        self._latencies: deque[float] = deque(maxlen=1024)
        self._latency_histogram = Histogram(WORKQUEUE_BUCKETS)

    def statistics(self) -> HandlerStats:
        pending = sum(len(v) if isinstance(v, list) else 1 for v in self._pending.values())
        if self._batch is not None:
            pending += len(self._batch) - self._batch_at
        ordered = sorted(self._latencies)
        histogram = self._latency_histogram.snapshot()
        latency = DeliveryLatency(histogram=histogram)
        if ordered:
            n = len(ordered)
            p50, p99 = ordered[n // 2], ordered[min(n - 1, int(0.99 * n))]
            latency = DeliveryLatency(n, p50, p99, histogram)
        return HandlerStats(self._delivered, self._coalesced, self._errors, pending, latency)

    def _sample_latency(self, seconds: float) -> None:
        self._latencies.append(seconds)
        self._latency_histogram.observe(seconds)

    def push(self, delta: Delta) -> None:
        self.push_all((delta,))

    def push_list(self, deltas: Sequence[Delta]) -> None:
        """Queue the changes one list found (``Store.replace``: each key once, or a deleted
        then added pair of one key); kept as they are when nothing else is pending."""
        if self._batch is not None or self._order or len(deltas) < 2:
            self.push_all(deltas)
            return
        self._batch = deltas
        self._batch_at = 0
        self._batch_since = time.monotonic()
        self._idle.clear()
        self._wakeup.set()

    def push_all(self, deltas: Sequence[Delta]) -> None:
        """Queue changes in order (one wake-up for all: a list's deltas come at once)."""
        if self._batch is not None:
            self._unbatch()
        self._enqueue(deltas, time.monotonic())
        self._idle.clear()
        self._wakeup.set()

    def _enqueue(self, deltas: Sequence[Delta], now: float) -> None:
        """Add ``deltas`` to the per-key entries (``now``: when they were queued)."""
        pending = self._pending
        get = pending.get
        queue = self._order.append
        fresh = 0
        for delta in deltas:
            key = delta.obj.key
            queued = get(key)
            if queued is None:
                pending[key] = delta
                queue(key)
                if not fresh % _LATENCY_SAMPLE:
                    self._queued_at[key] = now
                fresh += 1
            else:
                self._coalesce(key, queued, delta)

    def _unbatch(self) -> None:
        """Turn what is left of the batch into per-key entries, in its order."""
        batch, self._batch = self._batch, None
        if batch is not None:
            self._enqueue(batch[self._batch_at :], self._batch_since)

    def _coalesce(self, key: str, queued: Delta | list[Delta], delta: Delta) -> None:
        """Merge ``delta`` into the key's pending entry."""
        entry = queued if isinstance(queued, list) else [queued]
        merged = _merge(entry[-1], delta)
        self._coalesced += 2 - len(merged)
        entry[-1:] = merged
        if not entry:
            del self._pending[key]
            self._queued_at.pop(key, None)
        else:
            self._pending[key] = entry[0] if len(entry) == 1 else entry

    def _requeue(self, key: str, deltas: list[Delta]) -> None:
        """Put back, first in line, what a stop interrupted (merged with what came since)."""
        self._unbatch()
        merged = list(deltas)
        came = self._pending.pop(key, ())
        for delta in came if isinstance(came, list | tuple) else (came,):
            merged[-1:] = _merge(merged[-1], delta) if merged else [delta]
        if merged:
            self._pending[key] = merged
            self._order.appendleft(key)
            self._queued_at.setdefault(key, time.monotonic())
            self._idle.clear()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer-handler-{self.name}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await _cancel(task)
        if task is not None and self._on_stop is not None:
            self._on_stop()

    async def wait_idle(self) -> None:
        """Until every pending change was delivered."""
        await self._idle.wait()

    async def _run(self) -> None:
        pending = self._pending
        order = self._order
        queued_at = self._queued_at
        deliver = self._deliver
        while True:
            # what to deliver next: the batch from where it stands (key None), else a key's entry
            key: str | None = None
            deltas = self._batch
            if deltas is not None:
                i = self._batch_at
            elif not order:
                if not pending:
                    # a dict keeps its largest table (a relist's every key): start afresh
                    self._pending = pending = {}
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            else:
                key = order.popleft()
                entry = pending.pop(key, None)
                if entry is None:
                    continue  # delivered or merged away since it was queued
                if queued_at:
                    since = queued_at.pop(key, None)
                    if since is not None:
                        self._sample_latency(time.monotonic() - since)
                deltas = entry if isinstance(entry, list) else [entry]
                i = 0
            n = len(deltas)
            while i < n:
                if key is None:
                    if self._batch is not deltas:
                        break  # turned into per-key entries while a delivery awaited
                    self._batch_at = i + 1
                    if not i % _LATENCY_SAMPLE:
                        self._sample_latency(time.monotonic() - self._batch_since)
                delta = deltas[i]
                i += 1
                try:
                    result = deliver(delta)
                    if result is not None and inspect.isawaitable(result):
                        await result
                except asyncio.CancelledError:
                    if (task := asyncio.current_task()) is not None and task.cancelling():
                        # put back what is undelivered: a restart delivers it (again)
                        if key is None:
                            self._requeue(delta.obj.key, [delta])
                        else:
                            self._requeue(key, list(deltas[i - 1 :]))
                        raise
                    self._errors += 1  # raised by the handler's own code: not a stop
                    self._log.error("informer.handler_cancelled", type=delta.type)
                except Exception:
                    self._errors += 1
                    self._log.exception("informer.handler_failed", type=delta.type)
                self._delivered += 1
            else:
                if key is None and self._batch is deltas:
                    self._batch = None  # all delivered
