"""Work queue statistics: counters, depth by priority, percentiles over a recent window, and the
cumulative histograms behind them (for metrics)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from informer._histogram import WORKQUEUE_BUCKETS, Histogram, HistogramSnapshot

__all__ = ["Percentiles", "WorkQueueStats"]


@dataclass(frozen=True, slots=True)
class Percentiles:
    """Seconds over the last ``count`` samples (at most the window kept); ``histogram`` counts
    every sample since the start (cumulative: what Prometheus histograms export)."""

    count: int
    p50: float
    p90: float
    p99: float
    max: float
    histogram: HistogramSnapshot = field(default_factory=HistogramSnapshot)


@dataclass(frozen=True, slots=True)
class WorkQueueStats:
    """A snapshot of a work queue.

    ``depth`` counts keys ready to be handed out (``depth_by_priority`` splits them), including a
    key re-added while a worker holds it; ``waiting`` the keys whose delay has not passed;
    ``processing`` the keys held by workers, ``unfinished_work`` the seconds they have been held
    (summed). ``adds`` counts every accepted add (coalesced or not), ``new_keys`` the adds that
    queued a key not queued already (what client-go's ``workqueue_adds_total`` counts),
    ``retries`` every ``add_rate_limited``. ``queue_latency`` is the time from ready to
    handed out, ``work_duration`` from handed out to ``done``, ``longest_running`` the age of the
    oldest key still held.
    """

    depth: int
    depth_by_priority: Mapping[int, int]
    waiting: int
    processing: int
    adds: int
    retries: int
    queue_latency: Percentiles
    work_duration: Percentiles
    longest_running: float
    unfinished_work: float = 0.0
    new_keys: int = 0


class _Window:
    """The last ``size`` samples, for percentiles computed on demand, and every sample counted
    into a histogram with ``buckets``."""

    def __init__(self, size: int = 1024, buckets: tuple[float, ...] = WORKQUEUE_BUCKETS) -> None:
        self._samples: deque[float] = deque(maxlen=size)
        self._histogram = Histogram(buckets)

    def add(self, value: float) -> None:
        self._samples.append(value)
        self._histogram.observe(value)

    def percentiles(self) -> Percentiles:
        ordered = sorted(self._samples)
        histogram = self._histogram.snapshot()
        if not ordered:
            return Percentiles(0, 0.0, 0.0, 0.0, 0.0, histogram)

        def at(q: float) -> float:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

        return Percentiles(len(ordered), at(0.5), at(0.9), at(0.99), ordered[-1], histogram)
