"""One reflector's part of a store that several reflectors fill: the shards of a sharded informer.

A sharded informer (KEP-5866) runs one reflector per set of hash ranges it took at once, all
behind one :class:`~informer.store.Store`, so that taking or giving up ranges lists and watches
only the change. Each reflector writes through its :class:`StorePartition`, which has what the
reflector needs of a store (``apply_event``, ``advance``, ``replace``, its own cache RV) and
keeps the rules of the store per partition:

* Stale and duplicate events are judged against the partition's RV (its own watch's progress)
  and the cached object's RV. Two partitions' watches interleave in any order, so the store-wide
  RV cannot judge them.
* A list replaces only the partition's own objects: a sharded list is a subset, it never removes
  what another partition holds. A key can move between partitions when an object is deleted and
  recreated under the same name (a new uid, another hash): the newer version wins, by RV.
* The store's RV, the one freshness waits read, is the lowest RV of the partitions (each has
  seen every change of its ranges up to its own RV, so the store has seen every change of all
  of them up to the lowest), and it only moves forward. A partition that has not listed yet
  holds it where it is: a wait for an RV means what it means for an unsharded store.
* Dropping ranges (a partition given up, or narrowed) removes their objects without deltas: they
  were not deleted, this cache only stopped holding them.
* Merging partitions (``Store.merge_partitions``: a sharded informer consolidating its lanes)
  gives their keys to one new partition, which then takes a list of the union (a snapshot at RV
  ``s``, listed aside) as a relist would, per range: a range whose old partition had seen every
  change up to ``r > s`` keeps what it holds and remembers ``r`` (the partition is *ahead* there),
  a range seen up to ``r <= s`` takes the list's objects (an object at the same RV is the cached
  instance, no delta). While a range is ahead, an event of it at or below its ``r`` is a
  duplicate (its old partition applied it) and a list older than ``r`` does not replace it; once
  the partition's own RV reaches ``r``, the range is like any other.

Partitions rely on comparable resource versions (KEP-5504) to order two watches' events of one
key; with opaque RVs each event is applied as it comes (as an unsharded store does).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from informer._log import get_logger
from informer.objects import KubeObject
from informer.resource_version import is_comparable
from informer.shards import ShardField, ShardSet
from informer.store._changes import Delta, Tombstone
from informer.store._indexes import NAMESPACE_INDEX
from informer.store._stats import StoreStats
from informer.store._verdict import DROPPED, EVENT_TYPES, judge_bookmark, judge_event, judge_list

if TYPE_CHECKING:
    from informer.store._compression import _Packer
    from informer.store._store import Store

_log = get_logger("informer.store")


class StorePartition:
    """The writer's view of one partition of a shared ``Store`` (see the module docstring).

    Made by ``Store.partition``; reads go to the store itself.
    """

    def __init__(self, parent: Store, shards: ShardSet, field: ShardField) -> None:
        self._parent = parent
        self._packer: _Packer | None = parent._packer  # the reflector packs with it
        self.shards = shards
        self.field = field
        self._keys: set[str] = set()
        self._rv = ""
        self._rv_key: tuple[int, str] | None = None
        self._comparable = True
        self._stale = self._duplicates = self._applied = self._bookmarks = 0
        self._replaces = self._unknown_deletes = self._regressions = 0
        # ranges whose changes were applied up to a higher RV than the partition's own (from the
        # partitions merged into this one): (ranges, rv_sort_key), pruned as the RV passes them
        self._ahead: builtins.list[tuple[ShardSet, tuple[int, str]]] = []
        self.detached = False  # dropped from the store: writes are ignored

    # -- what the reflector reads ------------------------------------------------------------
    @property
    def resource_version(self) -> str:
        """The partition's RV: every change of its ranges up to it has been applied."""
        return self._rv

    @property
    def comparable(self) -> bool:
        return self._comparable and self._parent._comparable

    @property
    def stats(self) -> StoreStats:
        return StoreStats(
            stale_dropped=self._stale,
            duplicates_dropped=self._duplicates,
            events_applied=self._applied,
            bookmarks=self._bookmarks,
            replaces=self._replaces,
            deletes_of_unknown=self._unknown_deletes,
            rv_regressions=self._regressions,
        )

    def get_by_key(self, key: str) -> KubeObject | None:
        return self._parent._c.items.get(key)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> builtins.list[str]:
        """The keys of the objects this partition holds."""
        return list(self._keys)

    # -- the reflector's writes --------------------------------------------------------------
    def _set_rv(self, rv: str, key: tuple[int, str] | None) -> None:
        self._rv = rv
        self._rv_key = key
        if self._ahead:
            self._ahead = [(s, w) for s, w in self._ahead if key is not None and w > key]
        self._parent._partition_moved(self)

    @property
    def ahead(self) -> builtins.list[tuple[ShardSet, str]]:
        """The ranges whose changes were applied up to a higher RV than the partition's own
        (merged from other partitions), with that RV; empty once its watch caught up."""
        return [(s, w[1]) for s, w in self._ahead]

    def _known_up_to(self, obj: KubeObject) -> tuple[int, str] | None:
        """The highest RV up to which every change of ``obj``'s range was applied, when its
        range is ahead of the partition's RV (else None)."""
        h = obj.shard_hash(self.field)
        best: tuple[int, str] | None = None
        for shards, w in self._ahead:
            if shards.contains(h) and (best is None or w > best):
                best = w
        return best

    def _go_opaque(self, rv: str) -> None:
        self._comparable = False
        self._rv_key = None
        self._ahead = []
        if self._parent._comparable:
            self._parent._go_opaque(rv)

    def _owner_of(self, key: str) -> StorePartition | None:
        if key in self._keys:
            return self
        for other in self._parent._partitions:
            if key in other._keys:
                return other
        return None

    def _take(self, key: str) -> None:
        """The key is this partition's now (it may have been another's: a recreated object)."""
        if key not in self._keys:
            owner = self._owner_of(key)
            if owner is not None:
                owner._keys.discard(key)
            self._keys.add(key)

    def _drop(self, why: Literal["stale", "duplicate"], type: str, key: str, rv: str) -> None:
        if why == "stale":
            self._stale += 1
            self._parent._stale += 1
        else:
            self._duplicates += 1
            self._parent._duplicates += 1
        _log.debug(f"store.{why}_event", type=type, key=key, resource_version=rv)

    def apply_event(self, type: str, obj: KubeObject) -> Delta | None:
        """One watch event of this partition's ranges (see ``Store.apply_event``)."""
        if type not in EVENT_TYPES:
            raise ValueError(f"not an object event type: {type!r} (bookmarks: use advance())")
        if self.detached:
            return None
        parent = self._parent
        lazy, key = obj._lazy, obj._key  # (inlined: an object of a watch holds its RV string)
        rv = lazy if isinstance(lazy, str) else obj.resource_version
        items = parent._c.items
        cached = items.get(key)
        deleted = type == "DELETED"
        known = self._known_up_to(obj) if self._ahead else None
        exact = cached is not None and (bool(self._ahead) or key not in self._keys)
        new_key = judge_event(self, type, key, rv, cached, deleted, known, exact)
        if new_key is DROPPED:
            return None
        if deleted:
            if cached is None:
                self._unknown_deletes += 1
                parent._unknown_deletes += 1
                self._set_rv(rv, new_key)
                return None
            owner = self._owner_of(key)
            if owner is not None:
                owner._keys.discard(key)
            del items[key]
            parent._reindex(key, cached, None)
            delta = Delta("deleted", obj, cached)
        else:
            items[key] = obj
            parent._reindex(key, cached, obj)
            if key not in self._keys:  # (checked here: no call for the common update)
                self._take(key)
            delta = Delta("added", obj, None) if cached is None else Delta("updated", obj, cached)
        self._applied += 1
        parent._applied += 1
        if self._ahead:
            self._set_rv(rv, new_key)
        else:  # what _set_rv does with nothing ahead, without a call on the hot path
            self._rv = rv
            self._rv_key = new_key
            parent._partition_moved(self)
        if parent._key_waiters:
            parent._notify_key(key)
        return delta

    def advance(self, resource_version: str, *, bookmark: bool = True) -> None:
        """A BOOKMARK of this partition's watch (see ``Store.advance``)."""
        if self.detached:
            return
        if bookmark:
            self._bookmarks += 1
            self._parent._bookmarks += 1
        rv = resource_version
        if not rv:
            _log.warning("store.empty_bookmark")
            return
        key = judge_bookmark(self, rv)
        if key is not DROPPED:
            self._set_rv(rv, key)

    def replace(
        self,
        objs: Iterable[KubeObject],
        resource_version: str,
        *,
        is_initial: bool = False,
        ahead_keys: set[str] | None = None,
    ) -> builtins.list[Delta]:
        """Replace this partition's objects with a list of its ranges (see ``Store.replace``).

        Objects other partitions hold are never removed; a listed key another partition holds
        in a newer version (a recreated object) keeps that version.
        """
        if self.detached:
            return []
        parent = self._parent
        items = parent._c.items
        get = items.get
        mine = self._keys
        comparable = self._comparable and parent._comparable
        listed: dict[str, KubeObject] = {}
        for obj in objs:
            listed[obj._key] = obj
        rv = resource_version
        if self._ahead:
            self._keep_ahead(listed, rv, ahead_keys)
        deltas: builtins.list[Delta] = []
        append = deltas.append
        new: builtins.list[tuple[str, KubeObject]] = []  # keys no partition holds
        changed: builtins.list[tuple[str, KubeObject, KubeObject]] = []
        taken: builtins.list[str] = []  # keys another partition held
        for key, obj in list(listed.items()):
            old = get(key)
            if old is None:
                append(Delta("added", obj, None, is_initial, from_list=True))
                new.append((key, obj))
                continue
            if key not in mine:
                if comparable and old is not obj:
                    old_rv, new_rv = old.resource_version, obj.resource_version
                    if is_comparable(old_rv) and (len(old_rv), old_rv) > (len(new_rv), new_rv):
                        del listed[key]  # another partition holds a newer incarnation
                        continue
                taken.append(key)
            if old is obj or old.resource_version == obj.resource_version:
                listed[key] = old  # the same version: keep the cached instance
                continue
            if old.uid != obj.uid:
                append(Delta("deleted", Tombstone(key, old), old, from_list=True))
                append(Delta("added", obj, None, is_initial, from_list=True))
            else:
                append(Delta("updated", obj, old, from_list=True))
            changed.append((key, old, obj))
        gone = [key for key in mine if key not in listed]
        reindex = parent._reindex
        for key in gone:
            old = items.pop(key)
            reindex(key, old, None)
            append(Delta("deleted", Tombstone(key, old), old, from_list=True))
        for key, old, obj in changed:
            items[key] = obj
            reindex(key, old, obj)
        if parent._indexers:
            for key, obj in new:
                items[key] = obj
                reindex(key, None, obj)
        elif (nsidx := parent._c.indices.get(NAMESPACE_INDEX)) is None:
            for key, obj in new:  # no index at all (the namespace one is built when read)
                items[key] = obj
        else:  # only the namespace index: filled here, without a call per object
            for key, obj in new:
                items[key] = obj
                ns = obj._form.namespace
                if ns:
                    bucket = nsidx.get(ns)
                    if bucket is None:
                        nsidx[ns] = bucket = {}
                    bucket[key] = None
        for key in taken:
            self._take(key)
        if parent._packer is not None:
            parent._packer.note_all()
        mine.update(key for key, _ in new)
        self._keys.difference_update(gone)
        self._replaces += 1
        parent._replaces += 1
        key_rv, went_back = judge_list(self, rv)
        if went_back:
            self._regressions += 1
            parent._regressions += 1
            _log.warning(
                "store.rv_went_backwards", resource_version=rv, cache_resource_version=self._rv
            )
        self._set_rv(rv, key_rv)
        if parent._key_waiters:
            for key in [*parent._key_waiters]:
                parent._notify_key(key)
        return deltas

    def _keep_ahead(
        self, listed: dict[str, KubeObject], rv: str, ahead_keys: set[str] | None
    ) -> None:
        """A list at ``rv`` of the partition's ranges: the ranges ahead of ``rv`` keep their
        objects (the list is older there); an older list than the partition's own RV is a
        server gone backwards and replaces everything, as for any partition.

        ``ahead_keys`` (a merge: known from the partitions merged) are the cached keys whose
        objects are in the ranges ahead of ``rv``; an object is then hashed only when its key
        is not cached with the same version or uid (a hash costs ~7 us, and a merge holds the
        event loop: a merge of 50,000 objects would hold it for 0.7 s more).
        """
        if not is_comparable(rv):
            self._ahead = []
            return
        key_rv = (len(rv), rv)
        if self._rv_key is not None and key_rv < self._rv_key:
            self._ahead = []
            return
        kept = ShardSet(r for s, w in self._ahead if w > key_rv for r in s)
        if not kept:
            return
        field = self.field
        items = self._parent._c.items
        mine = self._keys
        if ahead_keys is None:
            ahead_keys = {k for k in mine if kept.contains(items[k].shard_hash(field))}
        for key, obj in list(listed.items()):
            cur = items.get(key) if key in mine else None
            # the same object (the same version: an RV names one write; or the same uid) has
            # the same hash
            if cur is not None and (
                cur.resource_version == obj.resource_version or cur.uid == obj.uid
            ):
                if key in ahead_keys:
                    del listed[key]
            elif kept.contains(obj.shard_hash(field)):
                del listed[key]
        for key in ahead_keys:
            cur = items[key]
            other = listed.get(key)  # another incarnation, of a range the list is newer for
            if other is None:
                listed[key] = cur
                continue
            cur_rv, other_rv = cur.resource_version, other.resource_version
            if (len(cur_rv), cur_rv) > (len(other_rv), other_rv):
                listed[key] = cur

    # -- ranges given up ---------------------------------------------------------------------
    def narrow(self, shards: ShardSet) -> int:
        """Keep only the objects of ``shards`` (a subset of the partition's); how many left.

        No deltas: the objects of the ranges given up were not deleted.
        """
        parent = self._parent
        items = parent._c.items
        field = self.field
        dropped = [k for k in self._keys if not shards.contains(items[k].shard_hash(field))]
        for key in dropped:
            parent._reindex(key, items.pop(key), None)
        self._keys.difference_update(dropped)
        self.shards = shards
        self._ahead = [(s & shards, w) for s, w in self._ahead if s & shards]
        if dropped and parent._key_waiters:
            for key in dropped:
                parent._notify_key(key)
        return len(dropped)
