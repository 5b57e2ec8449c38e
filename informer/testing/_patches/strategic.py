"""Strategic merge patch (``application/strategic-merge-patch+json``) of built-in types.

As apimachinery's ``strategicpatch`` applies it: maps merge recursively and ``null`` deletes;
lists with a ``patchMergeKey`` merge item by item (an item ``{"$patch": "delete", KEY: ...}``
removes one, ``{"$patch": "replace"}`` makes the patch list the whole list); lists of primitives
with the merge strategy are unions; other lists are replaced. Directives: ``$patch``
(replace/delete/merge) on maps, ``$retainKeys`` (keep only the listed keys of the original),
``$setElementOrder/FIELD`` (order of the merged list), ``$deleteFromPrimitiveList/FIELD``.
The structure comes from ``_schemas.types``; custom resources do not support this patch type (415).
"""

from __future__ import annotations

from typing import Any, Final

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._schemas.types import TYPES, Field, root_type

__all__ = ["strategic_merge_patch"]

Json = dict[str, Any]
Struct = dict[str, Field]

_PATCH: Final = "$patch"
_RETAIN: Final = "$retainKeys"
_ORDER: Final = "$setElementOrder/"
_DELETE_FROM: Final = "$deleteFromPrimitiveList/"


class _Deleted:
    """A map removed by ``$patch: delete``."""


_DELETED: Final = _Deleted()


def strategic_merge_patch(resource: Resource, current: Json, patch: Json) -> Json:
    """``current`` with ``patch`` applied; 400 for malformed directives."""
    merged = _merge_map(current, patch, root_type(resource.group, resource.plural))
    if isinstance(merged, _Deleted):
        raise st.bad_request("a strategic merge patch cannot delete the whole object")
    return merged


def _struct(field: Field | None) -> Struct | None:
    if field is None or field.type is None:
        return None
    return TYPES.get(field.type)


def _merge_map(original: Json, patch: Json, struct: Struct | None) -> Json | _Deleted:
    patch = dict(patch)
    directive = patch.pop(_PATCH, None)
    if directive == "delete":
        return _DELETED
    if directive == "replace":
        merged = _merge_map({}, patch, struct)
        return {} if isinstance(merged, _Deleted) else merged
    if directive not in (None, "merge"):
        raise st.bad_request(f"Unknown patch type: {directive}")
    result = dict(original)
    retain = patch.pop(_RETAIN, None)
    if retain is not None:
        if not isinstance(retain, list):
            raise st.bad_request(f"invalid type for {_RETAIN}: expected a list")
        result = {k: v for k, v in result.items() if k in retain}
    orders: Json = {}
    deletions: Json = {}
    for key in [k for k in patch if k.startswith("$")]:
        if key.startswith(_ORDER):
            orders[key[len(_ORDER) :]] = patch.pop(key)
        elif key.startswith(_DELETE_FROM):
            deletions[key[len(_DELETE_FROM) :]] = patch.pop(key)
        else:
            raise st.bad_request(f"unknown directive: {key}")
    for key, values in deletions.items():
        if not isinstance(values, list):
            raise st.bad_request(f"invalid type for {_DELETE_FROM}{key}: expected a list")
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    for key, value in patch.items():
        field = struct.get(key) if struct is not None else None
        old = result.get(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(old if isinstance(old, dict) else {}, value, _struct(field))
            if isinstance(merged, _Deleted):
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(old if isinstance(old, list) else [], value, field)
        else:
            result[key] = value
    for key, order in orders.items():
        if not isinstance(order, list):
            raise st.bad_request(f"invalid type for {_ORDER}{key}: expected a list")
        field = struct.get(key) if struct is not None else None
        merged_list = result.get(key)
        if isinstance(merged_list, list):
            original_list = original.get(key)
            result[key] = _ordered(
                merged_list,
                order,
                original_list if isinstance(original_list, list) else [],
                field.merge_key if field is not None else "",
            )
    return result


def _merge_list(original: list[Any], patch: list[Any], field: Field | None) -> list[Any]:
    if field is None or field.list == "atomic" or (field.list == "map" and not field.merge_key):
        return [_fresh(item, field) for item in patch]
    if field.list == "set":
        merged = list(original)
        for value in patch:
            if value not in merged:
                merged.append(value)
        return merged
    key = field.merge_key
    if any(isinstance(item, dict) and item.get(_PATCH) == "replace" for item in patch):
        return [
            _fresh(item, field)
            for item in patch
            if not (isinstance(item, dict) and item.get(_PATCH) == "replace")
        ]
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise st.bad_request(f"the list {field.merge_key!r} items must be objects")
        if key not in item:
            raise st.bad_request(f"map: {item} does not contain declared merge key: {key}")
        at = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(key) == item[key]
            ),
            None,
        )
        if item.get(_PATCH) == "delete":
            if at is not None:
                del result[at]
            continue
        if at is None:
            result.append(_fresh(item, field))
        else:
            merged_item = _merge_map(result[at], item, _struct(field))
            if isinstance(merged_item, _Deleted):
                del result[at]
            else:
                result[at] = merged_item
    return result


def _fresh(item: Any, field: Field | None) -> Any:
    """A new list item: its directives applied to nothing."""
    if isinstance(item, dict):
        merged = _merge_map({}, item, _struct(field))
        return {} if isinstance(merged, _Deleted) else merged
    return item


def _ordered(merged: list[Any], order: list[Any], original: list[Any], key: str) -> list[Any]:
    """``merged`` in the ``$setElementOrder`` order; items only on the server keep their place
    relative to the original list (apimachinery's normalizeElementOrder + mergeSortedSlice)."""

    def key_of(item: Any) -> Any:
        if key and isinstance(item, dict):
            return item.get(key)
        return item

    wanted = [key_of(item) for item in order]
    server_order = [key_of(item) for item in original]
    patched = sorted(
        (item for item in merged if key_of(item) in wanted), key=lambda i: wanted.index(key_of(i))
    )
    server_only = [item for item in merged if key_of(item) not in wanted]

    def index(item: Any) -> int:
        k = key_of(item)
        return server_order.index(k) if k in server_order else -1

    # mergeSortedSlice(serverOnly, patch): a server-only item goes first only when both are
    # in the original list and it was before; otherwise the patch item does
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patched):
        if i >= len(server_only):
            result.append(patched[j])
            j += 1
        elif j >= len(patched):
            result.append(server_only[i])
            i += 1
        else:
            left, right = index(server_only[i]), index(patched[j])
            if left >= 0 and right >= 0 and left < right:
                result.append(server_only[i])
                i += 1
            else:
                result.append(patched[j])
                j += 1
    return result
