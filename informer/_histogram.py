"""Cumulative histograms with fixed buckets: what Prometheus dashboards read (``_bucket``,
``_count``, ``_sum``), kept without prometheus-client (an optional extra).

A ``Histogram`` only ever grows: ``_count`` and ``_sum`` are totals since it was created, so
``rate(..._count[5m])`` and ``histogram_quantile`` over ``rate(..._bucket[5m])`` work for any
number of observations, and histograms of several replicas add up. Observing is one bisect and
three increments; a snapshot is taken at scrape time (``snapshot``).

The bucket layouts are the ones dashboards are written for:

- ``RECONCILE_BUCKETS``: controller-runtime's ``controller_runtime_reconcile_time_seconds``.
- ``WORKQUEUE_BUCKETS``: controller-runtime's (and client-go's) ``workqueue_queue_duration_seconds``
  and ``workqueue_work_duration_seconds``: ``prometheus.ExponentialBuckets(10e-9, 10, 12)``,
  computed as Go computes it (``le="9.999999999999999e-06"`` included).
- ``REQUEST_BUCKETS``: client-go's ``rest_client_request_duration_seconds``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "RECONCILE_BUCKETS",
    "REQUEST_BUCKETS",
    "WORKQUEUE_BUCKETS",
    "Histogram",
    "HistogramSnapshot",
]

RECONCILE_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0,
    20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip

REQUEST_BUCKETS: tuple[float, ...] = (
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
)  # fmt: skip


def _exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's ``prometheus.ExponentialBuckets``: each bound the previous one times ``factor``."""
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return tuple(bounds)


WORKQUEUE_BUCKETS: tuple[float, ...] = _exponential(10e-9, 10, 12)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """A histogram at one moment: ``cumulative[i]`` observations were ``<= bounds[i]``;
    ``count`` is every observation (the ``+Inf`` bucket), ``sum`` their total."""

    bounds: tuple[float, ...] = ()
    cumulative: tuple[int, ...] = ()
    count: int = 0
    sum: float = 0.0

    def buckets(self) -> list[tuple[float, int]]:
        """``(upper bound, cumulative count)`` per bucket, ``+Inf`` last."""
        return [*zip(self.bounds, self.cumulative, strict=True), (float("inf"), self.count)]


class Histogram:
    """Observations counted into fixed buckets (upper bounds inclusive, as Prometheus's ``le``)."""

    __slots__ = ("_counts", "_sum", "bounds")

    def __init__(self, bounds: Sequence[float]) -> None:
        ordered = tuple(float(b) for b in bounds)
        if list(ordered) != sorted(set(ordered)):
            raise ValueError("histogram bounds must be strictly increasing")
        self.bounds = ordered
        self._counts = [0] * (len(ordered) + 1)  # the last one: above every bound
        self._sum = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self.bounds, value)] += 1
        self._sum += value

    def snapshot(self) -> HistogramSnapshot:
        # one copy of the counts (a scrape may run in another thread): the buckets and the
        # count of one snapshot always agree
        counts = list(self._counts)
        cumulative: list[int] = []
        total = 0
        for n in counts[:-1]:
            total += n
            cumulative.append(total)
        return HistogramSnapshot(self.bounds, tuple(cumulative), total + counts[-1], self._sum)
