"""Pruning and defaulting of custom resources by their structural schema, as the apiextensions
server does them when it decodes a request body and when it reads from storage.

- ``prune``: fields the schema does not specify are dropped (and named, for
  ``fieldValidation``): everything under a node with ``properties`` that is not a property,
  unless the node has ``x-kubernetes-preserve-unknown-fields: true``; ``additionalProperties``
  maps and array ``items`` are pruned by their own schema; ``apiVersion``, ``kind`` and
  ``metadata`` are kept at the root and in ``x-kubernetes-embedded-resource`` objects, and the
  root's ``metadata`` keeps only ``ObjectMeta`` fields.
- ``default``: a missing property with a ``default`` gets a copy of it (so does a ``null`` one
  unless ``nullable``), top-down, so defaults inside a defaulted value apply too; a ``null``
  property that is not ``nullable`` and has no default is removed.
"""

from __future__ import annotations

import copy
from typing import Any, Final

__all__ = ["OBJECT_META_FIELDS", "OBJECT_META_ORDER", "default", "prune"]

Json = dict[str, Any]

OBJECT_META_ORDER: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
"""ObjectMeta's fields in the order its Go struct declares them (k8s.io/apimachinery types.go)."""

OBJECT_META_FIELDS: Final = frozenset(OBJECT_META_ORDER)
_TYPE_META: Final = ("apiVersion", "kind", "metadata")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune(obj: Json, schema: Json) -> tuple[Json, list[str]]:
    """``obj`` without the fields ``schema`` does not specify, and their paths."""
    unknown: list[str] = []
    result = _prune_object(obj, schema, "", unknown, root=True)
    return result, unknown


def _prune_object(obj: Json, schema: Json, path: str, unknown: list[str], root: bool) -> Json:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
    result: Json = {}
    for key, value in obj.items():
        child_path = _join(path, key)
        if key in props and not (root and key in _TYPE_META):
            result[key] = _prune_value(value, props[key], child_path, unknown)
        elif embedded and key in _TYPE_META:
            if key == "metadata" and root and isinstance(value, dict):
                meta = {}
                for meta_key, meta_value in value.items():
                    if meta_key in OBJECT_META_FIELDS:
                        meta[meta_key] = meta_value
                    else:
                        unknown.append(f"metadata.{meta_key}")
                result[key] = meta
            else:
                result[key] = value
        elif isinstance(extra, dict):
            result[key] = _prune_value(value, extra, child_path, unknown)
        elif preserve or extra is True or (not props and extra is None and not _typed(schema)):
            result[key] = value
        else:
            unknown.append(child_path)
    return result


def _typed(schema: Json) -> bool:
    """Whether a node says what its object holds (else it is an opaque value)."""
    return bool(schema.get("type")) or bool(schema.get("properties"))


def _prune_value(value: Any, schema: Any, path: str, unknown: list[str]) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
            if not schema.get("additionalProperties") and not schema.get(
                "x-kubernetes-embedded-resource"
            ):
                return value
        if schema.get("type") not in (None, "object"):
            return value
        return _prune_object(value, schema, path, unknown, root=False)
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return value
        return [_prune_value(v, items, f"{path}[{i}]", unknown) for i, v in enumerate(value)]
    return value


def default(obj: Any, schema: Any) -> Any:
    """``obj`` (changed in place) with the defaults of ``schema`` applied."""
    if not isinstance(schema, dict):
        return obj
    if isinstance(obj, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if not isinstance(sub, dict):
                    continue
                if key not in obj or (obj[key] is None and not sub.get("nullable")):
                    if "default" in sub:
                        obj[key] = copy.deepcopy(sub["default"])
                    elif key in obj:
                        del obj[key]  # a null the schema does not allow: pruned
            for key, sub in props.items():
                if key in obj:
                    obj[key] = default(obj[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in list(obj):
                if isinstance(props, dict) and key in props:
                    continue
                obj[key] = default(obj[key], extra)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(obj):
                if item is None and "default" in items and not items.get("nullable"):
                    obj[index] = copy.deepcopy(items["default"])
                obj[index] = default(obj[index], items)
    return obj
