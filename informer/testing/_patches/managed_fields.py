"""Field ownership (``metadata.managedFields``): field sets, their ``FieldsV1`` encoding, and
how a non-apply write (operation ``Update``) changes who owns what.

A field set is a set of paths; a path is a tuple of ``FieldsV1`` elements: ``f:NAME`` (a field or
map key), ``k:{"KEY":VALUE,...}`` (an item of a list merged by keys), ``v:VALUE`` (an item of a
set of primitives). As structured-merge-diff builds them, a set holds the leaves, the items of
keyed lists and sets, free-form maps (labels, data) and their entries, and atomic lists as a
whole; struct fields with children are not members themselves. Identity and server-set metadata
(name, namespace, uid, resourceVersion, generation, creationTimestamp, managedFields, ...) and
``apiVersion``/``kind`` belong to nobody.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from informer.testing._schemas.types import TYPES, Field, root_type

__all__ = [
    "FieldSet",
    "Path",
    "atomic_members",
    "decode_fields",
    "encode_fields",
    "field_set",
    "track_update",
    "value_at",
]

Json = dict[str, Any]
Path = tuple[str, ...]
FieldSet = set[Path]
Struct = dict[str, Field]

_UNOWNED_METADATA: Final = frozenset(
    {
        "name",
        "namespace",
        "generateName",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
_MISSING: Final = object()


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _struct(field: Field | None) -> Struct | None:
    if field is None or field.type is None:
        return None
    return TYPES.get(field.type)


def item_key(item: Any, field: Field) -> str | None:
    """The path element of a keyed-list item (None when it has none of the keys)."""
    if not isinstance(item, dict):
        return None
    keys = {k: item[k] for k in field.list_keys if k in item}
    return f"k:{_json(keys)}" if keys else None


def field_set(obj: Json, group: str, plural: str) -> FieldSet:
    """The fields an object sets (see the module docstring for what is a member)."""
    out: FieldSet = set()
    root = root_type(group, plural)
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _UNOWNED_METADATA}
            for mkey, mvalue in meta.items():
                _walk_field(mvalue, TYPES["ObjectMeta"].get(mkey), ("f:metadata", f"f:{mkey}"), out)
            continue
        _walk_field(value, root.get(key), (f"f:{key}",), out)
    return out


def _walk_field(value: Any, field: Field | None, path: Path, out: FieldSet) -> None:
    """A struct field (or map entry) at ``path``: members are its leaves."""
    if isinstance(value, dict):
        if not value or (field is not None and field.atomic):
            out.add(path)
        elif field is not None and field.free_map:
            out.add(path)  # a map of arbitrary keys is a member itself (".")
            for key, entry in value.items():
                out.add((*path, f"f:{key}"))
                if isinstance(entry, dict | list):
                    _walk_field(entry, None, (*path, f"f:{key}"), out)
        else:
            struct = _struct(field)
            for key, entry in value.items():
                _walk_field(entry, struct.get(key) if struct else None, (*path, f"f:{key}"), out)
    elif isinstance(value, list):
        if field is None or field.list == "atomic" or (field.list == "map" and not field.list_keys):
            out.add(path)
        elif field.list == "set":
            for entry in value:
                out.add((*path, f"v:{_json(entry)}"))
        else:
            struct = _struct(field)
            for entry in value:
                element = item_key(entry, field)
                if element is None:
                    out.add(path)  # an item without its keys: the list can only be atomic
                    continue
                item_path = (*path, element)
                out.add(item_path)
                for key, sub in entry.items():
                    _walk_field(
                        sub, struct.get(key) if struct else None, (*item_path, f"f:{key}"), out
                    )
    else:
        out.add(path)


def atomic_members(obj: Json, group: str, plural: str) -> FieldSet:
    """The members of ``obj`` that are whole objects (``x-kubernetes-map-type: atomic``):
    leaves although their values are maps."""
    out: FieldSet = set()
    root = root_type(group, plural)
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata"):
            _atomic(value, root.get(key), (f"f:{key}",), out)
    return out


def _atomic(value: Any, field: Field | None, path: Path, out: FieldSet) -> None:
    if isinstance(value, dict):
        if field is not None and field.atomic:
            out.add(path)
            return
        if field is not None and field.free_map:
            return
        struct = _struct(field)
        for key, entry in value.items():
            _atomic(entry, struct.get(key) if struct else None, (*path, f"f:{key}"), out)
    elif isinstance(value, list) and field is not None and field.list == "map":
        struct = _struct(field)
        for entry in value:
            element = item_key(entry, field)
            if element is None or not isinstance(entry, dict):
                continue
            for key, sub in entry.items():
                _atomic(sub, struct.get(key) if struct else None, (*path, element, f"f:{key}"), out)


def value_at(obj: Any, path: Path) -> Any:
    """The value at ``path`` in ``obj``, or a private sentinel when absent."""
    node = obj
    for element in path:
        kind, _, text = element.partition(":")
        if kind == "f" and isinstance(node, dict) and text in node:
            node = node[text]
        elif kind == "k" and isinstance(node, list):
            keys = json.loads(text)
            node = next(
                (
                    i
                    for i in node
                    if isinstance(i, dict) and all(i.get(k) == v for k, v in keys.items())
                ),
                _MISSING,
            )
        elif kind == "v" and isinstance(node, list):
            wanted = json.loads(text)
            node = wanted if wanted in node else _MISSING
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def is_missing(value: Any) -> bool:
    return value is _MISSING


def encode_fields(fields: Iterable[Path]) -> Json:
    """``fieldsV1``: nested ``{"f:a": {"f:b": {}}}``; ``".": {}`` marks a member with children."""
    tree: Json = {}
    members = set(fields)
    for path in sorted(members):
        node = tree
        for element in path:
            node = node.setdefault(element, {})

    def mark(node: Json, prefix: Path) -> None:
        for element, child in node.items():
            if element == ".":
                continue
            path = (*prefix, element)
            if child:
                if path in members:
                    child["."] = {}
                mark(child, path)

    mark(tree, ())
    return _sorted_tree(tree)


def _sorted_tree(node: Json) -> Json:
    return {
        k: _sorted_tree(v) for k, v in sorted(node.items(), key=lambda kv: (kv[0] != ".", kv[0]))
    }


def decode_fields(tree: Any, prefix: Path = ()) -> FieldSet:
    """The paths of a ``fieldsV1`` tree."""
    out: FieldSet = set()
    if not isinstance(tree, dict):
        return out
    for element, child in tree.items():
        if element == ".":
            out.add(prefix)
            continue
        path = (*prefix, element)
        if isinstance(child, dict) and child:
            out |= decode_fields(child, path)
        else:
            out.add(path)
    return out


def entry(
    manager: str,
    operation: str,
    api_version: str,
    fields: FieldSet,
    time: str,
    subresource: str = "",
) -> Json:
    """One ``managedFields`` entry (``subresource`` for writes through e.g. ``/status``)."""
    made: Json = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": encode_fields(fields),
    }
    if subresource:
        made["subresource"] = subresource
    return made


def same_entry(existing: Json, manager: str, operation: str, subresource: str) -> bool:
    """Whether ``existing`` is the entry of ``manager``'s ``operation`` through ``subresource``."""
    return (
        existing.get("manager") == manager
        and existing.get("operation") == operation
        and existing.get("subresource", "") == subresource
    )


