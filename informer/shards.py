"""Shards of a collection (KEP-5866): FNV-1a 64 hashes, hash ranges, and the ``shardSelector``.

A v1.36 API server (feature gate ``ShardedListAndWatch``) filters a LIST or WATCH to the objects
whose ``metadata.uid`` (or ``metadata.namespace``) hashes into one of the requested ranges. The
hash is 64-bit FNV-1a over the value's UTF-8 bytes ("" for a cluster-scoped object's namespace);
a range is ``[start, end)`` over ``[0, 2^64)``. Because uid and namespace never change, an object
never moves between shards over its life.

This module is a leaf (it imports nothing of the product), shared by the reflector, the test
server and the controller layer:

* :func:`hash_value` / :func:`object_hash`: the hash a server computes.
* :class:`ShardRange`: one ``[start, end)`` range; :class:`ShardSet`: a normalised union of ranges
  with set operations (union, difference, intersection), for who-holds-what bookkeeping.
* :class:`ShardSelector`: the field and the ranges as written; :func:`format_selector` writes the
  server's canonical spelling, :func:`parse_selector` parses what a server accepts and refuses
  what it refuses, with the server's own message (:class:`InvalidShardSelector`).

Wire contract: ``/work/shared/reference/kep-5866-sharded-list-watch.md``.
"""

from __future__ import annotations

import bisect
import enum
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from informer._shard_parse import ShardSelectorSyntaxError, parse

__all__ = [
    "HASH_SPACE",
    "InvalidShardSelector",
    "ShardField",
    "ShardRange",
    "ShardSelector",
    "ShardSet",
    "format_hash",
    "format_selector",
    "hash_value",
    "object_hash",
    "parse_hash",
    "parse_selector",
]

HASH_SPACE: Final = 1 << 64
"""The size of the hash space; also the exclusive end of the last range."""

_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK: Final = HASH_SPACE - 1

InvalidShardSelector = ShardSelectorSyntaxError
"""A selector a v1.36 server refuses (with a 500 whose message is ``str(error)``).

``why`` is the server's reason, the text after ``invalid shard selector: ``. Also a ValueError.
"""


class ShardField(enum.Enum):
    """The object field a selector hashes (the only two a v1.36 server supports)."""

    UID = "object.metadata.uid"
    NAMESPACE = "object.metadata.namespace"


def hash_value(value: str) -> int:
    """64-bit FNV-1a of ``value``'s UTF-8 bytes, as the server hashes a uid or a namespace."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def object_hash(field: ShardField, metadata: Mapping[str, object]) -> int:
    """The hash of ``metadata``'s uid or namespace (absent or not a string counts as "")."""
    value = metadata.get("uid" if field is ShardField.UID else "namespace", "")
    return hash_value(value if isinstance(value, str) else "")


def format_hash(value: int) -> str:
    """``0x`` + 16 lowercase hex digits (2^64, the end of the space: ``0x10000000000000000``)."""
    if not 0 <= value <= HASH_SPACE:
        raise ValueError(f"hash bound out of range [0, 2^64]: {value}")
    return f"0x{value:016x}"


def parse_hash(text: str) -> int:
    """The value of a canonical bound (``0x`` + 16 lowercase hex digits, or 2^64)."""
    digits = text[2:]
    canonical = len(digits) == 16 or text == "0x10000000000000000"
    if not (text.startswith("0x") and canonical and digits.isascii() and digits == digits.lower()):
        raise ValueError(f"not a canonical hash bound: {text!r}")
    try:
        return int(digits, 16)
    except ValueError:
        raise ValueError(f"not a canonical hash bound: {text!r}") from None


