"""Read-only views of JSON values, decoded one level at a time as they are read.

A view wraps a decoded ``dict`` or ``list`` (``freeze``) or a *partial* one: ``_Members`` (an
object split into its members, each a ``msgspec.Raw`` slice until read) or ``_Items`` (an
array split into its items). Reading a member or item decodes it then and keeps it in place
(``_expand``): a value of up to ``_SMALL`` bytes whole, a longer object or array split one
level again. So ``obj["spec"]["containers"][0]["image"]`` decodes the members on its path and
nothing else, and the partial tree holds the bytes not read yet, not the hundreds of small
Python objects their decode would make (freeing those, cold in the CPU's cache, was what a
read of a realistic Pod spent most in once the memo of recent decodes was full).

A split copies the slice first (``Raw.copy``): a view holds its own bytes, never a whole page
or decompressed object it was cut from (a kept ``obj["spec"]["containers"]`` holds about its
JSON's length, not the Pod's). The memo's first split (``informer.objects._decoded``) splits the
top-level objects and arrays in the same scan, without a copy: a kept top-level view
(``obj["spec"]``) holds the object's JSON (its own bytes, or the decompressed copy), never a
page.

Whatever was read, a view answers as the full decode would: values, key order, iteration,
``len``, ``in``; equality with dicts and lists, ``repr`` and copies (``KubeObject.from_dict``)
decode what is left (``thaw``, in place). JSON a full decode refuses but a skipping scan takes
(a number out of range, which no apiserver sends) raises ``msgspec.DecodeError`` when the value
holding it is read, not when its top-level member is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import msgspec

from informer.objects._wire import _any_decoder

_Raw = msgspec.Raw
_members_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_items_decoder = msgspec.json.Decoder(list[msgspec.Raw])

_SMALL = 1024
"""Values of at most this many bytes of JSON are decoded whole when read, longer ones split one
level. Each split scans its bytes again (most of a split's instructions); a whole decode makes
every object of the value at once. For a realistic Pod's reads (callgrind, full memo):
256 / 512 / 1024 / 2048 bytes made a reconcile reading ~40 fields 888k / 871k / 801k / 731k
instructions (the full decodes before: 836k), obj["spec"]["containers"][0]["image"] 207k / 207k
/ 208k / 226k (210k), a walk of every value 4.82M / 4.71M / 4.49M / - (4.18M)."""

_OBJECT, _ARRAY = ord("{"), ord("[")


class _Members(dict[str, Any]):
    """A JSON object's members in order, each decoded or (not read yet) ``msgspec.Raw``."""

    __slots__ = ()


class _Items(list[Any]):
    """A JSON array's items, each decoded or (not read yet) ``msgspec.Raw``."""

    __slots__ = ()


def _expand(raw: msgspec.Raw) -> Any:
    """``raw``'s value as read: decoded whole when small (or not an object or array), else
    split one level (its own copy of the bytes)."""
    if len(raw) > _SMALL:
        first = memoryview(raw)[0]  # (a Raw starts at its value: msgspec skips whitespace)
        if first == _OBJECT:
            return _Members(_members_decoder.decode(raw.copy()))
        if first == _ARRAY:
            return _Items(_items_decoder.decode(raw.copy()))
    return _any_decoder.decode(raw)


def expand(value: Any) -> Any:
    """A member's value as read (``msgspec.Raw`` expanded; anything else as it is)."""
    return _expand(value) if type(value) is _Raw else value


def thaw(value: Any) -> Any:
    """``value`` fully decoded: what is left of a partial tree decoded in place (a partial
    object or array stays a ``_Members``/``_Items``: a dict or list equal to the full decode)."""
    t = type(value)
    if t is _Raw:
        return _any_decoder.decode(value)
    if t is _Members:
        for key, v in value.items():  # values replaced, no key added: the iteration holds
            t = type(v)
            if t is _Raw:
                value[key] = _any_decoder.decode(v)
            elif t is _Members or t is _Items:
                thaw(v)
    elif t is _Items:
        for i, v in enumerate(value):
            t = type(v)
            if t is _Raw:
                value[i] = _any_decoder.decode(v)
            elif t is _Members or t is _Items:
                thaw(v)
    return value


class _FrozenDict(Mapping[str, Any]):
    __slots__ = ("_d",)

    def __init__(self, d: dict[str, Any]) -> None:
        self._d = d

    def __getitem__(self, key: str) -> Any:
        d = self._d
        value = d[key]
        if type(value) is _Raw:
            value = d[key] = _expand(value)
        return freeze(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _FrozenDict):
            return bool(thaw(self._d) == thaw(other._d))
        if isinstance(other, dict):
            return bool(thaw(self._d) == other)
        if isinstance(other, Mapping):
            return bool(thaw(self._d) == dict(other.items()))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(thaw(self._d))


class _FrozenList(Sequence[Any]):
    __slots__ = ("_l",)

    def __init__(self, items: list[Any]) -> None:
        self._l = items

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        items = self._l
        if isinstance(index, slice):
            part = items[index]
            return _FrozenList(_Items(part) if type(items) is _Items else part)
        value = items[index]
        if type(value) is _Raw:
            value = items[index] = _expand(value)
        return freeze(value)

    def __iter__(self) -> Iterator[Any]:
        items = self._l
        if type(items) is _Items:
            for i, value in enumerate(items):
                if type(value) is _Raw:
                    items[i] = _expand(value)
        return map(freeze, items)

    def __len__(self) -> int:
        return len(self._l)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _FrozenList):
            return bool(thaw(self._l) == thaw(other._l))
        if isinstance(other, list | tuple):
            return bool(thaw(self._l) == list(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(thaw(self._l))


def freeze(value: Any) -> Any:
    """A read-only view of a decoded JSON value (dicts and lists wrapped lazily)."""
    if isinstance(value, dict):
        return _FrozenDict(value)
    if isinstance(value, list):
        return _FrozenList(value)
    return value
