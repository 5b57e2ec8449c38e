"""The reflector: keeps a ``Store`` in step with the server by LIST and WATCH.

It owns "the last RV seen" and decides relist vs re-watch:

- first sync: a consistent paginated list (or "any", or a streaming list); every relist asks
  ``resourceVersion=<last>&resourceVersionMatch=NotOlderThan`` and verifies the answer is not older;
- 410 on a continuation restarts the list at the first page's RV, then falls back to a
  consistent read; 410 on a first NotOlderThan page (an old server applying Exact) falls back to
  a consistent read;
- a watch resumes from the last RV after a clean end or a broken connection; 410 relists; 429
  waits Retry-After and re-watches; other errors back off and relist;
- stale and duplicate events are dropped by the store (KEP-5504 comparisons), and a server whose
  RVs go backwards (an etcd restore) is detected and relisted with a consistent read.

Deltas go to one callback, synchronously, right after the store changed.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from informer import _checks
from informer._log import describe_error, get_logger
from informer.backoff import Backoff, BackoffPolicy
from informer.errors import (
    ApiError,
    ConfigurationError,
    MalformedResponse,
    MalformedWatchLine,
    ResourceExpired,
    TooLargeResourceVersion,
    TooManyRequests,
    TransportError,
    WatchIdleTimeout,
    WatchStreamError,
)
from informer.objects import KubeObject, Trim
from informer.pager import ContinueExpired, ListResult, list_all, list_exact
from informer.resource import Resource
from informer.resource_version import compare_resource_versions, is_comparable
from informer.store import Delta, Store
from informer.transforms import DropFields
from informer.transport import Transport, WatchEvent, WatchStream

__all__ = ["Reflector", "ReflectorOptions", "ReflectorStats", "StreamingState"]

Transform = Callable[[dict[str, Any]], Mapping[str, Any]]
DeltaSink = Callable[[list[Delta]], None]


@dataclass(frozen=True, slots=True)
class ReflectorOptions:
    """How a reflector lists and watches; the defaults are those of a production controller.

    ``idle_timeout``: a watch silent for this long (65 s: just above the ~60 s bookmark interval
    of real API servers, so a watch that gets bookmarks is never re-opened) is presumed stuck and
    re-opened from the last RV, without relisting; None waits for the watch timeout plus the
    transport's ``idle_margin`` (5.5 to 10.5 minutes).
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


_SUPPORTED = {
    StreamingState.SUPPORTED: True,
    StreamingState.UNSUPPORTED: False,
    StreamingState.OFF: False,
    StreamingState.PAUSED: False,
}


def _brief(exc: Exception) -> str:
    """A failure for a log line: an API error by code and reason (its message may quote
    values), anything else by its message."""
    return f"{exc.code} {exc.reason}" if isinstance(exc, ApiError) else str(exc)


class _Phase(enum.Enum):
    LIST = "list"
    WATCH = "watch"


class _StreamUnsupported(Exception):
    """The server does not implement streaming lists (rejected or ignored sendInitialEvents)."""


class _StreamFailed(WatchStreamError):
    """A streaming list failed in a way that may not happen again (a stall, a duplicate)."""


class _StaleStream(Exception):
    """A streaming list answered with a state older than the cache (a lagging replica)."""


class _ServerWentBackwards(Exception):
    """Events or bookmarks older than the cache, again and again: the server's RVs went back."""


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


