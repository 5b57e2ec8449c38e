"""The cache's contents and the indexes kept over them.

:class:`_Contents` is everything a reader looks at (objects by key, and per index: value -> keys),
swapped as one unit by ``Store.replace``. :class:`_Indexes` is a base of ``Store`` that keeps the
indexes up to date on every change, one object at a time. Indexes hold keys, not objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from informer._log import describe_error, get_logger
from informer.objects import KubeObject

if TYPE_CHECKING:
    from informer.store._compression import _Packer

_log = get_logger("informer.store")

NAMESPACE_INDEX = "namespace"
"""The built-in index: namespace -> keys of the namespaced objects in it. Built on the first read
that needs it (``list(namespace)``, ``by_index``/``index_values`` of it), then kept up to date:
a cache never read by namespace does not pay for it (about 33 bytes per object)."""

IndexFunc = Callable[[KubeObject], Iterable[str]]
"""An index function: the index values of one object (a plain ``str`` counts as one value)."""


class _Contents:
    """Everything a reader looks at, swapped as one unit by ``replace``."""

    __slots__ = ("indices", "items")

    def __init__(
        self, items: dict[str, KubeObject], indices: dict[str, dict[str, dict[str, None]]]
    ) -> None:
        self.items = items
        # index name -> value -> keys (a dict used as an insertion-ordered set); the namespace
        # index only once a read asked for it (``_Indexes._ns_index``)
        self.indices = indices


def _key_of(name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if namespace else name


def _index_values(fn: IndexFunc, obj: KubeObject) -> Iterable[str]:
    values = fn(obj)
    if values is None:
        return ()
    if isinstance(values, str):
        return (values,)
    return values


class _Indexes:
    """A base of ``Store``: adds an object to, and removes it from, the indexes.

    The state it works on is created by ``Store.__init__``.
    """

    _c: _Contents
    _packer: _Packer | None
    _indexers: dict[str, IndexFunc]
    _index_errors: int

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

    def _ns_index(self) -> dict[str, dict[str, None]]:
        """The namespace index, built from the contents on its first use."""
        c = self._c
        nsidx = c.indices.get(NAMESPACE_INDEX)
        if nsidx is None:
            nsidx = {}
            for key, obj in c.items.items():
                ns = obj._form.namespace
                if ns:
                    bucket = nsidx.get(ns)
                    if bucket is None:
                        nsidx[ns] = bucket = {}
                    bucket[key] = None
            c.indices[NAMESPACE_INDEX] = nsidx
        return nsidx

    def _reindex(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if new is not None and self._packer is not None and not new.compressed:
            self._packer.note(key)  # packed later, in the background
        indices = self._c.indices
        nsidx = indices.get(NAMESPACE_INDEX)  # None until read (then no namespace to look up)
        if nsidx is not None and (old is None or new is None):  # namespace changes only then
            # never `new or old`: a KubeObject's truth value is its length (a full decode)
            ns = new._form.namespace if new is not None else old._form.namespace  # type: ignore[union-attr]
            if ns:
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
