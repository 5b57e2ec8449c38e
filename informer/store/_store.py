"""The :class:`Store` itself: reads, and the writes the reflector makes.

``Store`` composes its bases: :class:`~informer.store._indexes._Indexes` (index maintenance) and
:class:`~informer.store._waiters._Waiters` (the freshness questions and waits). It owns all the
state they work on (created in ``__init__``) and the rules that move the cache RV: the
resource-version rules in the ``informer.store`` docstring are implemented here, in
:meth:`Store.apply_event`, :meth:`Store.advance` and :meth:`Store.replace`, the hot paths of a sync
(``apply_event`` judges an event stale or a duplicate by ``_verdict``, the rule partitions share).
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
import sys
import time
from collections.abc import Iterable
from typing import Literal

from informer._log import get_logger
from informer.errors import ConfigurationError
from informer.objects import KubeObject
from informer.resource_version import is_comparable
from informer.shards import ShardField, ShardSet
from informer.store._changes import Delta, Tombstone
from informer.store._compression import Compression, _Packer
from informer.store._freshness import CacheNotComparable, CacheWentBackwards, Freshness
from informer.store._indexes import NAMESPACE_INDEX, IndexFunc, _Contents, _Indexes, _key_of
from informer.store._partition import StorePartition
from informer.store._stats import CacheSize, StoreStats
from informer.store._verdict import DROPPED, EVENT_TYPES, judge_bookmark, judge_event, judge_list
from informer.store._waiters import _HeapEntry, _KeyPredicate, _Waiters

_log = get_logger("informer.store")


class Store(_Waiters, _Indexes):
    """The informer cache: objects by key, indexes, the cache RV and freshness waiters.

    Reads are for everyone; the write methods (``apply_event``, ``replace``, ``advance``) are for
    the reflector only. See the ``informer.store`` docstring for the resource-version and
    freshness rules.
    """

    def __init__(self, *, compression: Compression | None = None) -> None:
        self._c = _Contents({}, {})
        if compression is not None and not isinstance(compression, Compression):
            raise ConfigurationError(f"compression must be a Compression: {compression!r}")
        self._packer = None if compression is None else _Packer(compression, self._items)
        self._size: tuple[tuple[object, ...], CacheSize] | None = None
        self._indexers: dict[str, IndexFunc] = {}  # user indexes; the namespace one is built in
        self._rv = ""
        self._rv_key: tuple[int, str] | None = None  # rv_sort_key(self._rv) while comparable
        self._comparable = True
        self._last_progress: float | None = None
        # freshness waiters: a heap of (rv_sort_key, seq, future); cancelled ones removed lazily
        self._heap: list[_HeapEntry] = []
        self._heap_dead = 0
        self._seq = itertools.count()
        # per-key waiters (read-your-writes without comparable RVs, deletions)
        self._key_waiters: dict[str, list[tuple[_KeyPredicate, asyncio.Future[KubeObject | None]]]]
        self._key_waiters = {}
        # counters
        self._stale = 0
        self._duplicates = 0
        self._applied = 0
        self._bookmarks = 0
        # a sharded informer's reflectors, each writing through its own partition
        self._partitions: builtins.list[StorePartition] = []
        self._holding = False  # a merge of partitions under way: waiters woken once it is done
        self._replaces = 0
        self._unknown_deletes = 0
        self._index_errors = 0
        self._regressions = 0

    # ------------------------------------------------------------------------------------------
    # reads
    # ------------------------------------------------------------------------------------------
    def get(self, name: str, namespace: str | None = None) -> KubeObject | None:
        """The cached object ``namespace/name`` (``name`` alone for cluster-scoped), or None."""
        return self._c.items.get(_key_of(name, namespace))

    def get_by_key(self, key: str) -> KubeObject | None:
        """The cached object with key ``"namespace/name"`` or ``"name"``, or None."""
        return self._c.items.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[KubeObject]:
        """All cached objects, or those of one namespace (None or ``""``: all namespaces)."""
        c = self._c
        if not namespace:
            return [*c.items.values()]
        keys = self._ns_index().get(namespace)
        if not keys:
            return []
        items = c.items
        return [items[k] for k in keys]

    def keys(self) -> builtins.list[str]:
        """The keys of all cached objects."""
        return [*self._c.items]

    def __len__(self) -> int:
        return len(self._c.items)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._c.items

    def __repr__(self) -> str:
        return (
            f"Store({len(self)} objects, rv={self._rv!r}"
            + ("" if self._comparable else ", not comparable")
            + ")"
        )

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Add an index: ``fn(obj)`` returns the index values of ``obj``.

        Existing objects are indexed at once; the index is then kept up to date on every change.
        ``fn`` must be pure (it is called again on the old object to unindex it); a ``str`` result
        counts as one value, None as no value. A call that raises is logged
        (``store.index_error``) and counted: that object is then absent from this index.
        """
        if name == NAMESPACE_INDEX or name in self._indexers:
            raise ValueError(f"index {name!r} already exists")
        if not callable(fn):
            raise ConfigurationError(f"index {name!r}: the index function must be callable")
        self._indexers[name] = fn
        index: dict[str, dict[str, None]] = {}
        for key, obj in self._c.items.items():
            self._index_add(index, name, fn, key, obj)
        self._c.indices[name] = index

    def by_index(self, name: str, value: str) -> builtins.list[KubeObject]:
        """The objects whose index ``name`` has ``value`` (``KeyError`` for an unknown index)."""
        c = self._c
        keys = (self._ns_index() if name == NAMESPACE_INDEX else c.indices[name]).get(value)
        if not keys:
            return []
        items = c.items
        return [items[k] for k in keys]

    def index_values(self, name: str) -> builtins.list[str]:
        """The values of index ``name`` that have at least one object."""
        return [*(self._ns_index() if name == NAMESPACE_INDEX else self._c.indices[name])]

    # ------------------------------------------------------------------------------------------
    # size and compression
    # ------------------------------------------------------------------------------------------
    def _items(self) -> dict[str, KubeObject]:
        return self._c.items

    @property
    def compression(self) -> Compression | None:
        """The compression options (None: objects held as their JSON)."""
        return None if self._packer is None else self._packer.options

    def size(self) -> CacheSize:
        """The bytes the cache holds and the JSON they stand for (see ``CacheSize``).

        Computed from the contents, about 0.3 us per object (0.3 s for 1,000,000 objects), and
        kept until the next change: calling it again on an unchanged cache costs nothing.
        """
        c = self._c
        p = self._packer
        gen = (id(c), len(c.items), len(c.indices), self._applied, self._replaces, p and p.packed)
        if self._size is not None and self._size[0] == gen:
            return self._size[1]
        size = _measure(c, p)
        self._size = (gen, size)
        return size

    async def compact(self) -> None:
        """With ``compression``: until every object written so far is held compressed (a
        background task does it anyway; tests and benchmarks wait on this)."""
        if self._packer is not None:
            await self._packer.compact()

    def close(self) -> None:
        """Cancel the background compression (the informer's stop calls this)."""
        if self._packer is not None:
            self._packer.close()

    # ------------------------------------------------------------------------------------------
    # freshness (``is_fresh`` and the waits: ``_waiters``)
    # ------------------------------------------------------------------------------------------
    @property
    def resource_version(self) -> str:
        """The cache RV ("" before the first list)."""
        return self._rv

    @property
    def comparable(self) -> bool:
        """False once a non-comparable (opaque) resource version has been seen."""
        return self._comparable

    def freshness(self) -> Freshness:
        """The cache RV, whether it is comparable, and the time since the last progress."""
        last = self._last_progress
        return Freshness(
            self._rv, self._comparable, None if last is None else time.monotonic() - last
        )

    @property
    def stats(self) -> StoreStats:
        return StoreStats(
            stale_dropped=self._stale,
            duplicates_dropped=self._duplicates,
            events_applied=self._applied,
            bookmarks=self._bookmarks,
            replaces=self._replaces,
            deletes_of_unknown=self._unknown_deletes,
            index_errors=self._index_errors,
            rv_regressions=self._regressions,
        )

    def _set_rv(self, rv: str, key: tuple[int, str] | None) -> None:
        """Set the cache RV (``key``: its sort key when comparable) and wake waiters."""
        self._rv = rv
        self._rv_key = key
        self._last_progress = time.monotonic()
        if key is not None and self._heap:
            self._wake()

    def _go_opaque(self, rv: str) -> None:
        """Switch to equality semantics for good; fail the pending freshness waiters."""
        self._comparable = False
        self._rv_key = None
        _log.warning(
            "store.rv_not_comparable",
            resource_version=rv,
            cache_resource_version=self._rv,
            detail="falling back to equality semantics: only exact duplicates are dropped",
        )
        heap, self._heap, self._heap_dead = self._heap, [], 0
        for (_, wanted), _, fut in heap:
            if not fut.done():
                fut.set_exception(CacheNotComparable(rv, wanted))

    # ------------------------------------------------------------------------------------------
    # partitions (a sharded informer: several reflectors, one store; see ``_partition``)
    # ------------------------------------------------------------------------------------------
    def partition(self, shards: ShardSet, field: ShardField = ShardField.UID) -> StorePartition:
        """A new partition for the objects of ``shards``, written by a reflector of its own.

        Once a store has partitions, only they write to it (not ``apply_event``, ``advance``,
        ``replace``); its RV is the lowest of theirs.
        """
        part = StorePartition(self, shards, field)
        self._partitions.append(part)
        return part

    @property
    def partitions(self) -> builtins.list[StorePartition]:
        """The partitions, oldest first (empty for a store that one reflector writes)."""
        return list(self._partitions)

    def drop_partition(self, part: StorePartition) -> int:
        """Remove ``part`` and its objects (no deltas: they were not deleted); how many."""
        if part not in self._partitions:
            return 0
        self._partitions.remove(part)
        part.detached = True
        items = self._c.items
        keys = part._keys
        for key in keys:
            self._reindex(key, items.pop(key), None)
        if keys and self._key_waiters:
            for key in keys:
                self._notify_key(key)
        count = len(keys)
        part._keys = set()
        self._partition_moved(None)
        return count

    def merge_partitions(
        self,
        parts: builtins.list[StorePartition],
        objs: Iterable[KubeObject],
        resource_version: str,
    ) -> tuple[StorePartition, builtins.list[Delta]]:
        """Replace ``parts`` with one partition of all their ranges, given ``objs``: a list of
        those ranges at ``resource_version``, listed aside (a sharded informer consolidating its
        lanes). Atomic (no await): the new partition holds their keys, then takes the list as a
        relist would, per range (see the ``_partition`` docstring): a range its old partition
        had seen past ``resource_version`` keeps its objects, the others take the list's; an
        object at the same RV stays the cached instance and gives no delta. Returns the new
        partition and the deltas (the changes the old partitions had not seen yet).

        Needs comparable RVs (KEP-5504) in every partition and the list; the old partitions are
        detached (their writers' late writes are ignored).

        Failure-atomic: if anything raises meanwhile, the store is as it was (its contents and
        indexes, its partitions with their keys and RVs, its RV), the old partitions attached,
        no waiter woken, and the error propagates: their writers go on as if no merge had been
        tried. The merge works on a copy of the contents for that (the objects by key and each
        index: 0.8 ms per 50,000 keys, up to 5 ms for an index of many small values), and wakes
        the waiters once it is done.
        """
        if len(parts) < 2 or any(p not in self._partitions for p in parts):
            raise ValueError("merge_partitions needs two or more of this store's partitions")
        field = parts[0].field
        if any(p.field is not field for p in parts) or not is_comparable(resource_version):
            raise ValueError("partitions of one field and a comparable list RV are needed")
        if not all(p.comparable and p._rv_key is not None for p in parts):
            raise ValueError("every partition merged must have listed, with comparable RVs")
        before = self._c
        partitions = self._partitions
        keys = [(p, p._keys if p in parts else set(p._keys)) for p in partitions]
        rv, rv_key, progress = self._rv, self._rv_key, self._last_progress
        self._c = _Contents(
            dict(before.items),
            {
                name: {value: dict(held) for value, held in index.items()}
                for name, index in before.indices.items()
            },
        )
        self._holding = True
        try:
            merged = self._merge_partitions(parts, objs, resource_version)
        except BaseException:
            self._c = before
            self._partitions = partitions
            for p, held in keys:
                p._keys = held
                p.detached = False
            self._rv, self._rv_key, self._last_progress = rv, rv_key, progress
            raise
        finally:
            self._holding = False
        self._wake()  # what the merge moved, once it is done
        for key in [*self._key_waiters]:
            self._notify_key(key)
        return merged

    def _merge_partitions(
        self,
        parts: builtins.list[StorePartition],
        objs: Iterable[KubeObject],
        resource_version: str,
    ) -> tuple[StorePartition, builtins.list[Delta]]:
        field = parts[0].field
        shards = ShardSet()
        for p in parts:
            shards = shards | p.shards
        merged = StorePartition(self, shards, field)
        listed_at = (len(resource_version), resource_version)
        ahead_keys: set[str] | None = set()  # the keys of the partitions ahead of the list
        for p in parts:
            merged._keys |= p._keys
            merged._ahead.extend(p._ahead)
            merged._ahead.append((p.shards, p._rv_key))  # type: ignore[arg-type]
            if any(w > listed_at for _, w in p._ahead):
                ahead_keys = None  # ranges ahead within one partition: its keys are hashed
            elif ahead_keys is not None and p._rv_key > listed_at:  # type: ignore[operator]
                ahead_keys |= p._keys
            p.detached = True
            p._keys = set()
        at = min(self._partitions.index(p) for p in parts)
        kept = [p for p in self._partitions if p not in parts]
        self._partitions = [*kept[:at], merged, *kept[at:]]
        deltas = merged.replace(objs, resource_version, ahead_keys=ahead_keys)
        return merged, deltas

    def _partition_moved(self, part: StorePartition | None) -> None:
        """A partition's RV moved (or one was removed): the store's RV is the lowest of theirs,
        once each has one, and moves only forward."""
        parts = self._partitions
        if not parts:
            return
        if not self._comparable:
            if part is not None:
                self._set_rv(part._rv, None)
            return
        lowest: tuple[int, str] | None = None
        for p in parts:
            key = p._rv_key
            if key is None:
                return  # not listed yet: holds the store's RV where it is
            if lowest is None or key < lowest:
                lowest = key
        if lowest is not None and (self._rv_key is None or lowest > self._rv_key):
            self._set_rv(lowest[1], lowest)
        else:
            self._last_progress = time.monotonic()

    # ------------------------------------------------------------------------------------------
    # writes (the reflector only)
    # ------------------------------------------------------------------------------------------
    def apply_event(self, type: str, obj: KubeObject) -> Delta | None:
        """Apply one watch event (``"ADDED"``, ``"MODIFIED"`` or ``"DELETED"``).

        Returns the resulting delta, or None when the event changed no object: dropped as stale or
        duplicate (counted), or a DELETED of an unknown key (which still advances the cache RV when
        comparable). An ADDED of a cached key is an update; a MODIFIED of an unknown key is an add.
        ``BOOKMARK`` is :meth:`advance`; any other type raises ``ValueError``.
        """
        if type not in EVENT_TYPES:
            raise ValueError(f"not an object event type: {type!r} (bookmarks: use advance())")
        lazy = obj._lazy  # (inlined: an object of a watch holds its RV string)
        rv = lazy if isinstance(lazy, str) else obj.resource_version
        key = obj._key
        items = self._c.items
        cached = items.get(key)
        deleted = type == "DELETED"
        new_key = judge_event(self, type, key, rv, cached, deleted)
        if new_key is DROPPED:
            return None
        if deleted:
            if cached is None:  # comparable: a delete we never saw the object of
                self._unknown_deletes += 1
                self._set_rv(rv, new_key)
                return None
            del items[key]
            self._reindex(key, cached, None)
            delta = Delta("deleted", obj, cached)
        else:
            items[key] = obj
            self._reindex(key, cached, obj)
            delta = Delta("added", obj, None) if cached is None else Delta("updated", obj, cached)
        self._applied += 1
        self._set_rv(rv, new_key)
        if self._key_waiters:
            self._notify_key(key)
        return delta

    def _drop(self, why: Literal["stale", "duplicate"], type: str, key: str, rv: str) -> None:
        if why == "stale":
            self._stale += 1
        else:
            self._duplicates += 1
        _log.debug(
            f"store.{why}_event",
            type=type,
            key=key,
            resource_version=rv,
            cache_resource_version=self._rv,
        )

    def advance(self, resource_version: str, *, bookmark: bool = True) -> None:
        """A BOOKMARK: every change up to ``resource_version`` has been delivered.

        Moves the cache RV forward only (an older or equal bookmark changes nothing but the progress
        time). An opaque RV switches the store to equality semantics and becomes the cache RV. An
        empty RV is ignored (logged as ``store.empty_bookmark``). ``bookmark=False``: the progress
        an event this cache does not keep proves (a sharded watch the server did not filter);
        not counted as a bookmark.
        """
        if bookmark:
            self._bookmarks += 1
        rv = resource_version
        if not rv:
            _log.warning("store.empty_bookmark")
            return
        key = judge_bookmark(self, rv)
        if key is DROPPED:  # not newer: only the progress time moves
            self._last_progress = time.monotonic()
        else:
            self._set_rv(rv, key)

    def replace(
        self, objs: Iterable[KubeObject], resource_version: str, *, is_initial: bool = False
    ) -> builtins.list[Delta]:
        """Replace the whole contents with a list's items; the cache RV becomes the list's RV.

        The new contents and indexes are built aside and swapped in at once. Returns the implied
        deltas (all ``from_list``), in this order: for each listed key, ``added`` (new key,
        ``is_initial`` as given) or ``updated`` (RV changed); then ``deleted`` with a
        :class:`Tombstone` for each key that vanished. Unchanged objects yield nothing. A key
        whose uid changed (deleted and recreated while unwatched) yields ``deleted`` (a Tombstone
        of the old object) then ``added``: handlers keyed by uid see the old object go.

        The reflector has verified the list RV is not older than what it had seen; if it is older
        all the same (a restored server, relisted on purpose) the store accepts it, logs
        ``store.rv_went_backwards``, counts ``rv_regressions`` and fails the freshness waits still
        pending (all above the new cache RV) with :class:`CacheWentBackwards`.
        """
        old_items = self._c.items
        new_items: dict[str, KubeObject] = {}
        with_ns = NAMESPACE_INDEX in self._c.indices  # else built when first read
        nsidx: dict[str, dict[str, None]] = {}
        if with_ns:
            for obj in objs:  # pass 1: the new contents (a duplicated key: the last one wins)
                key = obj._key
                ns = obj._form.namespace
                new_items[key] = obj
                if ns:
                    bucket = nsidx.get(ns)
                    if bucket is None:
                        nsidx[ns] = bucket = {}
                    bucket[key] = None
        else:
            for obj in objs:
                new_items[obj._key] = obj
        deltas: builtins.list[Delta] = []
        append = deltas.append
        get_old = old_items.get
        kept = 0
        if not old_items:  # the first list: all added
            deltas = [
                Delta("added", obj, None, is_initial, from_list=True) for obj in new_items.values()
            ]
            append = deltas.append
        for key, obj in new_items.items() if old_items else ():  # pass 2: the diff
            old = get_old(key)
            if old is None:
                append(Delta("added", obj, None, is_initial, from_list=True))
                continue
            kept += 1
            if old is obj:
                continue
            if old.resource_version == obj.resource_version:
                # the same version of the same object (an RV names one write): keep the cached
                # instance, so an unchanged relist creates nothing new and drops the copy
                new_items[key] = old
            elif old.uid != obj.uid:
                append(Delta("deleted", Tombstone(key, old), old, from_list=True))
                append(Delta("added", obj, None, is_initial, from_list=True))
            else:
                append(Delta("updated", obj, old, from_list=True))
        if kept < len(old_items):  # some old keys vanished
            for key, old in old_items.items():
                if key not in new_items:
                    append(Delta("deleted", Tombstone(key, old), old, from_list=True))
        indices: dict[str, dict[str, dict[str, None]]] = {NAMESPACE_INDEX: nsidx} if with_ns else {}
        for name, fn in self._indexers.items():
            index: dict[str, dict[str, None]] = {}
            for key, obj in new_items.items():
                self._index_add(index, name, fn, key, obj)
            indices[name] = index
        self._c = _Contents(new_items, indices)  # the swap
        self._replaces += 1
        if self._packer is not None:
            self._packer.note_all()

        rv = resource_version
        key_rv, went_back = judge_list(self, rv)
        if went_back:
            self._regressions += 1
            _log.warning(
                "store.rv_went_backwards", resource_version=rv, cache_resource_version=self._rv
            )
        self._set_rv(rv, key_rv)
        if went_back and self._heap:
            # every wait still pending wants an RV of the lost history: fail it now rather
            # than hang, or resolve later on a different write that reuses the number
            heap, self._heap, self._heap_dead = self._heap, [], 0
            for (_, wanted), _, fut in heap:
                if not fut.done():
                    fut.set_exception(CacheWentBackwards(rv, wanted))
        if self._key_waiters:
            for key in [*self._key_waiters]:
                self._notify_key(key)
        return deltas