class Reflector:
    """Lists and watches one resource (in one namespace, with selectors) into a ``Store``."""

    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        store: Store | None = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: ReflectorOptions | None = None,
        on_deltas: DeltaSink | None = None,
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
        self.store = store if store is not None else Store()
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.options = options or ReflectorOptions()
        self.on_deltas = on_deltas
        self.synced = asyncio.Event()
        self._backoff = Backoff(self.options.backoff)
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
        self.log = get_logger("informer.reflector").bind(
            resource=resource.group_resource,
            namespace=namespace or "",
            selector=label_selector or "",
        )

    # -- public ----------------------------------------------------------------------------
    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

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
        )

    async def run(self) -> None:
        """List, then watch, forever; returns only by cancellation."""
        phase = _Phase.LIST
        while True:
            try:
                if phase is _Phase.LIST:
                    stream = await self._sync()
                    phase = _Phase.WATCH
                    await self._watch(stream)
                else:
                    await self._watch(None)
            except asyncio.CancelledError:
                raise
            except ResourceExpired as exc:
                self._counters.expired += 1
                self._expired_in_a_row += 1
                self.log.info(
                    "reflector.watch_expired",
                    phase=phase.value,
                    message=exc.message,
                    times=self._expired_in_a_row,
                )
                phase = _Phase.LIST
                if self._expired_in_a_row > 1:  # 410 again with no progress since: back off
                    await self._backoff.sleep()
            except TooManyRequests as exc:
                delay = await self._backoff.sleep(exc.retry_after)
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
                if isinstance(exc, MalformedWatchLine):  # its message quotes the line: data
                    error = f"malformed watch line at byte {exc.offset}: {exc.why}"
                else:
                    error = str(exc)
                self.log.info(
                    "reflector.connection_error",
                    phase=phase.value,
                    error=error,
                    delay=round(delay, 3),
                )
            except ApiError as exc:
                self._counters.errors += 1
                delay = await self._backoff.sleep()
                self.log.warning(
                    "reflector.api_error", phase=phase.value, error=str(exc), delay=round(delay, 3)
                )
                phase = _Phase.LIST
            except Exception:
                self._counters.errors += 1
                self.log.exception("reflector.unexpected_error", phase=phase.value)
                await self._backoff.sleep()
                phase = _Phase.LIST

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
                if not isinstance(exc, TooManyRequests):  # throttled: not the stream's fault
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

    def _should_stream(self) -> bool:
        state = self._stream_state
        if self._force_consistent or state in (StreamingState.OFF, StreamingState.UNSUPPORTED):
            return False
        if state is StreamingState.PAUSED:
            if self._stream_paused_lists == 0 or time.monotonic() < self._stream_paused_until:
                return False
            self._stream_state = StreamingState.RETRYING
            self._stream_failures_in_a_row = self.options.stream_failures_before_pause - 1
        return True

    def _stream_failed(self, exc: Exception) -> None:
        """A transient streaming-list failure: retry on the next sync, or pause after a run."""
        self._counters.stream_failures += 1
        if self.options.list_strategy == "stream":
            return
        self._stream_failures_in_a_row += 1
        error = _brief(exc)
        if self._stream_failures_in_a_row < self.options.stream_failures_before_pause:
            self._stream_state = StreamingState.RETRYING
            self.log.info(
                "reflector.streaming_list_failed", error=error, times=self._stream_failures_in_a_row
            )
            return
        self._stream_state = StreamingState.PAUSED
        self._stream_failures_in_a_row = 0
        self._stream_paused_lists = 0
        self._stream_paused_until = time.monotonic() + self.options.stream_pause
        self.log.warning(
            "reflector.streaming_list_paused", error=error, seconds=self.options.stream_pause
        )

    def _list_request(
        self, restart_rv: str | None, consistent: bool
    ) -> tuple[str | None, str | None]:
        if consistent:
            return None, None
        if restart_rv is not None:
            return restart_rv, "NotOlderThan"
        last = self.store.resource_version
        if last:
            return last, "NotOlderThan"
        if self.options.initial_list == "any":
            return "0", None
        return None, None

    async def _list_sync(self) -> None:
        consistent = self._force_consistent
        restart_rv: str | None = None
        limit: int | None = self.options.page_size
        stale = too_large = 0
        relist = self.has_synced
        while True:
            rv, rvm = self._list_request(restart_rv, consistent)
            try:
                result = await list_all(
                    self.transport,
                    self.resource,
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    resource_version=rv,
                    resource_version_match=rvm,
                    limit=limit,
                    known=self._known if len(self.store) else None,
                    trim=self._trim(),
                    retry_page=self._retry_page,
                )
            except ContinueExpired as exc:
                self._counters.expired += 1
                self.log.info("reflector.continue_expired", list_rv=exc.list_rv)
                if restart_rv is None and not consistent:
                    restart_rv = exc.list_rv
                elif not consistent:
                    consistent = True
                else:
                    limit = None  # one unpaginated consistent list: cannot expire
                continue
            except ResourceExpired:
                if consistent:
                    raise  # counted (once) by run()
                self._counters.expired += 1
                # an old server applied Exact to NotOlderThan + limit (KEP-2523): consistent read
                self.log.info("reflector.list_expired", rv=rv, match=rvm)
                consistent = True
                continue
            except TooLargeResourceVersion as exc:
                self._counters.too_large += 1
                too_large += 1
                if too_large >= self.options.too_large_retries:
                    consistent = True
                delay = await self._backoff.sleep(exc.retry_after)
                self.log.info("reflector.list_too_large", rv=rv, delay=round(delay, 3))
                continue
            self._counters.list_pages += result.pages
            last = self.store.resource_version
            if self._is_older(result.resource_version, last):
                if not consistent:
                    self._counters.stale_lists += 1
                    stale += 1
                    self.log.warning(
                        "reflector.stale_list", list_rv=result.resource_version, cache_rv=last
                    )
                    if stale >= self.options.stale_list_retries:
                        consistent = True
                    else:
                        await self._backoff.sleep()
                    continue
                # a consistent read is the truth: the server's RVs went backwards (etcd restore)
                if not self._backwards_counted:
                    self._counters.backwards += 1
                self.log.warning(
                    "reflector.server_went_backwards",
                    list_rv=result.resource_version,
                    cache_rv=last,
                )
            self._counters.lists += 1
            self._apply_list(result.items, result.resource_version, relist)
            self._force_consistent = False
            self._backwards_counted = False
            return

    async def _retry_page(self, exc: Exception, failures: int) -> bool:
        """A page failed transiently (429, 5xx, cut connection): wait (at least the server's
        Retry-After) and request the same page again, up to ``page_retries`` times a page; then
        the error goes to the loop's usual handling (back off, list again from the first page)."""
        if failures > self.options.page_retries:
            return False
        self._counters.page_retries += 1
        retry_after = exc.retry_after if isinstance(exc, TooManyRequests) else None
        delay = await self._backoff.sleep(retry_after)
        error = _brief(exc)
        self.log.info("reflector.page_retry", error=error, failures=failures, delay=round(delay, 3))
        return True

    def _is_older(self, rv: str, than: str) -> bool:
        if not than or not is_comparable(rv) or not is_comparable(than):
            return False
        return compare_resource_versions(rv, than) < 0

    def _known(self, key: str, resource_version: str) -> KubeObject | None:
        """The cached object at this key and RV: a relist keeps it instead of a new copy."""
        cached = self.store.get_by_key(key)
        if cached is not None and cached.resource_version == resource_version:
            return cached
        return None

    def _trim(self) -> Trim | None:
        transform = self.options.transform
        return transform if isinstance(transform, DropFields) else None

    def _apply_list(
        self, items: list[KubeObject], rv: str, relist: bool, prepared: bool = False
    ) -> None:
        """Replace the store with a list's items (``prepared``: already transformed)."""
        kind = self.resource.kind
        objs = [o for o in items if not o.kind or o.kind == kind or self._kind_ok(o)]
        transform = self.options.transform
        if not prepared and transform is not None and not isinstance(transform, DropFields):
            # a function on dicts (DropFields ran on the bytes already); cached ones are done
            cached = self.store.get_by_key
            objs = [o if cached(o.key) is o else self._prepare(o) for o in objs]
        deltas = self.store.replace(objs, rv, is_initial=not self.has_synced)
        if relist:
            self._counters.relists += 1
        self._note_comparable(rv)
        self.log.info(
            "reflector.relist" if relist else "reflector.synced", rv=rv, objects=len(objs)
        )
        self._emit(deltas)
        self._older_in_a_row = 0
        self.synced.set()

    async def _stream_sync(self) -> WatchStream:
        last = self.store.resource_version
        self._stream_timeout = self._watch_timeout()
        stream = self.transport.watch(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resource_version=last or ("0" if self.options.initial_list == "any" else None),
            resource_version_match="NotOlderThan",
            send_initial_events=True,
            allow_watch_bookmarks=True,
            timeout_seconds=self._stream_timeout,
            idle_timeout=self.options.idle_timeout,
            on_open=self._watch_opened,
            trim=self._trim(),
        )
        initial: dict[str, KubeObject] = {}
        ok = False
        # silence is detected per network chunk by the stream itself, the total by one deadline
        normal_idle = stream.idle_timeout
        idle = self.options.stream_idle_limit
        stream.idle_timeout = idle if normal_idle is None else min(idle, normal_idle)
        try:
            async with asyncio.timeout(self.options.stream_initial_limit):
                known_at = self._known if len(self.store) else None
                kind = self.resource.kind
                async for batch in stream.batches():
                    for i, event in enumerate(batch):
                        obj = event.object
                        if event.type == "BOOKMARK":
                            if not event.initial_events_end:
                                raise _StreamUnsupported(
                                    "a bookmark without the initial-events mark"
                                )
                            rv = obj.resource_version
                            if self._is_older(rv, last):
                                self._counters.stale_lists += 1
                                raise _StaleStream(f"streamed state at {rv} is older than {last}")
                            self._counters.lists += 1
                            self._counters.stream_lists += 1
                            self._apply_list(
                                list(initial.values()), rv, bool(last) or self.has_synced, True
                            )
                            stream.idle_timeout = normal_idle
                            stream.unread(batch[i + 1 :])  # the watch goes on with them
                            ok = True
                            return stream
                        if obj.kind and obj.kind != kind and not self._kind_ok(obj):
                            continue
                        key = obj.key
                        if event.type != "ADDED":
                            # a change before the end: a plain watch, the server ignores it
                            raise _StreamUnsupported(f"{event.type} {key} before the end bookmark")
                        if key in initial:  # a replayed line (a proxy, a reconnect): transient
                            raise _StreamFailed(f"initial ADDED {key} twice")
                        cached = None if known_at is None else known_at(key, obj.resource_version)
                        initial[key] = cached if cached is not None else self._prepare(obj)
            raise WatchStreamError("streaming list ended before its end bookmark")
        except (TimeoutError, WatchIdleTimeout) as exc:
            # a server ignoring sendInitialEvents without RV looks the same, but so does a stall
            raise _StreamFailed(
                f"no initial-events-end bookmark within {idle:g}s of silence or "
                f"{self.options.stream_initial_limit:g}s in all"
            ) from exc
        except ApiError as exc:
            if exc.code in (400, 422):  # the parameters are refused: definitive
                raise _StreamUnsupported(f"{exc.code} {exc.reason}: {exc.message}") from exc
            raise  # 403/404 (RBAC, an aggregated API starting), 5xx, ERROR events: transient
        finally:
            if not ok:
                await stream.aclose()

    # -- watch phase -----------------------------------------------------------------------
    def _watch_timeout(self) -> int:
        low, high = self.options.watch_timeout
        return random.randint(low, high)

    async def _probe_server_rv(self) -> None:
        """After a watch broke off early: has the server's RV gone behind ours (etcd restore)?

        A watch from an RV the server has not reached waits silently, so a restored server would
        otherwise hide its new writes below our RV. One consistent ``limit=1`` list tells.
        """
        self._probe_before_watch = False
        last = self.store.resource_version
        if not is_comparable(last):
            return
        page = await self.transport.list_page(self.resource, namespace=self.namespace, limit=1)
        if self._is_older(page.resource_version, last):
            self.log.warning(
                "reflector.server_behind_cache", server_rv=page.resource_version, cache_rv=last
            )
            raise _ServerWentBackwards()

    async def _watch(self, stream: WatchStream | None) -> None:
        if stream is None and self._probe_before_watch:
            await self._probe_server_rv()
        timeout_seconds = self._stream_timeout if stream is not None else self._watch_timeout()
        if stream is None:
            stream = self.transport.watch(
                self.resource,
                namespace=self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                resource_version=self.store.resource_version or None,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds,
                idle_timeout=self.options.idle_timeout,
                on_open=self._watch_opened,
                trim=self._trim(),
            )
        self._counters.watches += 1
        started = time.monotonic()
        seen = 0
        try:
            async with stream:
                handle = self._handle
                async for batch in stream.batches():
                    seen += len(batch)
                    self._consecutive_too_large = 0
                    deltas: list[Delta] = []
                    try:  # the changes of one network read go to the handlers at once
                        for event in batch:
                            delta = handle(event)
                            if delta is not None:
                                deltas.append(delta)
                    finally:
                        self._emit(deltas)
        except WatchIdleTimeout as exc:
            # Silent for idle_timeout: a stuck proxy or a half-dead connection, or only a quiet
            # resource (servers send bookmarks only after a change newer than the watch's
            # start). Re-watching from the last RV loses nothing: no relist, no backoff, not an
            # error.
            self._counters.idle_rewatches += 1
            # A watch from an RV a restored server has not reached is silent too: one limit=1
            # list before the next watch tells (not a relist: at most one item)
            self._probe_before_watch = True
            self.log.info(
                "reflector.watch_idle", seconds=exc.seconds, rv=self.store.resource_version
            )
            return
        except (TransportError, WatchStreamError):
            self._probe_before_watch = True
            raise
        elapsed = time.monotonic() - started
        if elapsed < 0.9 * timeout_seconds:
            self._probe_before_watch = True  # the server ended it early: restarted, restored?
        if seen == 0 and elapsed < self.options.quick_watch_end:
            self._quick_ends += 1
            if self._quick_ends > 1:
                delay = await self._backoff.sleep()
                self.log.info("reflector.watch_ends_quickly", times=self._quick_ends, delay=delay)
        else:
            self._quick_ends = 0

    def _watch_opened(self, beyond_pool: bool) -> None:
        if beyond_pool:  # the ApiClient's pool could not spare a connection (logged)
            self._counters.watches_beyond_pool += 1

    def _handle(self, event: WatchEvent) -> Delta | None:
        """Apply one event to the store; the change it made, if any."""
        self._expired_in_a_row = 0
        obj = event.object
        rv = obj.resource_version
        store = self.store
        # the RV is validated once here; the store re-checks only what it must
        comparable = is_comparable(rv)
        cache_key = store._rv_key if store._comparable else None
        older = comparable and cache_key is not None and (len(rv), rv) < cache_key
        if older:
            self._older_in_a_row += 1
            if self._older_in_a_row >= self.options.backwards_after:
                self._older_in_a_row = 0
                raise _ServerWentBackwards()
        else:
            self._older_in_a_row = 0
        if event.type == "BOOKMARK":
            self._counters.bookmarks += 1
            if not older:
                store.advance(rv)
            return None
        if obj.kind and obj.kind != self.resource.kind and not self._kind_ok(obj):
            return None
        transform = self.options.transform
        if transform is not None and not isinstance(transform, DropFields):
            obj = self._prepare(obj)  # (a DropFields cut the object as its line was decoded)
        delta = store.apply_event(event.type, obj)
        if not comparable:
            self._note_comparable(rv)
        return delta

    # -- helpers ---------------------------------------------------------------------------
    def _kind_ok(self, obj: KubeObject) -> bool:
        if obj.kind and obj.kind != self.resource.kind:
            self._counters.wrong_kind_ignored += 1
            self.log.warning("reflector.wrong_kind", kind=obj.kind, key=obj.key)
            return False
        return True

    def _prepare(self, obj: KubeObject) -> KubeObject:
        """``obj`` through the transform function. A ``DropFields`` has cut every object already:
        list items as their page was decoded, watch objects as their line was."""
        transform = self.options.transform
        if transform is None or isinstance(transform, DropFields):
            return obj
        try:
            out = KubeObject.from_dict(transform(obj.to_dict()))
        except Exception as exc:
            self._counters.errors += 1
            # no traceback: its locals hold the object as a dict (a Secret's data, in a log)
            self.log.error("reflector.transform_failed", key=obj.key, error=describe_error(exc))
            return obj
        if (obj.key, obj.uid, obj.resource_version) != (out.key, out.uid, out.resource_version):
            self._counters.errors += 1
            self.log.error("reflector.transform_changed_identity", key=obj.key)
            return obj
        return out

    def _note_comparable(self, rv: str) -> None:
        if not self._warned_not_comparable and not is_comparable(rv):
            self._warned_not_comparable = True
            self.log.warning("reflector.rv_not_comparable", rv=rv)

    def _emit(self, deltas: list[Delta]) -> None:
        if not deltas or self.on_deltas is None:
            return
        try:
            self.on_deltas(deltas)
        except Exception:
            self._counters.errors += 1
            self.log.exception("reflector.delta_sink_failed")
