"""The cache: objects by key, indexes, the cache's resource version, and freshness waiters.

The store sits between the reflector (which writes: :meth:`Store.replace` after a list,
:meth:`Store.apply_event` for watch events, :meth:`Store.advance` for bookmarks) and its users (who
read: :meth:`Store.get`, :meth:`Store.list`, :meth:`Store.by_index`, and the freshness API).

Objects are :class:`~informer.objects.KubeObject`: raw JSON plus decoded metadata, read-only. The
store never decodes them fully; indexes hold keys, not objects.

Resource versions
-----------------
The *cache RV* is the highest resource version applied from a list (its ListMeta RV), an event or a
bookmark. While the server's RVs are comparable (KEP-5504) it never decreases, except when the
reflector deliberately replaces the cache with a list that is older (a server restored from
backup: logged as ``store.rv_went_backwards``). Events whose RV is not newer than the cache RV are
replays and are dropped and counted (``stale_dropped``; a replay of the exact cached version
counts as ``duplicates_dropped``).

As soon as the store sees one RV that is not comparable (some aggregated APIs return opaque RVs) it
switches, for good, to equality semantics: it drops only exact duplicates, keeps the last RV it saw
as the cache RV, logs ``store.rv_not_comparable`` once and reports ``comparable=False``.

Freshness: what a caller can rely on
------------------------------------
* :meth:`Store.is_fresh` and :meth:`Store.wait_for_resource_version` resolve only on resource
  versions the store has actually seen: a list's RV, an applied event's RV, or a bookmark's RV.
  The store never infers or claims freshness it has not seen.
* The cache RV moves only when something arrives. A real API server sends bookmarks only after it
  has seen an event of that resource newer than the watch's start RV, so on a *quiet* resource
  (no writes) the cache RV may stay at the list's RV indefinitely, even though the cache is in fact
  up to date. A wait for an RV obtained from *another* resource, or from a write to this resource
  that the watch has not delivered yet, may therefore time out: use a timeout, and on
  :class:`~informer.errors.StaleCacheError` fall back to a live read (or a relist).
* The RV of your own write to this resource *will* be reached once the watch delivers that write
  (the event carries exactly that RV), which is what :meth:`Store.wait_for_write` relies on.
* RVs are only comparable within one resource (group + resource): never wait on one store for an
  RV returned by a different resource.
* With a non-comparable server, the only freshness the store can confirm is "the cache RV equals
  this RV"; every other question raises :class:`CacheNotComparable` at once.

The store is not thread-safe: use it from one event loop. Writes are synchronous, so a reader in the
same loop never observes a half-applied change; :meth:`Store.replace` builds the new contents aside
and swaps them in with one assignment.
"""

from __future__ import annotations

import asyncio
import builtins
import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from informer._log import describe_error, get_logger
from informer.errors import ConfigurationError, StaleCacheError
from informer.objects import KubeObject
from informer.resource_version import InvalidResourceVersion, is_comparable, rv_sort_key

__all__ = [
    "NAMESPACE_INDEX",
    "CacheNotComparable",
    "CacheWentBackwards",
    "Delta",
    "Freshness",
    "IndexFunc",
    "Store",
    "StoreStats",
    "Tombstone",
]

_log = get_logger("informer.store")

NAMESPACE_INDEX = "namespace"
"""The built-in index: namespace -> keys of the namespaced objects in it."""

IndexFunc = Callable[[KubeObject], Iterable[str]]
"""An index function: the index values of one object (a plain ``str`` counts as one value)."""

_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})
_COMPACT_MIN = 64


class CacheNotComparable(InvalidResourceVersion):
    """The store's resource versions are not comparable, so it cannot tell whether an RV is reached.

    Raised by the freshness API (``is_fresh``, ``wait_for_resource_version``) when the server's RVs
    are opaque (not KEP-5504) and the wanted RV is not exactly the cache RV. A subclass of
    ``InvalidResourceVersion``: one ``except InvalidResourceVersion`` covers "cannot judge this RV".
    """

    def __init__(self, cache_rv: str, wanted_rv: str) -> None:
        super().__init__(
            wanted_rv,
            f"the cache's resource versions are not comparable (server is not KEP-5504 "
            f"conformant; cache RV {cache_rv!r}): only the cache RV itself can be confirmed",
        )
        self.cache_rv = cache_rv
        self.wanted_rv = wanted_rv


