"""The fast path of ``DropFields``: cut members out of an object's JSON bytes, after one decode.

For the paths one level deep (``status``) or two (``metadata.managedFields``), one msgspec
decode of a struct built for the paths reads the object's head (kind, apiVersion, name,
namespace, resourceVersion) and captures the value of each member to drop as ``msgspec.Raw``.
Each member is then located in the bytes and cut out with its key and one adjacent comma, and
the rest is joined in one copy: no decode of the members into a dict, no re-encode.

Locating a member must find *that* member, not equal bytes elsewhere (the same key and value
nested in another object, a duplicate key). A ``msgspec.Raw`` decoded from a buffer is a view
into it, so the decode reads a private ``bytearray`` copy and each candidate position is proven
by identity: flip the byte at the candidate value's start and see whether the captured value
sees the flip (a JSON value starts with an ASCII byte, a flipped one never is). The candidate
is the first occurrence of ``"<key>"`` in the object, which must be followed by ``:`` and the
value and preceded by ``,`` or ``{``; what ``msgspec`` captured is the last occurrence of the
key in its parent, so no other plain occurrence of the key exists before it, and a backslash
anywhere before it (outside the other cut values) refuses the fast path, so no escaped spelling
of the key remains either. Anything else (whitespace, escapes, a member not found first, a path
deeper than two) returns None and the caller takes the exact slow path: the result always
decodes to what dropping the members from the decoded object gives.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec

__all__ = ["Cutter", "Head"]

Head = tuple[bytes, str | None, str | None, str, str, str]
"""(JSON without the members, kind, apiVersion, name, namespace, resourceVersion); kind and
apiVersion are None when absent, the metadata strings empty."""

_COMMA, _OPEN, _CLOSE, _COLON, _BACKSLASH = 0x2C, 0x7B, 0x7D, 0x3A, b"\\"
_U = 0x75
_ABSENT = msgspec.Raw()  # a captured value is never empty


class Cutter:
    """Cuts the members at ``tree``'s paths (``{"metadata": {"managedFields": None}}``)."""

    __slots__ = ("_decoder", "_leaves", "_line_decoder", "_one", "_strict")

    def __init__(self, top: type[msgspec.Struct], leaves: list[tuple[attrgetter[Any], bytes, int]]):
        self._decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(top)
        line = msgspec.defstruct(
            "DropLine", [("object", top), ("type", str, "")], gc=False, kw_only=True
        )
        self._line_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(line)
        self._leaves = (
            leaves  # (reads the captured value from the decoded head, b'"<key>"', its length + 1)
        )
        self._one = leaves[0] if len(leaves) == 1 else None
        # a key spelled with an escape other than \uXXXX (of ", \, / or a control character)
        self._strict = any(b"\\" in k or b"/" in k for _, k, _ in leaves)

    @classmethod
    def build(cls, tree: dict[str, Any]) -> Cutter | None:
        """A cutter for ``tree``, or None when a path is deeper than two members."""
        top_fields: list[tuple[str, Any, Any]] = [
            ("kind", str | None, None),
            ("api_version", str | None, None),
        ]
        top_names = {"api_version": "apiVersion"}
        meta_fields: list[tuple[str, Any, Any]] = [
            ("name", str, ""),
            ("namespace", str, ""),
            ("resource_version", str, ""),
        ]
        meta_names = {"resource_version": "resourceVersion"}
        leaves: list[tuple[attrgetter[Any], bytes, int]] = []
        for i, (name, sub) in enumerate(tree.items()):
            if sub is None:
                field = f"drop_{i}"
                top_fields.append((field, msgspec.Raw, _ABSENT))
                top_names[field] = name
                leaves.append((attrgetter(field), *_key(name)))
                continue
            if name in ("kind", "apiVersion") or any(v is not None for v in sub.values()):
                return None  # deeper than two (or through a string of the head): slow path
            parent = "metadata" if name == "metadata" else f"parent_{i}"
            fields, names = (meta_fields, meta_names) if parent == "metadata" else ([], {})
            for j, child in enumerate(sub):
                field = f"drop_{j}"
                fields.append((field, msgspec.Raw, _ABSENT))
                names[field] = child
                leaves.append((attrgetter(f"{parent}.{field}"), *_key(child)))
            if parent != "metadata":
                # absent: no members; null or not an object: ValidationError, the slow path
                struct = msgspec.defstruct(
                    "DropParent", fields, rename=names, frozen=True, gc=False
                )
                top_fields.append((parent, struct, struct()))
                top_names[parent] = name
        meta = msgspec.defstruct("DropMeta", meta_fields, rename=meta_names, frozen=True, gc=False)
        top_fields.append(("metadata", meta, meta()))
        top = msgspec.defstruct("DropHead", top_fields, rename=top_names, gc=False)
        return cls(top, leaves)

    def cut(self, raw: Any, line: bool = False) -> Head | None:
        """``raw`` without the members, and its head; None when the slow path must decide.
        ``line``: ``raw`` is a watch event line, cut in its ``object`` (the line stays one).

        None also for JSON that does not decode to the expected shape (the slow path then
        raises the error, or leaves a member that is not an object alone)."""
        cut = self.cut_typed(raw, line)
        return None if cut is None else cut[1]

    def cut_typed(self, raw: Any, line: bool) -> tuple[str, Head] | None:
        """``cut``, with a watch event line's type (``""`` when absent, or not a ``line``): the
        decode that reads the head for the cache is the one that finds the members."""
        buf = bytearray(raw)
        try:
            head = (self._line_decoder if line else self._decoder).decode(buf)
        except msgspec.DecodeError:
            return None
        type_ = ""
        if line:
            type_, head = head.type, head.object
        meta = head.metadata
        out = (head.kind, head.api_version, meta.name, meta.namespace, meta.resource_version)
        if (one := self._one) is not None:  # one member (DROP_MANAGED_FIELDS): no span list
            value = one[0](head)
            del head, meta  # they view ``buf``: release them before resizing it
            if value:
                span = _locate(buf, value, one[1], one[2])
                del value
                if span is None or (
                    buf.find(_BACKSLASH, 0, span[0]) != -1
                    and _escape_in(buf, 0, span[0], self._strict)
                ):
                    return None
                del buf[span[1] : span[2]]
            return type_, (bytes(buf), *out)
        spans = []
        for get, key, width in self._leaves:
            value = get(head)
            if value:  # else absent
                span = _locate(buf, value, key, width)
                if span is None:
                    return None
                spans.append(span)
        del head, meta, value  # they view ``buf``: release them before resizing it
        if spans:
            if len(spans) > 1:
                spans = _merged(buf, spans)
            done = 0  # no escaped spelling of a key may hide before it (outside cut values)
            for at, _, end in spans:
                if buf.find(_BACKSLASH, done, at) != -1 and _escape_in(buf, done, at, self._strict):
                    return None
                done = end
            for _, start, end in reversed(spans):
                del buf[start:end]
        return type_, (bytes(buf), *out)


