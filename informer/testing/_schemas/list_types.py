"""``x-kubernetes-list-type`` invariants of custom resources (``ValidateListSetsAndMaps``):
a ``set`` holds no value twice, a ``map`` no two items with the same ``x-kubernetes-list-map-keys``
values; the second occurrence is the error (``spec.tags[2]: Duplicate value: "a"``)."""

from __future__ import annotations

import json
from typing import Any

from informer.testing._schemas.go_format import bad_value
from informer.testing._schemas.openapi_validation import FieldError, path_string
from informer.testing._schemas.walk import walk

__all__ = ["list_type_errors"]

Json = dict[str, Any]


def list_type_errors(schema: Any, value: Any) -> list[FieldError]:
    """The duplicate items of every ``set`` and ``map`` list in ``value``."""
    errors: list[FieldError] = []
    for node, item, path in walk(schema, value):
        if isinstance(item, list):
            _duplicates(node, item, path, errors)
    return errors


def _duplicates(schema: Json, value: list[Any], path: list[Any], errors: list[FieldError]) -> None:
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for index, item in enumerate(value):
            if item in seen:
                errors.append(
                    (
                        "FieldValueDuplicate",
                        path_string([*path, index]),
                        f"Duplicate value: {bad_value(item)}",
                    )
                )
            else:
                seen.append(item)
    elif list_type == "map":
        keys = [str(k) for k in schema.get("x-kubernetes-list-map-keys") or []]
        seen_keys: list[str] = []
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key_values = {k: item[k] for k in keys if k in item}
            encoded = json.dumps(key_values, sort_keys=True)
            if encoded in seen_keys:
                errors.append(
                    (
                        "FieldValueDuplicate",
                        path_string([*path, index]),
                        f"Duplicate value: {bad_value(key_values)}",
                    )
                )
            else:
                seen_keys.append(encoded)
