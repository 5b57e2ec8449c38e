"""WATCH serving: open streams, initial events, changes from the log, bookmarks.

Each stream is a ``Watch`` (where it is in the change log and what it selects); the streams read
the history and wake up on its ``changed`` signal. See the ``informer.testing`` docstring for the
semantics per personality.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from typing import Any

from aiohttp import web

from informer.resource import Resource
from informer.testing._query import list_options as params
from informer.testing._query.field_labels import FieldLabels
from informer.testing._query.selectors import Selector
from informer.testing._query.sharding import watch_filter
from informer.testing._serving.content import encode
from informer.testing._serving.faults import StreamCut, StreamEnd, WatchWriter
from informer.testing._signals import Signal
from informer.testing._status import too_large
from informer.testing._storage.history import History
from informer.testing._storage.store import Change, Kind, Store, StoredObject
from informer.testing.faults import Fault, RecordedRequest

__all__ = ["Watch", "WatchServer"]

Json = dict[str, Any]

_INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class Watch:
    """An open watch stream: where it is in the change log and what it selects."""

    __slots__ = (
        "allow_bookmarks",
        "bookmark_now",
        "cursor",
        "epoch",
        "force_bookmark",
        "lagged",
        "live_fault",
        "prefix",
        "resource",
        "saw_newer",
        "selector",
        "start",
    )

    def __init__(
        self,
        resource: Resource,
        prefix: str,
        selector: Selector,
        start: int,
        lagged: bool,
        allow_bookmarks: bool,
        epoch: int,
    ) -> None:
        self.resource = resource
        self.prefix = prefix
        self.selector = selector
        self.start = start
        self.cursor = start
        self.lagged = lagged
        self.allow_bookmarks = allow_bookmarks
        self.epoch = epoch
        self.saw_newer = False
        self.bookmark_now = False
        self.force_bookmark = False
        self.live_fault: Fault | None = None  # set by ``disrupt`` on an open stream

    def matches(self, resource: Resource | str | None) -> bool:
        """Whether this watch is of ``resource`` (a plural; None: any)."""
        if resource is None:
            return True
        if isinstance(resource, str):
            return self.resource.plural == resource
        return self.resource == resource


def bookmark(
    kind: Kind, rv: str, initial_end: bool = False, *, null_created: bool = False
) -> bytes:
    """A BOOKMARK line at ``rv`` (annotated as the end of the initial events if asked).

    ``null_created``: the metadata carries ``"creationTimestamp":null``, as servers before
    ObjectMeta's timestamp became omitted when zero sent (v1.21 did; v1.36 does not).
    """
    meta: Json = {"resourceVersion": rv}
    if null_created:
        meta["creationTimestamp"] = None
    if initial_end:
        meta["annotations"] = {_INITIAL_EVENTS_END: "true"}
    obj = {"kind": kind.resource.kind, "apiVersion": kind.resource.api_version, "metadata": meta}
    return b'{"type":"BOOKMARK","object":' + kind.encode(obj) + b"}\n"


class WatchServer:
    """Answers WATCH requests; knows the open streams."""

    def __init__(self, history: History, activity: Signal) -> None:
        self.history = history
        self.options = history.options
        self.store = history.store
        self.activity = activity
        self.watchers: set[Watch] = set()
        history.open_cursors = lambda: (w.cursor for w in self.watchers)

    def count(self, resource: Resource | str | None = None) -> int:
        """Watch streams open now (headers sent), for ``resource`` (or plural) if given."""
        return sum(1 for w in self.watchers if w.matches(resource))

    def send_bookmarks(self, resource: Resource | None = None, *, force: bool = False) -> int:
        """Ask every eligible watch for a BOOKMARK now; returns how many were asked."""
        count = 0
        for w in self.watchers:
            if not w.allow_bookmarks or not w.matches(resource):
                continue
            w.bookmark_now = True
            w.force_bookmark = w.force_bookmark or force
            count += 1
        self.history.changed.notify()
        return count

    def disrupt(self, fault: Fault, resource: Resource | str | None = None) -> int:
        """Hand ``fault`` to every open watch of ``resource``; each applies it at once."""
        count = 0
        for w in self.watchers:
            if w.matches(resource):
                w.live_fault = fault
                fault.fired += 1
                count += 1
        self.history.changed.notify()
        return count

    async def serve(
        self,
        request: web.Request,
        record: RecordedRequest,
        kind: Kind,
        namespace: str | None,
        name: str | None,
        query: dict[str, str],
        fault: Fault | None,
        convert: Callable[[list[bytes]], list[bytes]] | None = None,
        fields_of: FieldLabels | None = None,
        shown: Kind | None = None,
    ) -> web.StreamResponse:
        """Validate, then stream until the timeout, a fault, a restore or the server's stop.

        ``convert`` re-encodes event lines (Tables for ``kubectl get -w``)."""
        options, history, store = self.options, self.history, self.store
        resource = kind.resource
        rv = query.get("resourceVersion", "")
        rvm = query.get("resourceVersionMatch", "")
        cont = query.get("continue", "")
        sie = params.parse_bool(query, "sendInitialEvents") if options.watch_list else None
        allow_bookmarks = bool(params.parse_bool(query, "allowWatchBookmarks"))
        timeout = params.parse_int(query, "timeoutSeconds")
        selector = params.selector(query, name, fields_of)
        params.validate(options, True, rv, rvm, cont, sie)
        shard = watch_filter(options.shard_selectors, query, selector)
        if shard is not None:
            selector = selector & shard.as_selector()
        history.auto_compact()
        lagged = rv != ""  # consistent reads (RV unset) are always fresh
        wanted = history.parse_rv(rv) if rv not in ("", "0") else 0
        initial = end_bookmark = False
        error: Json | None = None  # sent as the only event of a 200 stream, like a real watch
        if sie:
            # the end bookmark only with allowWatchBookmarks (cacher: isListWatchRequest)
            initial, end_bookmark = True, allow_bookmarks
            if wanted and not await history.reached(wanted, lagged):
                # waitUntilFreshLocked fails inside the watch: an ERROR event, not an HTTP 504
                error = too_large(rv, history.format_rv(history.visible(lagged)), 1).status
            start = history.visible(lagged)
        elif sie is False and rv == "":
            start = store.revision
        elif rv in ("", "0"):
            initial = sie is None
            start = history.visible(lagged)
        else:
            start = wanted
            if wanted < store.compacted:
                error = history.watch_expired(wanted).status
            # an N beyond the (possibly lagging) view: the watch is established and simply waits
            # for changes after N (a real watch never answers "Too large resource version")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout > 0 else math.inf
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        record.status = 200
        watch = Watch(
            resource,
            f"{namespace}/" if namespace and resource.namespaced else "",
            selector,
            start,
            lagged,
            allow_bookmarks,
            history.epoch,
        )
        writer = WatchWriter(
            history,
            request,
            response,
            fault if fault is not None and fault.affects_stream else None,
        )
        self.watchers.add(watch)
        self.activity.notify()
        try:
            await writer.begin()
            if error is not None:
                await writer.write(encode({"type": "ERROR", "object": error}) + b"\n")
                return response
            if initial:
                state = store.state_at(resource, start)
                lines = [state[k].added_line() for k in self._initial_keys(watch, state)]
                if convert is not None:
                    lines = convert(lines)
                trailer = None
                if end_bookmark:
                    trailer = bookmark(
                        shown or kind,
                        history.format_rv(start),
                        True,
                        null_created=not options.watch_list,
                    )
                await writer.send(lines, trailer)
            await self._stream(kind, watch, writer, deadline, convert, shown or kind)
        except (StreamEnd, ConnectionError):
            pass
        except StreamCut:
            return response
        finally:
            self.watchers.discard(watch)
            self.activity.notify()
        return response

    def _initial_keys(self, watch: Watch, state: dict[str, StoredObject]) -> list[str]:
        keys = self.store.sorted_keys(watch.resource, state)
        lo, hi = Store.key_range(keys, watch.prefix)
        if watch.selector.empty:
            return keys[lo:hi]
        return [k for k in keys[lo:hi] if watch.selector.matches(state[k].data)]

    def _collect(self, watch: Watch, upto: int, lines: list[bytes]) -> None:
        """Append the lines for changes after the watch's cursor up to ``upto``."""
        resource, prefix, selector = watch.resource, watch.prefix, watch.selector
        everything = selector.empty
        changes: list[Change] = self.store.changes(watch.cursor, upto)
        watch.cursor = upto
        for change in changes:
            if change.resource != resource:
                continue
            watch.saw_newer = True
            if prefix and not change.key.startswith(prefix):
                continue
            if everything:
                lines.append(change.line(change.type))
                continue
            old = change.prev is not None and selector.matches(change.prev.data)
            new = change.obj is not None and selector.matches(change.obj.data)
            if old and new:
                lines.append(change.line("MODIFIED"))
            elif new:
                lines.append(change.line("ADDED"))
            elif old:
                lines.append(change.line("DELETED"))

    async def _stream(
        self,
        kind: Kind,
        watch: Watch,
        writer: WatchWriter,
        deadline: float,
        convert: Callable[[list[bytes]], list[bytes]] | None = None,
        shown: Kind | None = None,
    ) -> None:
        """``shown``: the served version bookmarks name (another version of a custom
        resource than the stored ``kind``)."""
        history, options = self.history, self.options
        loop = asyncio.get_running_loop()
        now = loop.time()
        interval = options.bookmark_interval
        # cacheWatcher.nextBookmarkTime: the next bookmark is due at min(now + interval,
        # deadline - bookmark_before_timeout); once that moment has passed, none is scheduled
        # again (so none at all when timeoutSeconds is shorter than bookmark_before_timeout)
        next_bookmark = now + interval if watch.allow_bookmarks else math.inf
        pre_timeout = deadline - options.bookmark_before_timeout
        if not watch.allow_bookmarks:
            pre_timeout = math.inf
        elif pre_timeout <= now:
            next_bookmark = pre_timeout = math.inf
        while True:
            if history.stopping or watch.epoch != history.epoch:
                return
            if watch.live_fault is not None:
                fault, watch.live_fault = watch.live_fault, None
                await writer.disrupt(fault)
            changed = history.changed.event
            now = loop.time()
            if now >= deadline:
                return
            visible = history.visible(watch.lagged)
            lines: list[bytes] = []
            if watch.cursor < visible:
                self._collect(watch, visible, lines)
            trailer = None
            if watch.allow_bookmarks and (
                watch.bookmark_now or now >= next_bookmark or now >= pre_timeout
            ):
                if now >= next_bookmark:
                    next_bookmark = now + interval
                if now >= pre_timeout:
                    next_bookmark = pre_timeout = math.inf
                eligible = not options.watch_cache_quirks or watch.saw_newer or watch.force_bookmark
                if watch.bookmark_now or eligible:
                    watch.bookmark_now = False
                if eligible and visible >= watch.start:
                    trailer = bookmark(
                        shown or kind,
                        history.format_rv(watch.cursor),
                        null_created=not options.watch_list,
                    )
                watch.force_bookmark = False
            if lines or trailer:
                if convert is not None and lines:
                    lines = convert(lines)
                await writer.send(lines, trailer)
                continue
            wake = min(deadline, next_bookmark, pre_timeout) - now
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if math.isinf(wake) else max(wake, 0.0)):
                    await changed.wait()
