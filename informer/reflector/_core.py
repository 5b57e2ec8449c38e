"""The state the phases of a reflector share, and the steps that put what they read in the store.

``_ReflectorCore`` declares the attributes the phases read and write (``Reflector.__init__`` sets
them) and holds the steps the paginated list, the streaming list and the watch have in common:
the RV comparison, reusing cached objects, filtering by kind, the transform function, replacing
the store with a list and handing deltas to the callback, and the parameters of a watch.
The phases are its subclasses (``_paged_list``, ``_streaming_list``, ``_watch``); ``Reflector``
combines them. They call each other through ``self``, so a method replaced on ``Reflector`` (a
test planting a bug) is the one every phase calls.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from informer._log import describe_error, error_fields
from informer._malloc import trim
from informer.backoff import Backoff
from informer.objects import KubeObject, Trim
from informer.reflector._options import ReflectorOptions
from informer.reflector._stats import StreamingState, _Counters
from informer.resource import Resource
from informer.resource_version import compare_resource_versions, is_comparable
from informer.shards import ShardSelector, ShardSet
from informer.store import Delta, Store, StorePartition
from informer.transforms import DropFields
from informer.transport import Transport

if TYPE_CHECKING:
    import structlog

    from informer.store._compression import _Packer

DeltaSink = Callable[[list[Delta]], None]

# a list of this many objects or more: free heap pages given back (one malloc_trim, about 0.3 ms
# per 100,000 objects; below this the pages freed are a few MB at most)
_TRIM_AFTER_LIST = 10_000


def _brief(exc: Exception) -> dict[str, Any]:
    """A failure for a log record: ``error_fields`` (type, status, reason, request), never its
    message (an API error's is the server's text, a malformed line's quotes the line)."""
    return error_fields(exc)


class _ReflectorCore:
    """The state of one reflector, and the steps its phases share (see the module docstring)."""

    transport: Transport
    resource: Resource
    store: Store | StorePartition  # a partition: one of a sharded informer's reflectors
    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    # KEP-5866: the ranges this reflector holds (None: unsharded); sent while the server accepts
    shard_selector: ShardSelector | None
    _shard_set: ShardSet | None
    _send_shards: bool
    _warned_shards_unfiltered: bool
    options: ReflectorOptions
    on_deltas: DeltaSink | None
    synced: asyncio.Event
    log: structlog.stdlib.BoundLogger
    _backoff: Backoff  # the list/watch cycle's, and every Retry-After wait
    _page_backoff: Backoff  # one failing page's waits (from initial again for every page)
    _pages_gave_up: bool  # the last list failed because one page ran out of retries
    _counters: _Counters
    # the list strategy (see StreamingState) and its pause
    _stream_state: StreamingState
    _stream_failures_in_a_row: int
    _stream_paused_until: float
    _stream_paused_lists: int
    # what the next list asks, and why
    _force_consistent: bool
    _backwards_counted: bool
    # runs of the same outcome, for backoff and detection
    _consecutive_too_large: int
    _quick_ends: int
    _older_in_a_row: int
    _expired_in_a_row: int
    _probe_before_watch: bool
    _stream_timeout: int
    _warned_not_comparable: bool
    _list_floor: str

    def _not_older_than(self) -> str:
        """The RV a list must not be older than: the cache's, or before the first list the
        floor the reflector was given (a sharded reflector's lane taken later: what the other
        lanes have seen), "" for none."""
        return self.store.resource_version or self._list_floor

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

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

    def _known_item(self, key: str, resource_version: str) -> KubeObject | None:
        """``_known`` for a list's pages, whose items are checked again (``Known``): a cached
        list's item, which does not hold its RV, is answered without reading it (its bytes are
        compared with the listed item's)."""
        cached = self.store.get_by_key(key)
        if cached is not None:
            held = cached._held_rv()
            if held is None or held == resource_version:
                return cached
        return None

    def _packing(self) -> _Packer | None:
        """The store's packer, when objects are packed as they arrive (``Compression``): not
        with a transform function on dicts, which makes new objects of them after (those are
        packed in the background)."""
        packer = self.store._packer
        transform = self.options.transform
        if packer is None or (transform is not None and not isinstance(transform, DropFields)):
            return None
        return packer

    def _trim(self) -> Trim | None:
        transform = self.options.transform
        return transform if isinstance(transform, DropFields) else None

    def _apply_list(
        self, items: list[KubeObject], rv: str, relist: bool, prepared: bool = False
    ) -> None:
        """Replace the store with a list's items (``prepared``: already transformed)."""
        kind = self.resource.kind
        # (the kind is the object's form's: one attribute, no property call per object)
        objs = [o for o in items if (k := o._form.kind) == kind or not k or self._kind_ok(o)]
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
        if len(items) >= _TRIM_AFTER_LIST:
            # the pages' bodies, freed between the cache's objects (``informer._malloc``); once
            # the handlers woken above had their turn (a synchronous one takes the whole list
            # in one step), when the list's own lists and the deltas they held are gone too
            try:
                asyncio.get_running_loop().call_soon(trim)
            except RuntimeError:  # no loop (a store filled by hand)
                trim()
        self._older_in_a_row = 0
        self._backoff.answered()
        self.synced.set()

    def _new_backoff(self) -> Backoff:
        clock = self.options.clock
        if clock is None:
            return Backoff(self.options.backoff)
        return Backoff(self.options.backoff, clock=clock.now, sleep=clock.sleep)

    def _sent_shards(self) -> ShardSelector | None:
        """The shard selector to send (None once the server refused it: filtered here only)."""
        return self.shard_selector if self._send_shards else None

    def _out_of_shards(self, obj: KubeObject) -> bool:
        """True (counted) when ``obj`` is outside the reflector's ranges: the server sent it
        although the selector excludes it, so it is dropped here."""
        shards = self._shard_set
        if shards is None or self.shard_selector is None:
            return False
        if shards.contains(obj.shard_hash(self.shard_selector.field)):
            return False
        self._counters.shard_filtered += 1
        return True

    def _shards_unfiltered(self, how: str, count: int = 1) -> None:
        """The server answered without filtering by the shard selector: counted, logged once."""
        self._counters.shard_unfiltered_lists += count
        if not self._warned_shards_unfiltered:
            self._warned_shards_unfiltered = True
            self.log.warning(
                "reflector.shard_selector_not_applied",
                how=how,
                detail="the server sent objects outside the shard ranges (gate off, an older "
                "server, or no watch cache): filtering by the same hash here",
            )

    def _watch_timeout(self) -> int:
        low, high = self.options.watch_timeout
        return random.randint(low, high)

    def _watch_opened(self, beyond_pool: bool) -> None:
        if beyond_pool:  # the ApiClient's pool could not spare a connection (logged)
            self._counters.watches_beyond_pool += 1

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
