"""etcd-like storage: one global revision, live state per resource, and a log of changes.

Every write bumps the revision and appends one ``Change`` (with the previous object, so the state
as of any revision still in history can be rebuilt by undoing later changes). ``compacted`` is
the oldest revision that can still be read or watched from; the log itself is kept a little
longer while an open watch still needs it, so a compaction never silently drops events from a
watch that is already running (as with etcd).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from informer.resource import Resource

Json = dict[str, Any]

_TYPE_KEYS = ("kind", "apiVersion")
_encode = msgspec.json.Encoder().encode
_sorted_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.decode


class Kind:
    """How one registered resource is encoded: typed prefix, list kind, list item form, and
    the order of its keys: ``order`` puts a built-in's in the order its Go types encode them
    (maps sorted); ``sort_keys`` (custom resources, unstructured) sorts every key."""

    __slots__ = ("encode", "list_kind", "order", "prefix", "resource", "sort_keys", "strip_items")

    def __init__(
        self,
        resource: Resource,
        strip_items: bool,
        order: Callable[[Json], Json] | None = None,
        *,
        sort_keys: bool = False,
    ) -> None:
        self.resource = resource
        self.strip_items = strip_items
        self.order = order
        self.sort_keys = sort_keys
        self.encode: Callable[[Any], bytes] = _sorted_encode if sort_keys else _encode
        typemeta = _encode({"kind": resource.kind, "apiVersion": resource.api_version})
        self.prefix = typemeta[:-1] + b","
        self.list_kind = f"{resource.kind}List"

    def canonical(self, data: Json) -> Json:
        """``data`` with its keys in the order this kind's objects are answered with."""
        if self.sort_keys:
            ordered: Json = _decode(_sorted_encode(data))
            return ordered
        return self.order(data) if self.order is not None else data


class StoredObject:
    """One object version: its dict (never mutated once stored) and its encodings."""

    __slots__ = ("_added", "_typed", "data", "item", "kind", "revision")

    def __init__(self, kind: Kind, data: Json, revision: int) -> None:
        self.kind = kind
        if kind.order is not None:
            data = kind.order(data)
        self.data = data
        self.revision = revision
        if kind.strip_items:
            self.item = kind.encode({k: v for k, v in data.items() if k not in _TYPE_KEYS})
            self._typed: bytes | None = None
        else:
            self.item = self._typed = kind.encode(data)
        self._added: bytes | None = None

    @property
    def typed(self) -> bytes:
        """The object as GET and watch events carry it (with kind and apiVersion)."""
        if self._typed is None:
            self._typed = self.kind.prefix + self.item[1:]
        return self._typed

    def added_line(self) -> bytes:
        if self._added is None:
            self._added = b'{"type":"ADDED","object":' + self.typed + b"}\n"
        return self._added

    def labels_view(self) -> Json:
        return self.data

    def with_revision(self, revision: int, rv: str) -> StoredObject:
        """A copy whose ``metadata.resourceVersion`` is ``rv`` (a deleted object's final state)."""
        data = dict(self.data)
        meta = dict(data.get("metadata") or {})
        meta["resourceVersion"] = rv
        data["metadata"] = meta
        return StoredObject(self.kind, data, revision)


class Change:
    """One revision: ``type`` is ADDED, MODIFIED or DELETED; ``prev``/``obj`` around it."""

    __slots__ = (
        "_deleted",
        "_lines",
        "key",
        "obj",
        "prev",
        "resource",
        "revision",
        "rv",
        "time",
        "type",
    )

    def __init__(
        self,
        revision: int,
        rv: str,
        resource: Resource,
        key: str,
        type_: str,
        obj: StoredObject | None,
        prev: StoredObject | None,
        deleted: StoredObject | None = None,
    ) -> None:
        self.revision = revision
        self.rv = rv
        self.resource = resource
        self.key = key
        self.type = type_
        self.obj = obj
        self.prev = prev
        self.time = time.monotonic()
        self._lines: dict[str, bytes] = {}
        self._deleted = deleted

    def deleted_object(self) -> StoredObject:
        """The previous object stamped with this revision (what a DELETED event carries)."""
        if self._deleted is None:
            assert self.prev is not None
            self._deleted = self.prev.with_revision(self.revision, self.rv)
        return self._deleted

    def line(self, event_type: str) -> bytes:
        """The encoded watch line for this change seen as ``event_type`` (encoded once)."""
        line = self._lines.get(event_type)
        if line is None:
            if event_type == "DELETED":
                obj = self.deleted_object()
            else:
                assert self.obj is not None
                obj = self.obj
            if event_type == "ADDED" and self.type == "ADDED":
                line = obj.added_line()
            else:
                line = b'{"type":"' + event_type.encode() + b'","object":' + obj.typed + b"}\n"
            self._lines[event_type] = line
        return line


