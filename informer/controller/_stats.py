"""A controller's statistics: counters over its lifetime and a snapshot of its queue."""

from __future__ import annotations

from dataclasses import dataclass

from informer.controller._lifecycle import ControllerState
from informer.workqueue import WorkQueueStats
from informer.workqueue._stats import Percentiles

__all__ = ["ControllerStats"]


@dataclass(frozen=True, slots=True)
class ControllerStats:
    """Counters of a controller (over its lifetime, across runs) and a snapshot of its queue.

    ``reconciles`` = ``succeeded`` + ``requeued_after`` + ``errors`` + ``timeouts`` (+ those cut by
    a shutdown deadline, ``cancelled``); ``errors`` include a ``CancelledError`` that escaped a
    reconcile without its worker being cancelled (it awaited something another task cancelled).
    ``stale_skips`` are keys requeued because the caches had not yet seen the controller's own
    writes (not reconciled); ``freshness_wait`` is the time spent waiting for them (keys with
    pending writes only). ``runs`` counts the runs started (``start``/``run``, e.g. one per
    leadership term); ``queue`` is the one queue of the controller's life, so its counters are
    cumulative across runs too.
    """

    state: ControllerState
    workers: int
    active: int
    runs: int
    reconciles: int
    succeeded: int
    requeued_after: int
    errors: int
    timeouts: int
    cancelled: int
    stale_skips: int
    writes_tracked: int
    freshness_failed_open: int
    duration: Percentiles
    freshness_wait: Percentiles
    queue: WorkQueueStats