def changed_fields(
    old: Json | None, new: Json, group: str, plural: str
) -> tuple[FieldSet, FieldSet]:
    """(added or modified, removed) fields from ``old`` to ``new``."""
    new_set = field_set(new, group, plural)
    if old is None:
        return new_set, set()
    old_set = field_set(old, group, plural)
    changed = {
        p
        for p in new_set
        if p not in old_set
        or (not isinstance(value_at(new, p), dict) and value_at(old, p) != value_at(new, p))
    }
    return changed, old_set - new_set


def track_update(
    old: Json | None,
    new: Json,
    manager: str,
    api_version: str,
    group: str,
    plural: str,
    time: str,
    subresource: str = "",
) -> list[Json]:
    """The ``managedFields`` of ``new`` after a non-apply write by ``manager``: it owns what it
    changed, nobody keeps what it changed or removed."""
    entries = list(((old or {}).get("metadata") or {}).get("managedFields") or [])
    changed, removed = changed_fields(old, new, group, plural)
    if not changed and not removed:
        return entries
    result: list[Json] = []
    mine: FieldSet | None = None
    for existing in entries:
        fields = decode_fields(existing.get("fieldsV1"))
        if same_entry(existing, manager, "Update", subresource):
            mine = fields
            continue
        kept = fields - changed - removed
        if kept == fields:
            result.append(existing)
        elif kept:
            result.append({**existing, "fieldsV1": encode_fields(kept)})
    owned = ((mine or set()) | changed) - removed
    if owned:
        result.append(entry(manager, "Update", api_version, owned, time, subresource))
    return result
