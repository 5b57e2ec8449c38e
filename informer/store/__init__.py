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

Layout
------
``_changes`` (:class:`Delta`, :class:`Tombstone`), ``_compression`` (:class:`Compression`
and the background packer of compressed objects), ``_freshness`` (:class:`Freshness` and the
errors of freshness questions the cache cannot answer), ``_stats`` (:class:`StoreStats`,
:class:`CacheSize`),
``_indexes`` (the contents record and index maintenance), ``_waiters`` (the freshness questions and
waits), ``_verdict`` (the one rule by which a writer drops an event as stale or a duplicate),
``_store`` (:class:`Store`: reads and the reflector's writes, built on the bases in
``_indexes`` and ``_waiters``), ``_partition`` (:class:`StorePartition`: one sharded
reflector's part of a store).
"""

from informer.store._changes import Delta, Tombstone
from informer.store._compression import Compression
from informer.store._freshness import CacheNotComparable, CacheWentBackwards, Freshness
from informer.store._indexes import NAMESPACE_INDEX, IndexFunc
from informer.store._partition import StorePartition
from informer.store._stats import CacheSize, StoreStats
from informer.store._store import Store

__all__ = [
    "NAMESPACE_INDEX",
    "CacheNotComparable",
    "CacheSize",
    "CacheWentBackwards",
    "Compression",
    "Delta",
    "Freshness",
    "IndexFunc",
    "Store",
    "StorePartition",
    "StoreStats",
    "Tombstone",
]
