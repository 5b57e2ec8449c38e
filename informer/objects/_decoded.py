"""The process-wide memo of recent decodes (``set_decoded_cache_size``), one member at a time.

An object's top-level members are decoded when read, each once while the object stays in the
memo (the most recently read objects, 256 by default):

* The first member read (``obj["spec"]``) is decoded alone: one pass over the JSON that skips
  the other members (a realistic 8 KB Pod: about 0.55x the instructions of a full decode).
* The next member read, or the first question about the keys (iteration, ``len``, ``in``), splits
  the object into its members in their order (``msgspec.Raw`` slices of its JSON, found in one
  scan); each is decoded when read, the members read before are kept.
* Equality decodes what is left. ``to_dict()`` and ``raw`` never use the memo (a fresh copy).

Every path returns what one full decode returns (same values, same key order). A compressed
object is decompressed once per stay in the memo: its JSON is held while some keys are unknown,
then by the ``Raw`` slices not decoded yet (a fully read entry holds only decoded values, as a
full decode did).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import msgspec

from informer.objects._forms import ITEM, LINE, _Form
from informer.objects._wire import _any_decoder

if TYPE_CHECKING:
    from informer.objects._object import KubeObject

_Raw = msgspec.Raw
_UNSET = msgspec.UNSET


class _Split(msgspec.Struct, gc=False):
    object: dict[str, msgspec.Raw]


_split_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_split_event_decoder = msgspec.json.Decoder(_Split)

# The decoders of one member by name (for an object's JSON, for a watch line), made on first
# use; at most _ONE_NAMES names (a resource has a handful of top-level members).
_one_decoders: dict[str, tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]] = {}
_ONE_NAMES = 64


def _one_decoder(name: str, line: bool) -> msgspec.json.Decoder[Any] | None:
    pair = _one_decoders.get(name)
    if pair is None:
        if len(_one_decoders) >= _ONE_NAMES or type(name) is not str:
            return None
        try:
            one = msgspec.defstruct("_One", [("v", Any, _UNSET)], rename={"v": name}, gc=False)
        except ValueError:  # a name msgspec cannot match ('"', '\\', control characters)
            return None
        event = msgspec.defstruct("_OneEvent", [("object", one)], gc=False)
        pair = _one_decoders[name] = (msgspec.json.Decoder(one), msgspec.json.Decoder(event))
    return pair[1] if line else pair[0]


class _Decoded:
    """One object's memo entry: ``members`` (the members read so far, decoded; once ``source``
    is None every key in order, those not read yet as ``msgspec.Raw``) and ``source`` (its
    uncompressed JSON and form while some keys are unknown, else None)."""

    __slots__ = ("members", "obj", "source")

    def __init__(
        self, obj: KubeObject, members: dict[str, Any], source: tuple[bytes, _Form] | None
    ) -> None:
        self.obj = obj  # keeps its id from being reused while the entry lives
        self.members = members
        self.source = source


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


def _remember(entry: _Decoded) -> _Decoded:
    """Keep ``entry``, dropping the least recently used beyond the memo's size."""
    if _memo_size:
        _memo[id(entry.obj)] = entry
        if len(_memo) > _memo_size:
            _memo.popitem(last=False)
    return entry


def _split(obj: KubeObject, plain: bytes, form: _Form) -> dict[str, Any]:
    """Every member of the object in order, as ``msgspec.Raw`` (a list item's kind and
    apiVersion decoded and filled in, first, as the full decode places them)."""
    if form.code == LINE:
        members: dict[str, Any] = _split_event_decoder.decode(plain).object
    else:
        members = _split_decoder.decode(plain)
    if form.code == ITEM:
        k, a = members.get("kind"), members.get("apiVersion")
        kind = (k is not None and _any_decoder.decode(k)) or form.kind
        api_version = (a is not None and _any_decoder.decode(a)) or form.api_version
        head = {"kind": kind, "apiVersion": api_version}
        head.update(members)
        head["kind"], head["apiVersion"] = kind, api_version
        members = head
    return members


def _all_keys(entry: _Decoded) -> dict[str, Any]:
    """``entry``'s members with every key known (those decoded so far kept)."""
    source = entry.source
    if source is not None:
        members = _split(entry.obj, *source)
        members.update(entry.members)  # each of them is a key of members already
        entry.members = members
        entry.source = None
    return entry.members


def member(obj: KubeObject, key: str) -> Any:
    """The decoded value of ``obj[key]`` (``KeyError`` when absent), kept in the memo."""
    oid = id(obj)
    entry = _memo.get(oid)
    if entry is None:
        plain, form = obj._plain()
        line = form.code == LINE
        one = _one_decoder(key, line)
        if one is not None:  # the first member read: decoded alone
            value = one.decode(plain)
            value = value.object.v if line else value.v
            if form.code == ITEM and key in ("kind", "apiVersion"):
                value = (None if value is _UNSET else value) or (
                    form.kind if key == "kind" else form.api_version
                )
            if value is not _UNSET:
                _remember(_Decoded(obj, {key: value}, (plain, form)))
                return value
        entry = _remember(_Decoded(obj, _split(obj, plain, form), None))
    else:
        _memo.move_to_end(oid)
    members = entry.members
    value = members.get(key, _UNSET)  # never a decoded JSON value
    if value is _UNSET:
        if entry.source is None:
            raise KeyError(key)
        members = _all_keys(entry)  # a second member: split once, decode each member once
        value = members[key]
    if type(value) is _Raw:
        value = members[key] = _any_decoder.decode(value)
    return value


def members(obj: KubeObject) -> dict[str, Any]:
    """``obj``'s keys in order (the values decoded or ``msgspec.Raw``: read them through
    ``member``), kept in the memo."""
    entry = _memo.get(id(obj))
    if entry is None:
        plain, form = obj._plain()
        return _remember(_Decoded(obj, _split(obj, plain, form), None)).members
    _memo.move_to_end(id(obj))
    return _all_keys(entry)


def full(obj: KubeObject) -> dict[str, Any]:
    """``obj`` decoded whole (the memo's dict: never to be changed), kept in the memo."""
    entry = _memo.get(id(obj))
    if entry is None:
        return _remember(_Decoded(obj, obj._decode(), None)).members
    _memo.move_to_end(id(obj))
    if entry.source is not None:  # one member decoded: all of them at once
        entry.members = obj._decode()
        entry.source = None
        return entry.members
    members = entry.members
    for key, value in members.items():
        if type(value) is _Raw:
            members[key] = _any_decoder.decode(value)
    return members