@dataclass(frozen=True, order=True, slots=True)
class ShardRange:
    """The hashes ``start <= h < end``, with ``0 <= start < end <= 2^64``."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (0 <= self.start < self.end <= HASH_SPACE):
            raise ValueError(f"invalid shard range [{self.start:#x}, {self.end:#x})")

    @classmethod
    def full(cls) -> ShardRange:
        """The whole space ``[0, 2^64)``."""
        return cls(0, HASH_SPACE)

    @classmethod
    def split(cls, parts: int) -> tuple[ShardRange, ...]:
        """The space cut into ``parts`` contiguous ranges of (nearly) equal size."""
        if parts < 1:
            raise ValueError(f"parts must be >= 1, got {parts}")
        bounds = [HASH_SPACE * i // parts for i in range(parts + 1)]
        return tuple(cls(a, b) for a, b in itertools.pairwise(bounds))

    def __contains__(self, hash_: object) -> bool:
        return isinstance(hash_, int) and self.start <= hash_ < self.end

    def contains(self, hash_: int) -> bool:
        """True when ``hash_`` is in ``[start, end)``."""
        return self.start <= hash_ < self.end

    @property
    def size(self) -> int:
        """How many hashes the range holds."""
        return self.end - self.start

    @property
    def share(self) -> float:
        """The fraction of the whole space the range holds."""
        return self.size / HASH_SPACE

    def __str__(self) -> str:
        return f"[{format_hash(self.start)}, {format_hash(self.end)})"


class ShardSet:
    """A set of hashes: disjoint, sorted, non-adjacent ranges (adjacent ones are merged).

    Immutable and hashable; two sets holding the same hashes are equal however they were built.
    """

    __slots__ = ("_ranges", "_starts")

    def __init__(self, ranges: Iterable[ShardRange] = ()) -> None:
        merged: list[ShardRange] = []
        for r in sorted(ranges):
            if merged and r.start <= merged[-1].end:
                if r.end > merged[-1].end:
                    merged[-1] = ShardRange(merged[-1].start, r.end)
            else:
                merged.append(r)
        self._ranges: tuple[ShardRange, ...] = tuple(merged)
        self._starts = [r.start for r in merged]

    @classmethod
    def full(cls) -> ShardSet:
        """The whole space."""
        return cls((ShardRange.full(),))

    @property
    def ranges(self) -> tuple[ShardRange, ...]:
        """The normalised ranges, in order."""
        return self._ranges

    def contains(self, hash_: int) -> bool:
        """True when some range holds ``hash_``."""
        i = bisect.bisect_right(self._starts, hash_) - 1
        return i >= 0 and hash_ < self._ranges[i].end

    def __contains__(self, item: object) -> bool:
        if isinstance(item, ShardRange):
            return ShardSet((item,)).issubset(self)
        return isinstance(item, int) and self.contains(item)

    def union(self, other: ShardSet | Iterable[ShardRange]) -> ShardSet:
        """Every hash in either set."""
        theirs = other.ranges if isinstance(other, ShardSet) else tuple(other)
        return ShardSet((*self._ranges, *theirs))

    def intersection(self, other: ShardSet) -> ShardSet:
        """Every hash in both sets."""
        out: list[ShardRange] = []
        a, b = self._ranges, other._ranges
        i = j = 0
        while i < len(a) and j < len(b):
            lo, hi = max(a[i].start, b[j].start), min(a[i].end, b[j].end)
            if lo < hi:
                out.append(ShardRange(lo, hi))
            if a[i].end < b[j].end:
                i += 1
            else:
                j += 1
        return ShardSet(out)

    def difference(self, other: ShardSet) -> ShardSet:
        """Every hash in this set and not in ``other``."""
        return self.intersection(other.complement())

    def complement(self) -> ShardSet:
        """Every hash of the space not in this set."""
        out: list[ShardRange] = []
        at = 0
        for r in self._ranges:
            if r.start > at:
                out.append(ShardRange(at, r.start))
            at = r.end
        if at < HASH_SPACE:
            out.append(ShardRange(at, HASH_SPACE))
        return ShardSet(out)

    def issubset(self, other: ShardSet) -> bool:
        """True when every hash of this set is in ``other``."""
        return not self.difference(other)

    __or__ = union
    __and__ = intersection
    __sub__ = difference

    @property
    def size(self) -> int:
        """How many hashes the set holds."""
        return sum(r.size for r in self._ranges)

    @property
    def share(self) -> float:
        """The fraction of the whole space the set holds."""
        return self.size / HASH_SPACE

    def __iter__(self) -> Iterator[ShardRange]:
        return iter(self._ranges)

    def __len__(self) -> int:
        return len(self._ranges)

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShardSet) and self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash(self._ranges)

    def __repr__(self) -> str:
        return f"ShardSet({', '.join(map(str, self._ranges))})"


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """A ``shardSelector``: one field and its ranges, kept as written (a union).

    ``str()`` is the server's canonical spelling, the value to send as ``shardSelector``.
    """

    field: ShardField
    ranges: tuple[ShardRange, ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise ValueError("a shard selector needs at least one range")

    @classmethod
    def of(
        cls, ranges: ShardSet | Iterable[ShardRange], field: ShardField = ShardField.UID
    ) -> ShardSelector:
        """The selector of ``ranges`` (a ShardSet's normalised ranges, or ranges as given)."""
        return cls(field, tuple(ranges))

    @property
    def shard_set(self) -> ShardSet:
        """The hashes the selector selects."""
        return ShardSet(self.ranges)

    def matches_hash(self, hash_: int) -> bool:
        """True when ``hash_`` is in one of the ranges."""
        return any(r.start <= hash_ < r.end for r in self.ranges)

    def matches(self, metadata: Mapping[str, object]) -> bool:
        """True when the object with this ``metadata`` is selected."""
        return self.matches_hash(object_hash(self.field, metadata))

    def __str__(self) -> str:
        return format_selector(self)


def format_selector(selector: ShardSelector) -> str:
    """The server's canonical spelling, e.g.
    ``shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')``,
    ranges joined by `` || `` in the order given.
    """
    field = selector.field.value
    return " || ".join(
        f"shardRange({field}, '{format_hash(r.start)}', '{format_hash(r.end)}')"
        for r in selector.ranges
    )


def parse_selector(text: str) -> ShardSelector:
    """Parse a ``shardSelector`` value as a v1.36 server does.

    Accepts what the server accepts (double quotes, extra spaces, parentheses) and raises
    :class:`InvalidShardSelector` for what it refuses, with the server's reason as ``why``.
    """
    found = parse(text)
    return ShardSelector(
        ShardField(found[0][0]),
        tuple(ShardRange(parse_hash(start), parse_hash(end)) for _, start, end in found),
    )
