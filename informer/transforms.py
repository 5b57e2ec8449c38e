"""Byte-level transforms: drop fields from an object's JSON without decoding the rest.

``DropFields("metadata.managedFields")`` removes those members from each object before it is
cached. It works on the raw JSON. For paths one or two members deep (the usual ones), the decode
that reads the object's head for the cache also captures the members to drop, which are then cut
out of the bytes (``informer._member_cut``); deeper paths and unusual JSON (whitespace, escaped
or duplicate keys) take the exact slow path, which splits the object and its metadata into their
members and re-encodes them. On the benchmark's 6.6 KB Pods (callgrind, instructions per item
built by ``KubeObject._from_list_items``): 61.7k without a transform, 81.7k with
``DROP_MANAGED_FIELDS`` (113.6k on the slow path); a watch line 66.4k, 144.8k trimmed (224k).
A paginated sync of 100,000 of them (``benchmarks/_clients.run_child``, product, sync-list, pages
of 500) took 1.35 s of user CPU without, 1.67 s with it (1.87 s on the slow path), and the cache
holds 130 MB less. ``DROP_MANAGED_FIELDS`` is the one most controllers want (managedFields is
often half of an object's size and few controllers read it).

Pass it as ``ReflectorOptions(transform=DROP_MANAGED_FIELDS)``. A ``DropFields`` is also a plain
dict transform (callable on a dict), so it can be used wherever a transform function is expected;
the reflector recognises it and applies it to the bytes. A transform written as a function on a
dict still works, at the cost of a full decode and re-encode of every object (8.5x-10x the time
of a sync without a transform on 6.6 KB Pods, and 2x the memory: ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from informer._member_cut import Cutter, Head

__all__ = ["DROP_MANAGED_FIELDS", "DropFields"]

_members = msgspec.json.Decoder(dict[str, msgspec.Raw])
_str = msgspec.json.Decoder(str)
_opt_str = msgspec.json.Decoder(str | None)
_encode = msgspec.json.Encoder().encode

# The object's identity and head: the cache keys, compares and routes by these.
_PROTECTED = frozenset(
    {
        ("kind",),
        ("apiVersion",),
        ("metadata",),
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
    }
)


class DropFields:
    """Remove the members at dotted ``paths`` (``"metadata.managedFields"``) from each object.

    A path through a member that is absent or not an object changes nothing. Paths that would
    remove the object's identity (kind, apiVersion, metadata, its name, namespace, uid or
    resourceVersion) are refused with ``ValueError``.
    """

    __slots__ = ("_cutter", "_rest", "_tree", "paths")

    def __init__(self, *paths: str) -> None:
        if not paths:
            raise ValueError("DropFields needs at least one path")
        tree: dict[str, Any] = {}
        for path in paths:
            parts = tuple(path.split("."))
            if not all(parts):
                raise ValueError(f"invalid path {path!r}")
            if parts in _PROTECTED:
                raise ValueError(f"{path!r} is part of the object's identity")
            node = tree
            for part in parts[:-1]:
                child = node.setdefault(part, {})
                if child is None:  # a shorter path already drops this subtree
                    break
                node = child
            else:
                node[parts[-1]] = None  # None: drop this member
        self.paths = paths
        self._tree = tree
        self._rest = {k: v for k, v in tree.items() if k != "metadata"}
        self._cutter = Cutter.build(tree)

    def __repr__(self) -> str:
        return f"DropFields({', '.join(map(repr, self.paths))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DropFields) and self._tree == other._tree

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.paths)))

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied and pickled as its paths (its decoders are built from them)."""
        return (DropFields, self.paths)

    def apply(self, raw: bytes) -> bytes:
        """The object's JSON without the fields (``raw`` itself, as bytes, when none is present).

        Raises ``msgspec.DecodeError`` if ``raw`` is not a JSON object.
        """
        cutter = self._cutter
        if cutter is not None:
            fast = cutter.cut(raw)
            if fast is not None:
                return fast[0]
        out = _drop(raw, self._tree)
        return bytes(raw) if out is None else out

    def apply_with_head(self, raw: Any) -> Head:
        """``apply``, and the head read in the same pass: ``(json, kind, apiVersion, name,
        namespace, resourceVersion)``, kind and apiVersion None when absent, the others "".

        Raises ``msgspec.DecodeError`` unless the object and its metadata are JSON objects
        with strings where the head has them.
        """
        cutter = self._cutter
        if cutter is not None:
            fast = cutter.cut_typed(raw, False)
            if fast is not None:
                return fast[1]
        return self._split(raw)

    def apply_to_line(self, line: bytes) -> bytes | None:
        """A watch event line with the fields dropped from its object, or None when only the
        slow path (``apply`` on the object) can tell."""
        cutter = self._cutter
        if cutter is None:
            return None
        fast = cutter.cut(line, line=True)
        return None if fast is None else fast[0]

    def event_with_head(self, line: bytes) -> tuple[str, Head] | None:
        """A watch event line's type and ``apply_to_line``'s result with the object's head, read
        in the one decode (``apply_with_head`` for lines); None when only the slow path (the
        line decoded, then ``apply`` on its object) can tell."""
        cutter = self._cutter
        if cutter is None:
            return None
        return cutter.cut_typed(line, True)

    def _split(self, raw: Any) -> Head:
        """The slow path of ``apply_with_head``: the object and its metadata split into their
        members (``msgspec.Raw``), the fields dropped, the rest re-encoded."""
        members = _members.decode(raw)
        meta_raw = members.get("metadata")
        meta = {} if meta_raw is None else _members.decode(meta_raw)
        changed = False
        meta_tree = self._tree.get("metadata")
        if meta_tree and _drop_members(meta, meta_tree):
            members["metadata"] = msgspec.Raw(_encode(meta))
            changed = True
        if self._rest and _drop_members(members, self._rest):
            changed = True
        k, a = members.get("kind"), members.get("apiVersion")
        name, ns, rv = meta.get("name"), meta.get("namespace"), meta.get("resourceVersion")
        return (
            _encode(members) if changed else bytes(raw),
            None if k is None else _opt_str.decode(k),
            None if a is None else _opt_str.decode(a),
            "" if name is None else _str.decode(name),
            "" if ns is None else _str.decode(ns),
            "" if rv is None else _str.decode(rv),
        )

    def __call__(self, obj: dict[str, Any]) -> Mapping[str, Any]:
        """The same on a decoded object (a copy; ``obj`` is not changed)."""
        return _drop_dict(obj, self._tree)


DROP_MANAGED_FIELDS = DropFields("metadata.managedFields")
"""Drops ``metadata.managedFields`` (server-side apply bookkeeping) from every object."""


def _drop(raw: Any, tree: dict[str, Any]) -> bytes | None:
    """``raw`` without the members in ``tree``, or None when nothing is removed."""
    members = _members.decode(raw)
    return _encode(members) if _drop_members(members, tree) else None


def _drop_members(members: dict[str, msgspec.Raw], tree: dict[str, Any]) -> bool:
    """Remove the members in ``tree`` from ``members`` (in place); whether anything went."""
    changed = False
    for name, sub in tree.items():
        value = members.get(name)
        if value is None:
            continue
        if sub is None:
            del members[name]
            changed = True
            continue
        try:
            inner = _drop(value, sub)
        except msgspec.ValidationError:  # not an object: nothing to drop inside
            continue
        if inner is not None:
            members[name] = msgspec.Raw(inner)
            changed = True
    return changed


def _drop_dict(obj: dict[str, Any], tree: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    for name, sub in tree.items():
        if name not in out:
            continue
        if sub is None:
            del out[name]
        elif isinstance(out[name], dict):
            out[name] = _drop_dict(out[name], sub)
    return out
