"""The watch phase: WATCH from the last RV, apply each event to the store, detect a restored server.

A watch resumes from the last RV after a clean end, a broken connection or silence past
``idle_timeout``; stale and duplicate events are dropped by the store (KEP-5504 comparisons), and
a server whose RVs go backwards (an etcd restore: events older than the cache again and again, or
a server RV behind the cache after a watch broke off) raises ``_ServerWentBackwards`` for the
loop to relist with a consistent read. A watch that delivered anything was progress: the backoff
before the next one starts from ``initial`` again.
"""

from __future__ import annotations

import time

from informer._log import error_fields
from informer.errors import TransportError, WatchIdleTimeout, WatchStreamError
from informer.reflector._core import _ReflectorCore
from informer.resource_version import is_comparable
from informer.store import Delta
from informer.transforms import DropFields
from informer.transport import WatchEvent, WatchStream


class _ServerWentBackwards(Exception):
    """Events or bookmarks older than the cache, again and again: the server's RVs went back."""


class _Watching(_ReflectorCore):
    """The reflector's watch phase (``Reflector`` combines it with the list phases)."""

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
                shard_selector=self._sent_shards(),
                pack=self._packing() is not None,
            )
        self._counters.watches += 1
        started = time.monotonic()
        seen = 0
        self.log.debug(
            "reflector.watch_started", rv=self.store.resource_version, timeout=timeout_seconds
        )
        try:
            async with stream:
                handle = self._handle
                packer = self._packing()
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
                    if packer is not None and packer.backlogged:
                        # applied plain, packed by the store's background task in batches in
                        # the compression thread: past a bound of plain objects, packed here
                        await packer.room()
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
            self._log_closed("idle", seen, started)
            return
        except (TransportError, WatchStreamError) as exc:
            self._probe_before_watch = True
            self._log_closed(type(exc).__name__, seen, started)
            raise
        except BaseException as exc:  # an API error (410, 429, ...), a restore, a cancellation
            # the reason only when it is one (error_fields checks): a webhook's can be any text
            reason = str(error_fields(exc).get("reason", ""))
            self._log_closed(reason if reason.isidentifier() else type(exc).__name__, seen, started)
            raise
        finally:
            if seen:
                # it delivered: whatever ends it now is a new failure, re-watched after
                # ``initial`` again, not after a delay grown by the failures before it
                self._backoff.progress()
        elapsed = time.monotonic() - started
        early = elapsed < 0.9 * timeout_seconds
        self._log_closed("server_closed_early" if early else "timeout", seen, started)
        if early:
            self._probe_before_watch = True  # the server ended it early: restarted, restored?
        if seen == 0 and elapsed < self.options.quick_watch_end:
            self._quick_ends += 1
            if self._quick_ends > 1:
                delay = await self._backoff.sleep()
                self.log.info("reflector.watch_ends_quickly", times=self._quick_ends, delay=delay)
        else:
            self._quick_ends = 0

    def _log_closed(self, why: str, events: int, started: float) -> None:
        """DEBUG: a watch ended (``why``: timeout, server_closed_early, idle, the error)."""
        seconds = round(time.monotonic() - started, 3)
        self.log.debug("reflector.watch_closed", why=why, events=events, seconds=seconds)

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
        kind = obj._form.kind
        if kind and kind != self.resource.kind and not self._kind_ok(obj):
            return None
        if self._shard_set is not None and self._out_of_shards(obj):
            # even when the lists were filtered: a server without its watch cache does not
            # filter a watch with no label or field selector, and nothing on the wire says so.
            # Its RV still proves progress: every change of our ranges before it has arrived
            self._shards_unfiltered("watch", 0)
            if comparable and not older:
                store.advance(rv, bookmark=False)
            return None
        transform = self.options.transform
        if transform is not None and not isinstance(transform, DropFields):
            obj = self._prepare(obj)  # (a DropFields cut the object as its line was decoded)
        delta = store.apply_event(event.type, obj)
        if not comparable:
            self._note_comparable(rv)
        return delta