def _measure(c: _Contents, packer: _Packer | None) -> CacheSize:
    """``Store.size()``: each object's own allocations, the tables and the dictionaries."""
    getsizeof = sys.getsizeof
    items = c.items
    total = getsizeof(items)
    json = compressed = payload = 0
    lazies = []
    forms = set()  # shared by the objects of one kind, apiVersion and namespace: counted once
    base = getsizeof(KubeObject(b"", None, ""))
    for key, obj in items.items():
        raw = obj._raw
        forms.add(obj._form)
        total += getsizeof(raw) + getsizeof(key)
        payload += len(raw)
        if obj._form.code == 3:
            compressed += 1
            json += obj._json_size()
        else:
            json += len(raw)
        lazy = obj._lazy
        if lazy is not None:
            if isinstance(lazy, str):  # the RV alone (an object of a watch)
                total += getsizeof(lazy)
            else:
                lazies.append(lazy)
    total += base * len(items) + sum(getsizeof(f) for f in forms)
    seen: set[int] = set()  # a labels dict shared by several objects counts once
    for lazy in lazies:
        total += getsizeof(lazy) + getsizeof(lazy.uid) + getsizeof(lazy.resource_version)
        labels = lazy.labels
        if labels and id(labels) not in seen:
            seen.add(id(labels))
            total += getsizeof(labels) + sum(getsizeof(k) + getsizeof(v) for k, v in labels.items())
    for index in c.indices.values():
        total += getsizeof(index)
        for value, bucket in index.items():
            total += getsizeof(value) + getsizeof(bucket)
    if packer is not None:
        total += sum(codec.dict_size for codec in packer.codecs)
    return CacheSize(len(items), total, json, compressed, payload)
