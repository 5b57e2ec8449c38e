"""The reflector: keeps a ``Store`` in step with the server by LIST and WATCH.

``Reflector`` is the public class: its constructor, statistics and the loop that runs the phases
(list, then watch; relist or re-watch after each failure, with backoff). The phases themselves
are its bases: ``_PagedList`` and ``_StreamingList`` (the two ways to list), ``_Watching``.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable

from informer import _checks
from informer._log import error_fields, get_logger
from informer.errors import (
    ApiError,
    ConfigurationError,
    MalformedResponse,
    ResourceExpired,
    ShardSelectorRejected,
    TooLargeResourceVersion,
    TooManyRequests,
    TransportError,
    WatchStreamError,
)
from informer.pager import ListResult, list_exact
from informer.reflector._core import DeltaSink
from informer.reflector._options import ReflectorOptions
from informer.reflector._paged_list import _PagedList
from informer.reflector._stats import _SUPPORTED, ReflectorStats, StreamingState, _Counters
from informer.reflector._streaming_list import _StaleStream, _StreamingList, _StreamUnsupported
from informer.reflector._watch import _ServerWentBackwards, _Watching
from informer.resource import Resource
from informer.shards import ShardSelector
from informer.store import CacheSize, Store, StorePartition
from informer.transport import Transport, WatchStream


class _Phase(enum.Enum):
    LIST = "list"
    WATCH = "watch"


class Reflector(_Watching, _StreamingList, _PagedList):
    """Lists and watches one resource (in one namespace, with selectors) into a ``Store``."""

    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        store: Store | StorePartition | None = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: ReflectorOptions | None = None,
        on_deltas: DeltaSink | None = None,
        shard_selector: ShardSelector | None = None,
    ) -> None:
        if not isinstance(resource, Resource):
            raise ConfigurationError(f"resource must be a Resource: {resource!r}")
        if options is not None and not isinstance(options, ReflectorOptions):
            raise ConfigurationError(f"options must be ReflectorOptions: {options!r}")
        resource.check_namespace(namespace)
        _checks.str_or_none("Reflector", "label_selector", label_selector)
        _checks.str_or_none("Reflector", "field_selector", field_selector)
        self.transport = transport
        self.resource = resource
        compression = options.compression if options is not None else None
        self.store = store if store is not None else Store(compression=compression)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        if shard_selector is not None and not isinstance(shard_selector, ShardSelector):
            raise ConfigurationError(f"shard_selector must be a ShardSelector: {shard_selector!r}")
        self.shard_selector = shard_selector
        self._shard_set = shard_selector.shard_set if shard_selector is not None else None
        self._send_shards = True
        self._warned_shards_unfiltered = False
        self.options = options or ReflectorOptions()
        self.on_deltas = on_deltas
        self.synced = asyncio.Event()
        # told of every failure the loop recovers from (a sharded reflector counts its merging
        # lane's failed lists), before the loop logs it and backs off
        self._on_failure: Callable[[Exception], None] | None = None
        self._backoff = self._new_backoff()
        self._page_backoff = self._new_backoff()
        self._pages_gave_up = False
        self._counters = _Counters()
        self._stream_state = (
            StreamingState.OFF if self.options.list_strategy == "list" else StreamingState.UNTRIED
        )
        self._stream_failures_in_a_row = 0
        self._stream_paused_until = 0.0
        self._stream_paused_lists = 0
        self._force_consistent = False
        self._backwards_counted = False  # the restore behind the pending consistent list
        self._consecutive_too_large = 0
        self._quick_ends = 0
        self._older_in_a_row = 0
        self._expired_in_a_row = 0
        self._probe_before_watch = False
        self._stream_timeout = 0
        self._warned_not_comparable = False
        # before the first list: the RV it must not be older than (set by a sharded reflector
        # for a lane taken later, so that a lagging replica cannot bring back what the other
        # lanes saw deleted); "" for none
        self._list_floor = ""
        self.log = get_logger("informer.reflector").bind(
            resource=resource.group_resource,
            namespace=namespace or "",
            selector=label_selector or "",
        )
        if field_selector:
            self.log = self.log.bind(field_selector=field_selector)

    # -- public ----------------------------------------------------------------------------
    @property
    def last_resource_version(self) -> str:
        """The last RV seen (from a list, an event or a bookmark); "" before the first list."""
        return self.store.resource_version

    def statistics(self) -> ReflectorStats:
        c = self._counters
        s = self.store.stats
        return ReflectorStats(
            lists=c.lists,
            list_pages=c.list_pages,
            page_retries=c.page_retries,
            relists=c.relists,
            stream_lists=c.stream_lists,
            watches=c.watches,
            watches_beyond_pool=c.watches_beyond_pool,
            expired=c.expired,
            too_large=c.too_large,
            stale_lists=c.stale_lists,
            stale_events_dropped=s.stale_dropped,
            duplicate_events_dropped=s.duplicates_dropped,
            bookmarks=c.bookmarks,
            events_applied=s.events_applied,
            wrong_kind_ignored=c.wrong_kind_ignored,
            errors=c.errors,
            backwards=c.backwards,
            cache_resource_version=self.store.resource_version,
            comparable=self.store.comparable,
            synced=self.has_synced,
            streaming_supported=_SUPPORTED.get(self._stream_state),
            streaming=self._stream_state,
            stream_failures=c.stream_failures,
            idle_rewatches=c.idle_rewatches,
            shard_filtered=c.shard_filtered,
            shard_unfiltered_lists=c.shard_unfiltered_lists,
            cache=self.store.size() if isinstance(self.store, Store) else CacheSize(),
        )

    async def list_exact(self, resource_version: str) -> ListResult:
        """A snapshot at exactly ``resource_version``, verified (see ``pager.list_exact``)."""
        return await list_exact(
            self.transport,
            self.resource,
            resource_version,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=self.options.page_size,
            shard_selector=self.shard_selector,
        )

    def narrow_shards(self, selector: ShardSelector) -> None:
        """Hold fewer ranges from now on (a subset of the current ones): the next requests carry
        ``selector`` and every object outside it is dropped on arrival. The caller removes the
        objects of the ranges given up from the store and restarts ``run(resume=True)``."""
        if self.shard_selector is None:
            raise ConfigurationError("narrow_shards needs a reflector with a shard selector")
        self.shard_selector = selector
        self._shard_set = selector.shard_set

    async def run(self, *, resume: bool = False) -> None:
        """List, then watch, forever; returns only by cancellation.

        ``resume``: when the store has synced already, start with a watch from its RV instead of
        a list (a sharded reflector whose ranges were narrowed keeps what it holds)."""
        phase = _Phase.LIST
        if resume and self.has_synced and self.store.resource_version:
            phase = _Phase.WATCH
        while True:
            try:
                try:
                    if phase is _Phase.LIST:
                        stream = await self._sync()
                        phase = _Phase.WATCH
                        await self._watch(stream)
                    else:
                        await self._watch(None)
                except Exception as exc:
                    if self._on_failure is not None:
                        self._on_failure(exc)
                    raise
            except asyncio.CancelledError:
                raise
            except ResourceExpired as exc:
                self._counters.expired += 1
                self._expired_in_a_row += 1
                self.log.info(  # not the Status message: the server's text
                    "reflector.watch_expired",
                    phase=phase.value,
                    rv=self.store.resource_version,
                    times=self._expired_in_a_row,
                    **error_fields(exc),
                )
                phase = _Phase.LIST
                if self._expired_in_a_row > 1:  # 410 again with no progress since: back off
                    await self._backoff.sleep()
            except ShardSelectorRejected as exc:
                # the server refuses the selector we validated (its syntax differs from ours):
                # the same on every retry, so never retried; filter by the hash here instead
                self._counters.errors += 1
                self._send_shards = False
                self.log.error(  # the selector sent, not the server's text about it
                    "reflector.shard_selector_rejected",
                    selector=str(self.shard_selector),
                    **error_fields(exc),
                )
                phase = _Phase.LIST
            except TooManyRequests as exc:
                # a list whose page was throttled page_retries times already waited the hints:
                # starting it over must back off, or a page throttled for good is a busy loop
                grow = self._took_pages_gave_up()
                delay = await self._backoff.sleep(exc.retry_after, grow=grow)
                self.log.info("reflector.throttled", phase=phase.value, delay=round(delay, 3))
            except TooLargeResourceVersion as exc:
                self._counters.too_large += 1
                self._consecutive_too_large += 1
                if self._consecutive_too_large > self.options.too_large_retries:
                    self._consecutive_too_large = 0
                    self._force_consistent = True
                    phase = _Phase.LIST
                delay = await self._backoff.sleep(exc.retry_after)
                self.log.info("reflector.watch_too_large", delay=round(delay, 3))
            except _ServerWentBackwards:
                self._counters.backwards += 1
                self._backwards_counted = True  # the consistent relist it causes is this one
                self.log.warning(
                    "reflector.server_went_backwards", cache_rv=self.store.resource_version
                )
                self._force_consistent = True
                phase = _Phase.LIST
            except (TransportError, WatchStreamError, MalformedResponse) as exc:
                self._counters.errors += 1
                delay = await self._backoff.sleep()
                self.log.info(  # fields, not str(exc): a malformed line's quotes the line
                    "reflector.connection_error",
                    phase=phase.value,
                    delay=round(delay, 3),
                    **error_fields(exc),
                )
            except ApiError as exc:
                self._counters.errors += 1
                grow = self._took_pages_gave_up()  # a 5xx's Retry-After, as for a 429
                delay = await self._backoff.sleep(exc.retry_after, grow=grow)
                self.log.warning(  # not str(exc) nor the message: the server's text can quote data
                    "reflector.api_error",
                    phase=phase.value,
                    delay=round(delay, 3),
                    **error_fields(exc),
                )
                phase = _Phase.LIST
            except Exception:
                self._counters.errors += 1
                self.log.exception("reflector.unexpected_error", phase=phase.value)
                await self._backoff.sleep()
                phase = _Phase.LIST

    def _took_pages_gave_up(self) -> bool:
        gave_up, self._pages_gave_up = self._pages_gave_up, False
        return gave_up

    # -- list phase ------------------------------------------------------------------------
    async def _sync(self) -> WatchStream | None:
        if self._should_stream():
            try:
                stream = await self._stream_sync()
            except _StaleStream as exc:
                self.log.warning("reflector.stale_list", streamed=True, why=str(exc))
                self._force_consistent = True
            except _StreamUnsupported as exc:
                if self.options.list_strategy == "stream":
                    raise ApiError(0, "StreamingListUnsupported", str(exc)) from exc
                self._stream_state = StreamingState.UNSUPPORTED
                self.log.info("reflector.streaming_list_unsupported", why=str(exc))
            except (ApiError, TransportError, WatchStreamError, MalformedResponse) as exc:
                if not isinstance(exc, TooManyRequests | ShardSelectorRejected):  # not the stream
                    self._stream_failed(exc)
                raise  # the loop backs off; the next sync streams again (or pages, if paused)
            else:
                self._stream_state = StreamingState.SUPPORTED
                self._stream_failures_in_a_row = 0
                return stream
        elif self._stream_state is StreamingState.PAUSED:
            self._stream_paused_lists += 1
        await self._list_sync()
        return None
