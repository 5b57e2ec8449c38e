"""Work queue of keys for controllers: dedup, one worker per key, delays, rate-limited retries,
priorities (controller-runtime's priority queue), statistics, and an injectable clock."""

from informer.workqueue._clock import Clock, ManualClock, MonotonicClock, Timer
from informer.workqueue._queue import Priority, QueueShutDown, WorkQueue
from informer.workqueue._rate_limiters import (
    ExponentialBackoff,
    MaxOf,
    RateLimiter,
    TokenBucket,
    default_rate_limiter,
)
from informer.workqueue._stats import Percentiles, WorkQueueStats

__all__ = [
    "Clock",
    "ExponentialBackoff",
    "ManualClock",
    "MaxOf",
    "MonotonicClock",
    "Percentiles",
    "Priority",
    "QueueShutDown",
    "RateLimiter",
    "Timer",
    "TokenBucket",
    "WorkQueue",
    "WorkQueueStats",
    "default_rate_limiter",
]
