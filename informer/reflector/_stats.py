"""What a reflector reports: ``StreamingState``, ``ReflectorStats`` and the counters behind them.

The phases count into one mutable ``_Counters``; ``Reflector.statistics()`` copies it, with the
store's own counters, into a frozen ``ReflectorStats`` (what metrics and the CLI read).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from informer.store import CacheSize

_EMPTY = CacheSize()


class StreamingState(enum.Enum):
    """Whether the reflector's next list streams (a WATCH with ``sendInitialEvents``) or pages.

    Only a definitive answer means ``UNSUPPORTED`` (for the reflector's life): 400/422 for the
    parameters, a server that ignores ``sendInitialEvents`` (a change, or a bookmark without the
    ``k8s.io/initial-events-end`` annotation, before the end). A transient failure (403/404, 5xx,
    a cut connection, an ERROR event, a duplicated initial ADDED, silence past
    ``stream_idle_limit``) makes the next sync stream again (``RETRYING``);
    ``stream_failures_before_pause`` of them in a row make the reflector list by pages for
    ``stream_pause`` seconds (``PAUSED``, at least one list), then it streams again; one more
    failure right after a pause pauses again.
    """

    UNTRIED = "untried"
    SUPPORTED = "supported"
    RETRYING = "retrying"
    PAUSED = "paused"
    UNSUPPORTED = "unsupported"
    OFF = "off"  # list_strategy="list"


@dataclass(frozen=True, slots=True)
class ReflectorStats:
    """Counters of one reflector (and its store). ``lists`` counts lists applied (paginated or
    streamed), ``list_pages`` the pages fetched, ``page_retries`` pages requested again after a
    transient failure (429, 5xx, cut connection), ``stale_lists`` lists refused as older;
    ``streaming`` is the list strategy's state (see ``StreamingState``), ``stream_failures`` the
    streaming lists that failed transiently; ``streaming_supported`` is True in ``SUPPORTED``,
    False in ``UNSUPPORTED``, ``OFF`` and ``PAUSED``, None otherwise."""

    lists: int
    list_pages: int
    page_retries: int
    relists: int
    stream_lists: int
    watches: int
    watches_beyond_pool: int
    expired: int
    too_large: int
    stale_lists: int
    stale_events_dropped: int
    duplicate_events_dropped: int
    bookmarks: int
    events_applied: int
    wrong_kind_ignored: int
    errors: int
    backwards: int
    cache_resource_version: str
    comparable: bool
    synced: bool
    streaming_supported: bool | None
    streaming: StreamingState
    stream_failures: int
    idle_rewatches: int
    shard_filtered: int = 0
    """Objects (listed or watched) outside the shard selector's ranges that the server sent all
    the same, dropped by the reflector's own hash check (KEP-5866: a server that ignores the
    selector, or one without a watch cache for a watch with no label or field selector)."""
    shard_unfiltered_lists: int = 0
    """List pages (or streaming lists) the server did not filter by the shard selector."""
    cache: CacheSize = _EMPTY
    """The cache's size: objects, the bytes it holds (computed from its contents), the JSON
    they stand for and how many are compressed (``Store.size()``; for a sharded informer, the
    whole cache)."""

    @property
    def cache_bytes(self) -> int:
        """Bytes the cache holds (``cache.bytes``)."""
        return self.cache.bytes

    @property
    def compression_ratio(self) -> float:
        """Bytes the cache holds over the JSON of its objects (``cache.ratio``)."""
        return self.cache.ratio


_SUPPORTED = {
    StreamingState.SUPPORTED: True,
    StreamingState.UNSUPPORTED: False,
    StreamingState.OFF: False,
    StreamingState.PAUSED: False,
}


@dataclass
class _Counters:
    lists: int = 0
    list_pages: int = 0
    page_retries: int = 0
    relists: int = 0
    stream_lists: int = 0
    stream_failures: int = 0
    idle_rewatches: int = 0
    watches: int = 0
    watches_beyond_pool: int = 0
    expired: int = 0
    too_large: int = 0
    stale_lists: int = 0
    bookmarks: int = 0
    wrong_kind_ignored: int = 0
    errors: int = 0
    backwards: int = 0
    shard_filtered: int = 0
    shard_unfiltered_lists: int = 0