class Store:
    """Live objects per resource plus the change log; all methods are synchronous."""

    def __init__(self, rv_format: Callable[[int], str]) -> None:
        self.rv = rv_format
        self.revision = 1  # like a fresh etcd: the first write gets revision 2
        self.compacted = 1
        self.kinds: dict[Resource, Kind] = {}
        self.objects: dict[Resource, dict[str, StoredObject]] = {}
        self.log: list[Change] = []
        self.log_base = 2  # revision of log[0]
        self.last_change: dict[Resource, int] = {}
        self._sorted: dict[Resource, list[str] | None] = {}

    def register(
        self,
        resource: Resource,
        strip_items: bool,
        order: Callable[[Json], Json] | None = None,
        *,
        sort_keys: bool = False,
    ) -> None:
        if resource not in self.kinds:
            self.kinds[resource] = Kind(resource, strip_items, order, sort_keys=sort_keys)
            self.objects[resource] = {}
            self._sorted[resource] = None

    # -- writes -------------------------------------------------------------------------------

    def commit(self, resource: Resource, key: str, data: Json | None) -> Change:
        """Write ``data`` (None = delete) at the next revision, stamping its resourceVersion."""
        live = self.objects[resource]
        prev = live.get(key)
        self.revision += 1
        revision = self.revision
        rv = self.rv(revision)
        if data is None:
            assert prev is not None
            del live[key]
            self._sorted[resource] = None
            change = Change(revision, rv, resource, key, "DELETED", None, prev)
            change.deleted_object()
        else:
            data["metadata"]["resourceVersion"] = rv
            obj = StoredObject(self.kinds[resource], data, revision)
            live[key] = obj
            if prev is None:
                self._sorted[resource] = None
            change = Change(revision, rv, resource, key, "MODIFIED" if prev else "ADDED", obj, prev)
        self.log.append(change)
        self.last_change[resource] = revision
        return change

    def seed(self, resource: Resource, key: str, data: Json) -> None:
        """Add an object that exists from the start: at the current revision, with no change in
        the log (a fresh cluster's own objects, such as its namespaces)."""
        data["metadata"]["resourceVersion"] = self.rv(self.revision)
        self.objects[resource][key] = StoredObject(self.kinds[resource], data, self.revision)
        self._sorted[resource] = None

    def bulk_add(self, resource: Resource, items: Iterable[tuple[str, Json]]) -> None:
        """Add many new objects, one revision each, without per-object overhead."""
        live = self.objects[resource]
        kind = self.kinds[resource]
        log = self.log
        for key, data in items:
            self.revision += 1
            revision = self.revision
            rv = self.rv(revision)
            data["metadata"]["resourceVersion"] = rv
            obj = StoredObject(kind, data, revision)
            live[key] = obj
            log.append(Change(revision, rv, resource, key, "ADDED", obj, None))
        self.last_change[resource] = self.revision
        self._sorted[resource] = None

    # -- reads --------------------------------------------------------------------------------

    def change(self, revision: int) -> Change:
        return self.log[revision - self.log_base]

    def changes(self, after: int, upto: int) -> list[Change]:
        """Changes with ``after < revision <= upto`` (all must still be in the log)."""
        base = self.log_base
        return self.log[max(after + 1 - base, 0) : upto + 1 - base]

    def state_at(self, resource: Resource, revision: int) -> dict[str, StoredObject]:
        """Objects of ``resource`` as of ``revision`` (>= compacted); the live dict when current."""
        live = self.objects[resource]
        if revision >= self.revision:
            return live
        state = dict(live)
        for change in reversed(self.changes(revision, self.revision)):
            if change.resource != resource:
                continue
            if change.prev is None:
                state.pop(change.key, None)
            else:
                state[change.key] = change.prev
        return state

    def object_at(self, resource: Resource, key: str, revision: int) -> StoredObject | None:
        """One object as of ``revision`` (>= compacted)."""
        found = self.objects[resource].get(key)
        if revision >= self.revision:
            return found
        for change in reversed(self.changes(revision, self.revision)):
            if change.key == key and change.resource == resource:
                found = change.prev
        return found

    def sorted_keys(self, resource: Resource, state: dict[str, StoredObject]) -> list[str]:
        """Keys of ``state`` in etcd order (cached for the live state)."""
        if state is self.objects[resource]:
            keys = self._sorted[resource]
            if keys is None:
                keys = self._sorted[resource] = sorted(state)
            return keys
        return sorted(state)

    @staticmethod
    def key_range(keys: list[str], prefix: str) -> tuple[int, int]:
        """Index range of ``keys`` (sorted) that start with ``prefix``."""
        if not prefix:
            return 0, len(keys)
        return bisect_left(keys, prefix), bisect_left(keys, prefix + "\U0010ffff")

    # -- history ------------------------------------------------------------------------------

    def compact(self, revision: int) -> None:
        """Make revisions below ``revision`` unavailable (clamped to the current revision)."""
        self.compacted = max(self.compacted, min(revision, self.revision))

    def compact_older_than(self, max_age: float) -> None:
        """Compact away changes older than ``max_age`` seconds."""
        limit = time.monotonic() - max_age
        index = max(self.compacted + 1 - self.log_base, 0)
        newest_old = None
        while index < len(self.log) and self.log[index].time < limit:
            newest_old = self.log[index].revision
            index += 1
        if newest_old is not None:
            self.compact(newest_old)

    def trim(self, keep_after: int) -> None:
        """Drop log entries at or below ``min(compacted, keep_after)``."""
        upto = min(self.compacted, keep_after)
        count = upto + 1 - self.log_base
        if count > 0:
            del self.log[:count]
            self.log_base += count

    def restore(self, revision: int) -> None:
        """Go back to ``revision`` as a restored etcd snapshot would; history restarts there."""
        for resource in self.objects:
            state = self.state_at(resource, revision)
            self.objects[resource] = dict(state)
            self._sorted[resource] = None
        del self.log[max(revision + 1 - self.log_base, 0) :]
        self.revision = revision
        self.compacted = revision
        self.last_change = {r: min(v, revision) for r, v in self.last_change.items()}
        self.trim(revision)
