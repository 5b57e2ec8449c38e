"""The revisioned store as the server serves it: wire resource versions, the compaction policy,
change notification, and the lagging view of a stale replica.

``Store`` (``store``) keeps the objects and the change log; ``History`` adds what depends on the
personality and on time: how a revision is written on the wire, when history is compacted, which
revision a (possibly stale) read may see, and waiting for a revision to become visible.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable

from informer.testing import _status as st
from informer.testing._options import ServerOptions
from informer.testing._signals import Signal
from informer.testing._status import StatusError
from informer.testing._storage.store import Store

__all__ = ["History"]


class History:
    """The store, its revisions and who is waiting on them; all writes end in ``after_write``."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.store = Store(self.format_rv)
        self.changed = Signal()  # data, bookmarks, restore, stop: wakes watch streams
        self.epoch = 0  # bumped by a restore: open watches end
        self.stopping = False
        self._stop_event: asyncio.Event | None = None
        self.open_cursors: Callable[[], Iterable[int]] = lambda: ()
        """Revisions open watches still read from (the log is kept for them); set by the watch
        server."""

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self.stopping = False
        self._stop_event = asyncio.Event()

    def stop(self) -> None:
        self.stopping = True
        if self._stop_event is not None:
            self._stop_event.set()
        self.changed.notify()

    async def sleep(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        if self._stop_event is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stop_event.wait()

    # -- resource versions --------------------------------------------------------------------

    def format_rv(self, revision: int) -> str:
        return f"x{revision:x}" if self.options.opaque else str(revision)

    def parse_rv(self, rv: str) -> int:
        """The revision of wire resource version ``rv``; raises a 400 ``BadRequest``."""
        if self.options.opaque:
            if rv.startswith("x"):
                with contextlib.suppress(ValueError):
                    return int(rv[1:], 16)
            raise st.bad_request(
                f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
                "not a resource version of this server"
            )
        if rv.isascii() and rv.isdigit():
            return int(rv)
        raise st.bad_request(
            f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
            f'strconv.ParseUint: parsing "{rv}": invalid syntax'
        )

    # -- compaction and restore ---------------------------------------------------------------

    def compact(self, revision: int | None = None) -> None:
        self.store.compact(self.store.revision if revision is None else revision)
        self.trim(force=True)

    def auto_compact(self) -> None:
        """Compact by count (``compaction_window``) and age (``history_max_age``)."""
        store, options = self.store, self.options
        if options.compaction_window is not None:
            store.compact(store.revision - options.compaction_window)
        if options.history_max_age is not None:
            store.compact_older_than(options.history_max_age)

    def trim(self, force: bool = False) -> None:
        """Drop compacted log entries no open watch still needs (in batches unless ``force``)."""
        store = self.store
        if not force and store.compacted - store.log_base < 1024:
            return
        keep = min(self.open_cursors(), default=store.compacted)
        store.trim(keep)

    def restore(self, revision: int) -> None:
        store = self.store
        if not store.compacted <= revision <= store.revision:
            raise ValueError(
                f"cannot restore to {revision}: available {store.compacted}..{store.revision}"
            )
        store.restore(revision)
        self.epoch += 1
        self.changed.notify()

    def after_write(self) -> None:
        self.auto_compact()
        self.trim()
        self.changed.notify()

    # -- views --------------------------------------------------------------------------------

    def visible(self, lagged: bool) -> int:
        """The newest revision a read may see: current, or the stale replica's lagging view."""
        store = self.store
        if lagged and self.options.stale_lag:
            return max(store.revision - self.options.stale_lag, store.compacted)
        return store.revision

    async def await_revision(self, revision: int, lagged: bool) -> bool:
        """Wait up to ``too_large_wait`` for the (possibly lagging) view to reach ``revision``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.too_large_wait
        while self.visible(lagged) < revision:
            remaining = deadline - loop.time()
            if remaining <= 0 or self.stopping:
                return False
            changed = self.changed.event
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()
        return True

    async def reached(self, wanted: int, lagged: bool) -> bool:
        """Whether the (possibly lagging) view reaches ``wanted`` within ``too_large_wait``."""
        return self.visible(lagged) >= wanted or await self.await_revision(wanted, lagged)

    async def not_older_than(self, rv: str, wanted: int, lagged: bool) -> int:
        """The view to serve a "not older than ``wanted``" read from, or 504 Too large."""
        options = self.options
        cache = options.watch_cache_quirks or (lagged and options.stale_lag > 0)
        if self.visible(lagged) < wanted:
            if not cache:
                raise st.too_large(rv, self.format_rv(self.store.revision), 0)
            if not await self.await_revision(wanted, lagged):
                raise st.too_large(rv, self.format_rv(self.visible(lagged)), 1)
        return self.visible(lagged)

    def watch_expired(self, wanted: int) -> StatusError:
        """410 for a watch from a compacted RV: the watch cache's wording when it serves the
        watch (the quirks), else etcd's (list-watch-semantics.md, observed on v1.21)."""
        if self.options.watch_cache_quirks:
            return st.expired(
                f"too old resource version: {self.format_rv(wanted)} "
                f"({self.format_rv(self.store.compacted)})"
            )
        return st.expired(st.WATCH_TOO_OLD)
