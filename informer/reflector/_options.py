"""How a reflector lists and watches: ``ReflectorOptions``, checked when it is built.

Its own module because everything above the reflector (informers, the CLI, tests) configures
one, and nothing in it depends on how the phases run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from informer import _checks
from informer.backoff import BackoffPolicy, WaitClock
from informer.errors import ConfigurationError
from informer.store import Compression

Transform = Callable[[dict[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class ReflectorOptions:
    """How a reflector lists and watches; the defaults are those of a production controller.

    ``idle_timeout``: a watch silent for this long (65 s: just above the ~60 s bookmark interval
    of real API servers, so a watch that gets bookmarks is never re-opened) is presumed stuck and
    re-opened from the last RV, without relisting; None waits for the watch timeout plus the
    transport's ``idle_margin`` (5.5 to 10.5 minutes).

    ``backoff``: how failures are waited out (a server's Retry-After is the wait; other failures
    back off exponentially, from ``initial`` again once the work moves on). ``page_retries``: how
    many times one failed page (429, 5xx, a cut connection) is requested again before the list
    starts over. ``clock``: what those waits run on (``now`` and ``sleep``; the event loop's by
    default): a test passes a virtual clock so that waits take no time and can be read back.
    Durations the server decides (how long a watch lasted) are measured in real time.

    ``compression``: hold the cache's objects compressed with a zstd dictionary trained on them
    (``Compression``; the ``kube-informer[compression]`` extra). Default: held as their JSON.

    ``lane_merge_delay``: a sharded reflector (``ShardedReflector``) that holds ranges taken at
    different times in several lanes (one LIST+WATCH each) merges them into one lane once its
    ranges have not changed for this long (seconds, on ``clock``) and every lane has listed: one
    list of their union, then one watch. None keeps every lane. ``lane_merge_attempts``: how
    many failed lists of that union (each after the reflector's own retries and backoff) give
    the merge up; the lanes keep running and the merge is tried again later (see
    ``informer.reflector._sharded``).
    """

    page_size: int = 500
    initial_list: Literal["consistent", "any"] = "consistent"
    list_strategy: Literal["auto", "list", "stream"] = "auto"
    watch_timeout: tuple[int, int] = (300, 600)
    idle_timeout: float | None = 65.0
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    stale_list_retries: int = 3
    too_large_retries: int = 3
    page_retries: int = 5
    stream_idle_limit: float = 10.0
    stream_initial_limit: float = 120.0
    stream_failures_before_pause: int = 3
    stream_pause: float = 600.0
    quick_watch_end: float = 1.0
    backwards_after: int = 10
    transform: Transform | None = None
    clock: WaitClock | None = None
    compression: Compression | None = None
    lane_merge_delay: float | None = 10.0
    lane_merge_attempts: int = 3

    def __post_init__(self) -> None:
        o = "ReflectorOptions"
        _checks.integer(o, "page_size", self.page_size, minimum=1)
        _checks.one_of(o, "initial_list", self.initial_list, ("consistent", "any"))
        _checks.one_of(o, "list_strategy", self.list_strategy, ("auto", "list", "stream"))
        wt = self.watch_timeout
        if not isinstance(wt, tuple) or len(wt) != 2:
            raise ConfigurationError(f"{o}.watch_timeout must be (low, high) seconds: {wt!r}")
        _checks.integer(o, "watch_timeout", wt[0], minimum=1)
        _checks.integer(o, "watch_timeout", wt[1], minimum=wt[0])
        if self.idle_timeout is not None:
            _checks.positive(o, "idle_timeout", self.idle_timeout)
        if not isinstance(self.backoff, BackoffPolicy):
            raise ConfigurationError(f"{o}.backoff must be a BackoffPolicy: {self.backoff!r}")
        if self.compression is not None and not isinstance(self.compression, Compression):
            raise ConfigurationError(f"{o}.compression must be a Compression: {self.compression!r}")
        _checks.integer(o, "stale_list_retries", self.stale_list_retries, minimum=0)
        _checks.integer(o, "too_large_retries", self.too_large_retries, minimum=0)
        _checks.positive(o, "stream_idle_limit", self.stream_idle_limit)
        _checks.positive(o, "stream_initial_limit", self.stream_initial_limit)
        _checks.integer(
            o, "stream_failures_before_pause", self.stream_failures_before_pause, minimum=1
        )
        _checks.non_negative(o, "stream_pause", self.stream_pause)
        _checks.non_negative(o, "quick_watch_end", self.quick_watch_end)
        _checks.integer(o, "backwards_after", self.backwards_after, minimum=1)
        _checks.callable_or_none(o, "transform", self.transform)
        if self.lane_merge_delay is not None:
            _checks.non_negative(o, "lane_merge_delay", self.lane_merge_delay)
        _checks.integer(o, "lane_merge_attempts", self.lane_merge_attempts, minimum=1)
        if self.clock is not None and not (
            callable(getattr(self.clock, "now", None))
            and callable(getattr(self.clock, "sleep", None))
        ):
            raise ConfigurationError(f"{o}.clock must have now() and sleep(): {self.clock!r}")