class CacheWentBackwards(StaleCacheError):
    """The cache was relisted at an older resource version than a pending wait wanted.

    The server's RVs went back (an etcd restore): the wanted RV belongs to a history the server no
    longer has, and its number will be reused by other writes, so the wait cannot be satisfied
    honestly. Raised into every freshness wait pending above the new cache RV (a subclass of
    ``StaleCacheError``: a caller falls back to a live read, as after a timeout).
    """

    def __init__(self, cache_rv: str, wanted_rv: str) -> None:
        super().__init__(cache_rv, wanted_rv, None)
        self.args = (
            f"the server's resource versions went back (etcd restore?): the cache was relisted "
            f"at {cache_rv!r}, below the wanted {wanted_rv!r}, which may now name another write",
        )


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A key that vanished in a relist (client-go's ``DeletedFinalStateUnknown``).

    The object was deleted while the watch was not running; ``obj`` is the last state the cache had,
    not the object's final state.
    """

    key: str
    obj: KubeObject


class Delta(msgspec.Struct, frozen=True, gc=False):
    """One change to the cache.

    * ``added``: ``obj`` is the new object, ``old`` is None; ``is_initial`` for adds of the first
      sync.
    * ``updated``: ``obj`` is the new object, ``old`` the previously cached copy.
    * ``deleted``: ``obj`` is the object from the DELETED event (its final state), or a
      :class:`Tombstone` when the deletion was inferred from a relist; ``old`` the cached copy.

    ``from_list`` tells where the change was found: True for every delta of a list
    (``Store.replace``: the first one, or a relist after a 410, a restore or a consistent relist),
    False for a live watch event. A controller queues list changes behind live ones
    (controller-runtime's priority queue), whichever list found them.

    (A frozen ``msgspec.Struct`` the garbage collector does not track: a sync of 100,000 objects
    makes 100,000 of them, in a tenth of the time a frozen dataclass takes to build.)
    """

    type: Literal["added", "updated", "deleted"]
    obj: KubeObject | Tombstone
    old: KubeObject | None
    is_initial: bool = False
    from_list: bool = False


@dataclass(frozen=True, slots=True)
class Freshness:
    """What the cache has caught up to.

    ``seconds_since_progress`` is the time (monotonic clock) since the last applied list, event or
    bookmark, None before the first list. A bookmark that does not move the RV still counts: it
    shows that the stream is alive and nothing newer is pending.
    """

    resource_version: str
    comparable: bool
    seconds_since_progress: float | None


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counters of the store since it was created."""

    stale_dropped: int = 0
    """Events not newer than the cache RV (replays), dropped."""
    duplicates_dropped: int = 0
    """Events carrying exactly the cached copy's RV (or, without comparable RVs, a DELETED of an
    absent key), dropped."""
    events_applied: int = 0
    """Events that changed the cache (returned a Delta)."""
    bookmarks: int = 0
    """Calls to ``advance`` (bookmarks received), whether or not they moved the RV."""
    replaces: int = 0
    """Lists applied with ``replace``."""
    deletes_of_unknown: int = 0
    """DELETED events of a key the cache did not hold, with a newer RV: RV advanced, no delta."""
    index_errors: int = 0
    """Index function calls that raised (the object is then missing from that index)."""
    rv_regressions: int = 0
    """Replaces whose list RV was older than the cache RV (a server restored from backup)."""


class _Contents:
    """Everything a reader looks at, swapped as one unit by ``replace``."""

    __slots__ = ("indices", "items")

    def __init__(
        self, items: dict[str, KubeObject], indices: dict[str, dict[str, dict[str, None]]]
    ) -> None:
        self.items = items
        # index name -> value -> keys (a dict used as an insertion-ordered set)
        self.indices = indices


_HeapEntry = tuple[tuple[int, str], int, "asyncio.Future[None]"]
_KeyPredicate = Callable[[KubeObject | None], bool]


def _key_of(name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if namespace else name


def _index_values(fn: IndexFunc, obj: KubeObject) -> Iterable[str]:
    values = fn(obj)
    if values is None:
        return ()
    if isinstance(values, str):
        return (values,)
    return values


def _status_details(obj: Any) -> tuple[str, str] | None:
    """(name, uid) from the ``details`` of a DELETE's ``Status`` (JSON or model), else None."""
    if isinstance(obj, Mapping):
        if obj.get("kind") != "Status":
            return None
        details = obj.get("details")
        if not isinstance(details, Mapping):
            raise ValueError("a Status without details names no object")
        return str(details.get("name") or ""), str(details.get("uid") or "")
    if type(obj).__name__ == "V1Status":
        details = getattr(obj, "details", None)
        if details is None:
            raise ValueError("a Status without details names no object")
        return str(getattr(details, "name", None) or ""), str(getattr(details, "uid", None) or "")
    return None


def _meta_of(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(name, namespace, uid, resourceVersion) of a KubeObject, a JSON mapping or a client model."""
    if isinstance(obj, KubeObject):
        return obj.name, obj.namespace, obj.uid, obj.resource_version
    if isinstance(obj, Mapping):
        if obj.get("kind") == "Status":
            raise ValueError(
                "a Status is not an object: pass the object itself (e.g. the one you deleted)"
            )
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            raise ValueError("object has no metadata")
        return (
            str(meta.get("name") or ""),
            str(meta.get("namespace") or ""),
            str(meta.get("uid") or ""),
            str(meta.get("resourceVersion") or ""),
        )
    meta = getattr(obj, "metadata", None)  # a kubernetes_asyncio model (V1Pod, ...)
    if meta is None:
        raise ValueError(f"cannot read metadata of {type(obj).__name__}")
    return (
        str(getattr(meta, "name", None) or ""),
        str(getattr(meta, "namespace", None) or ""),
        str(getattr(meta, "uid", None) or ""),
        str(getattr(meta, "resource_version", None) or ""),
    )


class Store:
    """The informer cache: objects by key, indexes, the cache RV and freshness waiters.

    Reads are for everyone; the write methods (``apply_event``, ``replace``, ``advance``) are for
    the reflector only. See the module docstring for the resource-version and freshness rules.
    """

    def __init__(self) -> None:
        self._c = _Contents({}, {NAMESPACE_INDEX: {}})
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
        keys = c.indices[NAMESPACE_INDEX].get(namespace)
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
        keys = c.indices[name].get(value)
        if not keys:
            return []
        items = c.items
        return [items[k] for k in keys]

    def index_values(self, name: str) -> builtins.list[str]:
        """The values of index ``name`` that have at least one object."""
        return [*self._c.indices[name]]

    # ------------------------------------------------------------------------------------------
    # freshness
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

    def _wanted_key(self, rv: str) -> tuple[int, str] | None:
        """The sort key of a wanted RV; None if it is exactly the (non-comparable) cache RV.

        Raises ``CacheNotComparable`` or ``InvalidResourceVersion``.
        """
        if not self._comparable:
            if rv == self._rv:
                return None
            raise CacheNotComparable(self._rv, rv)
        return rv_sort_key(rv)  # raises InvalidResourceVersion

    def is_fresh(self, rv: str) -> bool:
        """True when the cache has seen resource version ``rv`` or a newer one.

        Only RVs actually seen count (see the module docstring): False does not mean the cache is
        behind the server, only that nothing at or beyond ``rv`` has arrived yet. Raises
        ``InvalidResourceVersion`` for a malformed ``rv``, and ``CacheNotComparable`` when the
        store's RVs are opaque and ``rv`` is not exactly the cache RV.
        """
        key = self._wanted_key(rv)
        if key is None:
            return True
        return self._rv_key is not None and self._rv_key >= key

    async def wait_for_resource_version(self, rv: str, timeout: float | None = None) -> None:
        """Return as soon as the cache has seen resource version ``rv`` or a newer one.

        Resolved in the call that applies the list, event or bookmark reaching ``rv``. Raises
        ``StaleCacheError`` (cache RV, ``rv``, ``timeout``) after ``timeout`` seconds (None: wait
        forever; 0: do not wait). Raises at once ``InvalidResourceVersion`` for a malformed ``rv``
        and ``CacheNotComparable`` when the store's RVs are opaque and ``rv`` is not exactly the
        cache RV (also raised into a pending wait if the store turns non-comparable), and
        ``CacheWentBackwards`` (a ``StaleCacheError``) into a pending wait when the cache is
        relisted at an older RV (a server restored from backup).

        A quiet resource may get no bookmark that would move the cache RV (see the module
        docstring): always pass a timeout when ``rv`` does not come from a write to this resource.
        """
        key = self._wanted_key(rv)
        if key is None or (self._rv_key is not None and self._rv_key >= key):
            return
        if timeout is not None and timeout <= 0:
            raise StaleCacheError(self._rv, rv, timeout)
        fut = self._rv_future(key)
        try:
            await self._await(fut, timeout, rv)
        finally:
            if fut.cancelled():
                self._heap_dead += 1
                self._maybe_compact()

    async def wait_for_write(
        self, obj: Mapping[str, Any], timeout: float | None = None
    ) -> KubeObject | None:
        """Read your own write: wait until the cache reflects the object a write returned.

        ``obj`` is the response of a create, update or patch (a JSON mapping, a ``KubeObject``, or a
        kubernetes_asyncio model with ``.metadata``). With comparable RVs, waits until the cache RV
        reaches the object's RV, then returns the cached copy of that key (at that RV or newer), or
        None if the cache does not hold it by then: deleted, recreated with another uid, or not
        matched by this cache's namespace or selectors.

        With opaque RVs, waits until the cache holds exactly that version of the key and returns it;
        if the object changed again before the watch delivered the write, this times out. (If the
        store turns opaque during a comparable wait, the wait switches to this rule and the timeout
        starts again.)

        Raises ``StaleCacheError`` on timeout, ``InvalidResourceVersion`` for a malformed RV.
        """
        name, namespace, uid, rv = _meta_of(obj)
        key = _key_of(name, namespace)
        if not name:
            raise ValueError("object has no metadata.name")

        def same(o: KubeObject | None) -> KubeObject | None:
            return o if o is not None and (not uid or o.uid == uid) else None

        if self._comparable:
            try:
                await self.wait_for_resource_version(rv, timeout)
                return same(self._c.items.get(key))
            except CacheNotComparable:
                pass  # turned opaque while waiting: fall back to equality (timeout restarts)

        def holds(o: KubeObject | None) -> bool:
            return o is not None and o.resource_version == rv and (not uid or o.uid == uid)

        return same(await self._wait_key(key, holds, timeout, rv))

    async def wait_for_deletion(
        self, obj: Mapping[str, Any], timeout: float | None = None, *, namespace: str | None = None
    ) -> None:
        """Wait until no cached object has this object's uid (by key when it has no uid).

        ``obj`` is the deleted object (as read before deleting it, or the DELETE response when it
        is the object), or the ``Status`` a DELETE returns for most resources: it names the object
        and its uid in ``details`` but carries neither namespace nor RV. The uid identifies the
        object in any cache (all namespaces included); ``namespace`` is used only for a Status
        without a uid. Without an RV, a cache that has not seen the object yet reports it gone at
        once: prefer the object. Works with comparable and opaque RVs. Raises ``StaleCacheError``
        on timeout.
        """
        status = _status_details(obj)
        scope: str | None = None  # the namespace a uid is looked for in (None: all)
        if status is not None:
            name, uid = status
            rv = ""
        else:
            name, namespace, uid, rv = _meta_of(obj)  # ``namespace`` is for a Status only
            scope = namespace
        namespace = namespace or ""
        if not name:
            raise ValueError("object has no metadata.name")

        def gone(o: KubeObject | None) -> bool:
            return o is None or bool(uid and o.uid != uid)

        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        if self._comparable and rv:
            # first the object's own version: a cache that never saw it must not report it gone
            try:
                await self.wait_for_resource_version(rv, timeout)
            except CacheNotComparable:
                pass
        if not uid:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            await self._wait_key(_key_of(name, namespace), gone, remaining, rv)
            return
        # the keys holding that uid now (a uid never moves to another key): wait until each
        # holds something else; found by name, in every namespace for a Status (no uid map:
        # it would cost every cached object a decoded uid and an entry)
        items = self._c.items
        if scope is not None:
            candidates = [_key_of(name, scope)]
        else:
            candidates = [name, *(f"{ns}/{name}" for ns in self._c.indices[NAMESPACE_INDEX])]
        for key in candidates:
            held = items.get(key)
            if held is not None and held.uid == uid:
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                await self._wait_key(key, gone, remaining, rv)

    # -- waiter plumbing ---------------------------------------------------------------------------
    def _rv_future(self, key: tuple[int, str]) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (key, next(self._seq), fut))
        return fut

    async def _await(self, fut: asyncio.Future[Any], timeout: float | None, wanted: str) -> Any:
        try:
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            if fut.done() and not fut.cancelled():
                return fut.result()  # resolved in the same iteration as the timeout: not stale
            raise StaleCacheError(self._rv, wanted, timeout) from None

    async def _wait_key(
        self, key: str, pred: _KeyPredicate, timeout: float | None, wanted: str
    ) -> KubeObject | None:
        current = self._c.items.get(key)
        if pred(current):
            return current
        if timeout is not None and timeout <= 0:
            raise StaleCacheError(self._rv, wanted, timeout)
        fut: asyncio.Future[KubeObject | None] = asyncio.get_running_loop().create_future()
        entry = (pred, fut)
        self._key_waiters.setdefault(key, []).append(entry)
        try:
            result: KubeObject | None = await self._await(fut, timeout, wanted)
            return result
        finally:
            waiters = self._key_waiters.get(key)
            if waiters is not None:
                waiters.remove(entry)
                if not waiters:
                    del self._key_waiters[key]

    def _notify_key(self, key: str) -> None:
        waiters = self._key_waiters.get(key)
        if not waiters:
            return
        obj = self._c.items.get(key)
        for pred, fut in waiters:
            if not fut.done() and pred(obj):
                fut.set_result(obj)

    def _maybe_compact(self) -> None:
        """Drop cancelled waiters from the heap once they are at least half of it."""
        if self._heap_dead >= _COMPACT_MIN and self._heap_dead * 2 >= len(self._heap):
            self._heap = [e for e in self._heap if not e[2].done()]
            heapq.heapify(self._heap)
            self._heap_dead = 0

    def _wake(self) -> None:
        """Resolve every freshness waiter whose RV the cache has now reached."""
        heap, current = self._heap, self._rv_key
        if current is None:
            return
        while heap and heap[0][0] <= current:
            fut = heapq.heappop(heap)[2]
            if fut.done():
                self._heap_dead -= 1
            else:
                fut.set_result(None)

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
    # indexes
    # ------------------------------------------------------------------------------------------
    def _index_add(
        self,
        index: dict[str, dict[str, None]],
        name: str,
        fn: IndexFunc,
        key: str,
        obj: KubeObject,
    ) -> None:
        try:
            # all values first: a function raising midway must leave nothing behind, since
            # _index_remove (raising the same way) could not take a partial entry out again
            values = [*_index_values(fn, obj)]
        except Exception as exc:  # a user function: never let it break the reflector
            self._index_errors += 1
            _log.error("store.index_error", index=name, key=key, error=describe_error(exc))
            return
        for v in values:
            bucket = index.get(v)
            if bucket is None:
                index[v] = bucket = {}
            bucket[key] = None

    def _index_remove(
        self,
        index: dict[str, dict[str, None]],
        name: str,
        fn: IndexFunc,
        key: str,
        obj: KubeObject,
    ) -> None:
        try:
            values = [*_index_values(fn, obj)]
        except Exception:  # already counted when the object was added
            return
        for v in values:
            bucket = index.get(v)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del index[v]

    def _reindex(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        indices = self._c.indices
        if old is None or new is None:  # add or delete: namespace can change only then
            # never `new or old`: a KubeObject's truth value is its length (a full decode)
            ns = new.namespace if new is not None else old.namespace  # type: ignore[union-attr]
            if ns:
                nsidx = indices[NAMESPACE_INDEX]
                if new is not None:
                    bucket = nsidx.get(ns)
                    if bucket is None:
                        nsidx[ns] = bucket = {}
                    bucket[key] = None
                else:
                    bucket = nsidx.get(ns)
                    if bucket is not None:
                        bucket.pop(key, None)
                        if not bucket:
                            del nsidx[ns]
        for name, fn in self._indexers.items():
            index = indices[name]
            if old is not None:
                self._index_remove(index, name, fn, key, old)
            if new is not None:
                self._index_add(index, name, fn, key, new)

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
        if type not in _EVENT_TYPES:
            raise ValueError(f"not an object event type: {type!r} (bookmarks: use advance())")
        rv = obj._rv
        key = obj._key
        items = self._c.items
        cached = items.get(key)
        deleted = type == "DELETED"
        new_key: tuple[int, str] | None = None
        if self._comparable and not is_comparable(rv):
            self._go_opaque(rv)
        if self._comparable:
            new_key = (len(rv), rv)
            if cached is not None and not deleted and cached.resource_version == rv:
                self._drop("duplicate", type, key, rv)
                return None
            if self._rv_key is not None and new_key <= self._rv_key:
                self._drop("stale", type, key, rv)
                return None
            if cached is not None:
                crv = cached.resource_version
                if not is_comparable(crv):
                    self._go_opaque(crv)
                    new_key = None
                elif (len(crv), crv) >= new_key:
                    self._drop("stale", type, key, rv)
                    return None
        if not self._comparable:
            if deleted:
                duplicate = cached is None
            else:
                duplicate = cached is not None and cached.resource_version == rv
            if duplicate:
                self._drop("duplicate", type, key, rv)
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

    def advance(self, resource_version: str) -> None:
        """A BOOKMARK: every change up to ``resource_version`` has been delivered.

        Moves the cache RV forward only (an older or equal bookmark changes nothing but the progress
        time). An opaque RV switches the store to equality semantics and becomes the cache RV. An
        empty RV is ignored (logged as ``store.empty_bookmark``).
        """
        self._bookmarks += 1
        rv = resource_version
        if not rv:
            _log.warning("store.empty_bookmark")
            return
        if self._comparable and not is_comparable(rv):
            self._go_opaque(rv)
        if not self._comparable:
            self._set_rv(rv, None)
            return
        key = (len(rv), rv)
        if self._rv_key is None or key > self._rv_key:
            self._set_rv(rv, key)
        else:
            self._last_progress = time.monotonic()

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
        nsidx: dict[str, dict[str, None]] = {}
        for obj in objs:  # pass 1: the new contents (a duplicated key: the last one wins)
            key = obj._key
            ns = obj._ns
            new_items[key] = obj
            if ns:
                bucket = nsidx.get(ns)
                if bucket is None:
                    nsidx[ns] = bucket = {}
                bucket[key] = None
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
            if old._rv == obj._rv:
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
        indices: dict[str, dict[str, dict[str, None]]] = {NAMESPACE_INDEX: nsidx}
        for name, fn in self._indexers.items():
            index: dict[str, dict[str, None]] = {}
            for key, obj in new_items.items():
                self._index_add(index, name, fn, key, obj)
            indices[name] = index
        self._c = _Contents(new_items, indices)  # the swap
        self._replaces += 1

        rv = resource_version
        if self._comparable and not is_comparable(rv):
            self._go_opaque(rv)
        if self._comparable:
            key_rv = (len(rv), rv)
            went_back = self._rv_key is not None and key_rv < self._rv_key
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
        else:
            self._set_rv(rv, None)
        if self._key_waiters:
            for key in [*self._key_waiters]:
                self._notify_key(key)
        return deltas
