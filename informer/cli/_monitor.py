"""What the live views show of each informer: sync progress, rates, freshness and lag.

``InformerMonitor.sample()`` turns an informer's statistics into a ``Row`` (events/s since the
previous sample, cache RV against the server's, handler queue depth); ``_view`` renders rows.
The lag is measured against server RVs observed over time: in revisions, the newest server RV minus
the cache RV; in seconds, how long ago the server first showed an RV the cache has not reached.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from informer.cli._progress import ProgressTransport
from informer.informer import Handler, Informer

__all__ = ["InformerMonitor", "LagTracker", "Row", "decimal_rv"]

_RATE_WINDOW = 1.0  # seconds: events/s over at least this long (two samples close together
# would otherwise show a rate of 0 or a spike)


def decimal_rv(rv: str) -> int | None:
    """A KEP-5504 (decimal) RV as a number; None for "" or an opaque RV."""
    return int(rv) if rv.isdigit() and len(rv) < 40 else None


class LagTracker:
    """Server RVs seen over time, to tell how far behind a cache RV is."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples: deque[tuple[int, float]] = deque()
        self.latest: int | None = None

    def observe(self, server_rv: int | None) -> None:
        if server_rv is None or (self.latest is not None and server_rv <= self.latest):
            return
        self.latest = server_rv
        self._samples.append((server_rv, self._clock()))

    def lag(self, cache_rv: int | None) -> tuple[int | None, float | None]:
        """(revisions, seconds) behind the newest server RV seen; (None, None) when unknown."""
        if cache_rv is None or self.latest is None:
            return None, None
        while self._samples and self._samples[0][0] <= cache_rv:
            self._samples.popleft()
        if not self._samples:
            return 0, 0.0
        return max(0, self.latest - cache_rv), self._clock() - self._samples[0][1]


@dataclass(frozen=True, slots=True)
class Row:
    """One informer, as the views show it."""

    name: str
    synced: bool
    progress: str
    objects: int
    events_per_s: float
    cache_rv: str
    lag_revisions: int | None
    lag_seconds: float | None
    lists: int
    relists: int
    expired: int
    stale_dropped: int
    errors: int
    handler_depth: int
    cache_bytes: int = 0
    """Bytes the cache holds (``statistics().cache``), computed from its contents."""
    cache_ratio: float = 0.0
    """``cache_bytes`` over the JSON of the objects held (below 1: compressed)."""


class InformerMonitor:
    """Samples one informer for the views (events/s over the last second or more)."""

    def __init__(
        self,
        informer: Informer,
        name: str,
        *,
        transport: ProgressTransport | None = None,
        handlers: Sequence[Handler] = (),
        parse_rv: Callable[[str], int | None] = decimal_rv,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.informer = informer
        self.name = name
        self.transport = transport
        self.handlers = list(handlers)
        self.parse_rv = parse_rv
        self.lag = LagTracker(clock)
        self._clock = clock
        # (time, events applied) of recent samples: the rate is over at least _RATE_WINDOW
        self._applied: deque[tuple[float, int]] = deque()

    def _progress(self) -> str:
        if self.informer.has_synced:
            return "synced"
        r = self.informer.reflector
        progress = None
        if self.transport is not None:
            progress = self.transport.progress_of(
                r.resource, r.namespace, r.label_selector, r.field_selector
            )
        if progress is None:
            return "listing"
        return progress.describe()

    def sample(self) -> Row:
        stats = self.informer.statistics()
        now = self._clock()
        applied = stats.events_applied
        history = self._applied
        history.append((now, applied))
        while len(history) > 1 and now - history[1][0] >= _RATE_WINDOW:
            history.popleft()  # the oldest sample still at least _RATE_WINDOW old is the base
        then, before = history[0]
        rate = (applied - before) / (now - then) if now > then else 0.0
        revisions, seconds = self.lag.lag(self.parse_rv(stats.cache_resource_version))
        return Row(
            name=self.name,
            synced=stats.synced,
            progress=self._progress(),
            objects=len(self.informer.store),
            events_per_s=rate,
            cache_rv=stats.cache_resource_version,
            lag_revisions=revisions,
            lag_seconds=seconds,
            lists=stats.lists,
            relists=stats.relists,
            expired=stats.expired,
            stale_dropped=stats.stale_events_dropped + stats.duplicate_events_dropped,
            errors=stats.errors,
            cache_bytes=stats.cache.bytes,
            cache_ratio=stats.cache.ratio,
            handler_depth=sum(h.statistics().pending for h in self.handlers),
        )
