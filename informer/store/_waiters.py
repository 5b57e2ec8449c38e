"""The freshness questions and the waits: ``is_fresh``, ``wait_for_resource_version``,
``wait_for_write`` and ``wait_for_deletion``.

:class:`_Waiters` is a base of ``Store``. Waits for a resource version sit in a heap keyed by RV,
woken by the write that moves the cache RV to or past them (``_wake``); waits on one key's object
(read-your-writes without comparable RVs, deletions) sit in a per-key list, checked by the write
that changes that key (``_notify_key``). The rules a caller can rely on are in the
``informer.store`` docstring.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from informer.errors import StaleCacheError
from informer.objects import KubeObject
from informer.resource_version import rv_sort_key
from informer.shards import ShardField, hash_value
from informer.store._freshness import CacheNotComparable
from informer.store._indexes import _Contents, _key_of

if TYPE_CHECKING:
    from informer.store._partition import StorePartition

_COMPACT_MIN = 64

_HeapEntry = tuple[tuple[int, str], int, "asyncio.Future[None]"]
_KeyPredicate = Callable[[KubeObject | None], bool]


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


class _Waiters:
    """A base of ``Store``: the freshness questions, the waits, and the waking of waiters.

    The state it works on is created by ``Store.__init__``: the cache (``_c``, ``_rv``,
    ``_rv_key``, ``_comparable``), the heap of RV waits (``_heap``, ``_heap_dead``, ``_seq``) and
    the per-key waits (``_key_waiters``).
    """

    _c: _Contents
    _ns_index: Callable[[], dict[str, dict[str, None]]]  # ``_Indexes._ns_index``
    _rv: str
    _rv_key: tuple[int, str] | None
    _comparable: bool
    _heap: list[_HeapEntry]
    _heap_dead: int
    _seq: itertools.count[int]
    _key_waiters: dict[str, list[tuple[_KeyPredicate, asyncio.Future[KubeObject | None]]]]
    _partitions: list[StorePartition]
    _holding: bool  # a change that may be undone is under way: no waiter is woken

    def _partition_of(self, namespace: str, uid: str) -> StorePartition | None:
        """The partition whose ranges hold an object of this namespace and uid (a sharded
        store), or None."""
        for part in self._partitions:
            if part.field is ShardField.UID and not uid:
                continue
            value = uid if part.field is ShardField.UID else namespace
            if not part.detached and part.shards.contains(hash_value(value)):
                return part
        return None

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

        Only RVs actually seen count (see the ``informer.store`` docstring): False does not mean
        the cache is behind the server, only that nothing at or beyond ``rv`` has arrived yet.
        Raises ``InvalidResourceVersion`` for a malformed ``rv``, and ``CacheNotComparable`` when
        the store's RVs are opaque and ``rv`` is not exactly the cache RV.
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

        A quiet resource may get no bookmark that would move the cache RV (see the
        ``informer.store`` docstring): always pass a timeout when ``rv`` does not come from a write
        to this resource.
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
        matched by this cache's namespace or selectors. In a sharded store, the RV waited for is
        that of the partition whose ranges hold the object, not the store's (the lowest).

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

        part = self._partition_of(namespace, uid) if self._partitions else None
        if self._comparable and part is not None:
            # a sharded store: the write is of this partition's ranges, and a partition has seen
            # every change of its ranges up to its own RV. The store's RV (the lowest of the
            # partitions) is not waited for: a quiet partition's moves only with a bookmark
            wanted = rv_sort_key(rv)  # raises InvalidResourceVersion

            def seen(_: KubeObject | None) -> bool:
                at = part._rv_key
                return not self._comparable or part.detached or (at is not None and at >= wanted)

            await self._wait_key(key, seen, timeout, rv)
            if self._comparable:
                return same(self._c.items.get(key))
        elif self._comparable:
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
            candidates = [name, *(f"{ns}/{name}" for ns in self._ns_index())]
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
        if not waiters or self._holding:
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
        if current is None or self._holding:
            return
        while heap and heap[0][0] <= current:
            fut = heapq.heappop(heap)[2]
            if fut.done():
                self._heap_dead -= 1
            else:
                fut.set_result(None)
