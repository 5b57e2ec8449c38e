"""A custom resource's structure for server-side apply and managed fields, from its schema.

The apply machinery reads the structure of objects from ``types.TYPES`` / ``types.ROOTS``
(which lists merge by key, which are sets). For a custom resource it comes from the CRD's
schema, as the apiserver's structured-merge-diff builds it: ``x-kubernetes-list-type: map``
lists merge by their ``x-kubernetes-list-map-keys`` (each item owned on its own), ``set`` lists
by value, other lists are atomic; objects with ``properties`` are structs, ``additionalProperties``
maps are granular, ``x-kubernetes-map-type: atomic`` objects are one value. Registered when
the CRD is served (a later CRD of the same name replaces it).
"""

from __future__ import annotations

from typing import Any

from informer.testing._schemas.types import ROOTS, TYPES, Field

__all__ = ["register_schema_types"]

Json = dict[str, Any]


def register_schema_types(group: str, plural: str, schema: Json) -> None:
    """Describe ``plural.group`` objects to the apply machinery from ``schema``."""
    prefix = f"crd:{plural}.{group}"
    root = _struct(schema, prefix)
    root.pop("metadata", None)
    root.pop("apiVersion", None)
    root.pop("kind", None)
    ROOTS[(group, plural)] = root


def _struct(node: Json, name: str) -> dict[str, Field]:
    props = node.get("properties")
    fields: dict[str, Field] = {}
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                fields[key] = _field(sub, f"{name}.{key}")
    return fields


def _type_name(node: Json, name: str) -> str | None:
    """Register ``node``'s struct (or map value struct) under ``name``; its name or None."""
    if isinstance(node.get("properties"), dict) and node["properties"]:
        TYPES[name] = _struct(node, name)
        return name
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        return _type_name(extra, f"{name}.*")
    return None


def _field(node: Json, name: str) -> Field:
    if node.get("type") == "array":
        raw = node.get("items")
        items: Json = raw if isinstance(raw, dict) else {}
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "set":
            return Field(list="set")
        if list_type == "map":
            keys = tuple(str(k) for k in node.get("x-kubernetes-list-map-keys") or [])
            item_type = _type_name(items, f"{name}[]")
            return Field(item_type, "map", keys[0] if keys else "", keys)
        return Field(list="atomic")
    if node.get("type") == "object" or "properties" in node:
        atomic = node.get("x-kubernetes-map-type") == "atomic"
        return Field(_type_name(node, name), atomic=atomic)
    return Field()