def _locate(
    buf: bytearray, value: msgspec.Raw, key: bytes, width: int
) -> tuple[int, int, int] | None:
    """Where the member whose captured value is ``value`` (a view into ``buf``) stands: (key
    position, start and end of the cut with one adjacent comma), or None when it is not the
    first plain occurrence of ``key`` or its neighbours are not plain ``,{}`` (the slow path)."""
    at = buf.find(key)
    start = at + width  # the value's first byte
    end = start + len(value)
    if at < 1 or end >= len(buf) or buf[start - 1] != _COLON:
        return None
    first = buf[start]
    buf[start] = first ^ 0xFF  # not ASCII: no JSON value starts with it
    same = buf.startswith(value, start)  # true only if ``value`` views these very bytes
    buf[start] = first
    if not same:  # equal bytes elsewhere (or none)
        return None
    before, after = buf[at - 1], buf[end]
    if before == _COMMA and (after == _COMMA or after == _CLOSE):
        return at, at - 1, end
    if before == _OPEN and after == _COMMA:
        return at, at, end + 1
    if before == _OPEN and after == _CLOSE:
        return at, at, end
    return None


def _escape_in(buf: bytearray, lo: int, hi: int, strict: bool) -> bool:
    """Whether ``buf[lo:hi]`` holds a ``\\uXXXX`` escape (``strict``: any escape), the only way to
    spell a letter of a key otherwise; ``lo`` is outside any string."""
    at = buf.find(_BACKSLASH, lo, hi)
    while at != -1:
        if strict or buf[at + 1] == _U:
            return True
        at = buf.find(_BACKSLASH, at + 2, hi)  # past the escaped character (maybe a backslash)
    return False


def _merged(buf: bytearray, spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Sorted, with neighbours joined: a member first in its object cuts the comma after it,
    so the member after it, cut too, cuts the comma after itself (if any) instead of that one."""
    spans.sort()
    out = [spans[0]]
    for span in spans[1:]:
        key_at, start, end = out[-1]
        if span[1] < end:  # it starts at the comma already cut
            after = span[2]
            out[-1] = (key_at, start, after + 1 if buf[after] == _COMMA else after)
        else:
            out.append(span)
    return out


def _key(name: str) -> tuple[bytes, int]:
    """The key as a compact encoder writes it (quotes included), and the length of it and the
    colon after it."""
    key = msgspec.json.encode(name)
    return key, len(key) + 1
