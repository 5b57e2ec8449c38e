"""What ``KubeObject._raw`` holds, and what objects share: its form, kind, apiVersion, namespace.

Every object points at one ``_Form``: how its bytes are held (a plain form: object, list item,
watch line; or a packed one) and the strings that thousands of objects have in common (kind,
apiVersion, namespace). Forms are interned: one per distinct (code, kind, apiVersion,
namespace), or per (plain form, codec) for packed ones, so that each object carries one pointer
instead of three strings' (24 bytes per object less: ``benchmarks/RESULTS.md``), and two objects
of one form compare by identity. A form no object uses any more is dropped from the table when
it grows (namespaces come and go in a long-running process).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from informer.objects._object import KubeObject

_intern = sys.intern

OBJECT = 0  # the object's JSON, kind and apiVersion as they are
ITEM = 1  # a list item's JSON lacking kind and/or apiVersion: the full decode adds them
LINE = 2  # a watch event line; the object is its "object" member
PACKED = 3  # compressed (``_Packed``)
BUSY = 4  # being packed in place: ``_raw`` and the form are changing (``KubeObject._state``)


class Codec(Protocol):
    """A compressor of one informer's objects (``informer.store``'s zstd dictionary codec)."""

    def compress(self, data: bytes) -> bytes: ...
    def decompress(self, data: bytes) -> bytes: ...


class _Form:
    """How ``KubeObject._raw`` is held (``code``), with the object's kind, apiVersion and
    namespace. Interned (``form_of``), compared by identity; not an int or a tuple, so that
    encoding a ``KubeObject`` with msgspec as a struct fails loudly instead of writing its
    private fields (it is a mapping: encode ``obj.raw`` or ``obj.to_dict()``)."""

    __slots__ = ("api_version", "code", "kind", "namespace")

    def __init__(self, code: int, kind: str, api_version: str, namespace: str) -> None:
        self.code = code
        self.kind = kind
        self.api_version = api_version
        self.namespace = namespace


class _Packed(_Form):
    """The form of a compressed object: ``_raw`` is ``inner``'s bytes (an ``OBJECT`` or
    ``ITEM`` form) compressed by ``codec``. One per (inner form, codec), shared by every
    object it packed; an object stays readable with the codec that packed it after a
    retraining made another."""

    __slots__ = ("codec", "inner")

    def __init__(self, inner: _Form, codec: Codec) -> None:
        super().__init__(PACKED, inner.kind, inner.api_version, inner.namespace)
        self.inner = inner
        self.codec = codec


# (code, kind, apiVersion, namespace) -> its form; (id(inner), id(codec)) -> its packed form
_plain: dict[tuple[int, str, str, str], _Form] = {}
_packed: dict[tuple[int, int], _Packed] = {}
_limit = 4096  # prune the tables when they reach this many (then twice what is left)


def form_of(code: int, kind: str, api_version: str, namespace: str) -> _Form:
    """The interned plain form (``code`` one of OBJECT, ITEM, LINE; or BUSY)."""
    t = (code, kind, api_version, namespace)
    form = _plain.get(t)
    if form is None:
        form = _Form(code, _intern(kind), _intern(api_version), _intern(namespace))
        if len(_plain) >= _limit:
            _prune()
        _plain[(code, form.kind, form.api_version, form.namespace)] = form
    return form


def packed_form(inner: _Form, codec: Codec) -> _Packed:
    """The interned form of ``inner``'s objects compressed by ``codec``."""
    t = (id(inner), id(codec))
    form = _packed.get(t)
    if form is None or form.inner is not inner or form.codec is not codec:
        form = _Packed(inner, codec)
        if len(_packed) >= _limit:
            _prune()
        _packed[t] = form
    return form


def _prune() -> None:
    """Drop the forms no object uses (only the table holds them), then allow twice as many.
    (A packed form holds its inner form: packed ones go first.)"""
    global _limit
    for table in (_packed, _plain):
        _drop_unused(table)
    _limit = max(4096, 2 * max(len(_plain), len(_packed)))


def _drop_unused(table: dict[Any, Any]) -> None:
    refs = sys.getrefcount
    probe = {0: _Form(OBJECT, "", "", "")}
    alone = refs(probe[0])  # what a form only its table holds counts, read the same way
    for t in [t for t in list(table) if refs(table[t]) <= alone]:
        del table[t]


class PagePacking(Protocol):
    """What packs a list's objects as they arrive (``informer.store``'s packer): a page built for
    it keeps each new item's slice of the page (no copy) with its uid and labels decoded, and
    ``await packing(objs)`` compresses them and packs them in place before the page is gone
    (in the background while the next pages are decoded: ``await packing.drain()`` before the
    list's objects reach the cache)."""

    labels: dict[tuple[tuple[str, str], ...], dict[str, str]]
    """Equal label sets share one dict (the Pods of a ReplicaSet: about 1 KB per Pod less)."""

    async def __call__(self, objs: list[KubeObject], gathered: Collection[KubeObject] = ()) -> None:
        """Pack ``objs`` (``gathered``: the same list's objects so far)."""

    async def drain(self) -> None:
        """Until every page given is packed (or its objects have their own bytes)."""
