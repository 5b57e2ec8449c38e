"""The process-wide memo of recent decodes (``set_decoded_cache_size``), read as far as read.

An object read (``obj["spec"]``, iteration, ``len``, ``in``) is split into its top-level members
in their order in one scan (a compressed object is decompressed for it): a scalar decoded, an
object or array split into its members or items, ``msgspec.Raw`` slices of its JSON; and kept in
the memo (the most recently read objects, 256 by default). Splitting two levels in the one scan
spares a Pod's spec, metadata and status a second scan (and copy) when read: 1.3 us of the 15 us
of a compressed Pod's ``obj["spec"]`` with the memo full. A part is decoded when read, as far as
read: a small value whole, a larger object or array split one level again, its parts decoded as
they are read (``informer.objects._frozen``). JSON the two-level scan refuses (a top-level number
out of range) is split one level, as ``msgspec.Raw`` members: the error is raised when the
member holding it is read, as it is for a deeper one. Reading
``obj["spec"]["containers"][0]["image"]`` of a realistic Pod decodes its path and leaves the
rest as bytes: evicting the entry later frees a few dozen objects, not the hundreds a full decode
of the spec makes (freeing those, cold in the CPU's cache, doubled the time of a read once the
memo was full).

Equality decodes what is left (``thaw``). ``to_dict()`` and ``raw`` never use the memo (a fresh
copy). Every path returns what one full decode returns (same values, same key order).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import msgspec

from informer.objects._forms import ITEM, LINE, PACKED
from informer.objects._frozen import _expand, _Items, _Members, thaw
from informer.objects._wire import _any_decoder

if TYPE_CHECKING:
    from informer.objects._object import KubeObject

_Raw = msgspec.Raw


class _Split(msgspec.Struct, gc=False):
    object: dict[str, msgspec.Raw]


_split_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_split_event_decoder = msgspec.json.Decoder(_Split)

# A member split two levels in one scan: a scalar decoded, an object or array split into its
# members or items (``msgspec.Raw``). The object's largest members (a Pod's spec, metadata and
# status) are then not scanned a second time when read (``_expand`` scans and copies them).
_Value = dict[str, msgspec.Raw] | list[msgspec.Raw] | str | int | float | bool | None


class _DeepSplit(msgspec.Struct, gc=False):
    object: dict[str, _Value]


_deep_decoder = msgspec.json.Decoder(dict[str, _Value])
_deep_event_decoder = msgspec.json.Decoder(_DeepSplit)


class _Decoded:
    """One object's memo entry: its members in order, each decoded as far as read (a member not
    read yet is ``msgspec.Raw``)."""

    __slots__ = ("members", "obj")

    def __init__(self, obj: KubeObject, members: dict[str, Any]) -> None:
        self.obj = obj  # keeps its id from being reused while the entry lives
        self.members = members


# id(obj) -> its entry, least recently used first.
_memo: OrderedDict[int, _Decoded] = OrderedDict()
_memo_size = 256


def set_decoded_cache_size(size: int) -> int:
    """Keep the decodes of at most ``size`` objects (process-wide); returns the previous size.

    0 decodes on every access. Larger values trade memory (up to about 6.5x the JSON per Pod
    read whole) for fewer decodes when a controller reads the same objects repeatedly.
    """
    global _memo_size
    if size < 0:
        raise ValueError("size must be >= 0")
    previous, _memo_size = _memo_size, size
    while len(_memo) > size:
        _memo.popitem(last=False)
    return previous


def _split(obj: KubeObject) -> dict[str, Any]:
    """Every member of the object in order: a scalar decoded, an object or array as a
    ``_Members``/``_Items`` of ``msgspec.Raw`` (or every member ``msgspec.Raw``, when a scalar
    does not decode); a list item's kind and apiVersion filled in, first, as the full decode
    places them."""
    plain, form = obj._state()
    if form.code == PACKED:  # (``obj._plain()``, one call fewer on the read path)
        plain = form.codec.decompress(plain)  # type: ignore[attr-defined]
        form = form.inner  # type: ignore[attr-defined]
    elif type(plain) is not bytes:  # a slice of a list page or a line not packed yet: the
        plain = bytes(plain)  # members' slices must not keep the page alive
    members: dict[str, Any]
    try:
        if form.code == LINE:
            members = _deep_event_decoder.decode(plain).object
        else:
            members = _deep_decoder.decode(plain)
    except msgspec.DecodeError:  # what a skipping scan takes but a scalar's decode refuses (a
        # number out of range): split one level, the error raised when its member is read
        if form.code == LINE:
            members = _split_event_decoder.decode(plain).object
        else:
            members = _split_decoder.decode(plain)
    else:
        value: Any
        for key, value in members.items():  # values replaced, no key added: the iteration holds
            t = type(value)
            if t is dict:
                members[key] = _Members(value)
            elif t is list:
                members[key] = _Items(value)
    if form.code == ITEM:
        k, a = members.get("kind"), members.get("apiVersion")
        kind = (k is not None and _expand_scalar(k)) or form.kind
        api_version = (a is not None and _expand_scalar(a)) or form.api_version
        head = {"kind": kind, "apiVersion": api_version}
        head.update(members)
        head["kind"], head["apiVersion"] = kind, api_version
        members = head
    return members


def _expand_scalar(value: Any) -> Any:
    """A list item's kind or apiVersion as read (decoded by the split, or ``msgspec.Raw``)."""
    return _any_decoder.decode(value) if type(value) is _Raw else value


def members(obj: KubeObject) -> dict[str, Any]:
    """``obj``'s members in order (each decoded as far as read, or ``msgspec.Raw``: read them
    through ``member``), kept in the memo."""
    oid = id(obj)
    entry = _memo.get(oid)
    if entry is not None:
        _memo.move_to_end(oid)
        return entry.members
    split = _split(obj)
    if _memo_size:
        _memo[oid] = _Decoded(obj, split)
        if len(_memo) > _memo_size:
            _memo.popitem(last=False)
    return split


def member(obj: KubeObject, key: str) -> Any:
    """The value of ``obj[key]`` as read (``KeyError`` when absent), kept in the memo."""
    oid = id(obj)  # (``members`` inlined: the read of one member is the hot path)
    entry = _memo.get(oid)
    if entry is not None:
        _memo.move_to_end(oid)
        split = entry.members
    else:
        split = _split(obj)
        if _memo_size:
            _memo[oid] = _Decoded(obj, split)
            if len(_memo) > _memo_size:
                _memo.popitem(last=False)
    value = split[key]
    if type(value) is _Raw:
        value = split[key] = _expand(value)
    return value


def full(obj: KubeObject) -> dict[str, Any]:
    """``obj`` decoded whole (the memo's dict: never to be changed), kept in the memo."""
    split = members(obj)
    for key, value in split.items():  # values replaced, no key added: the iteration holds
        split[key] = thaw(value)
    return split
