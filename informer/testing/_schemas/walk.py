"""The walk of a value along its structural schema that the per-node validations share.

``walk`` yields every value the schema specifies, parent before children: an object's
``properties`` (in the schema's order), then its other keys by ``additionalProperties``, and an
array's elements by ``items``. A validation that checks one kind of node (an embedded resource,
a ``set`` or ``map`` list) filters the walk for it, so its errors come in document order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["walk"]


def walk(
    schema: Any, value: Any, path: list[Any] | None = None
) -> Iterator[tuple[Any, Any, list[Any]]]:
    """``(schema, value, path)`` of ``value`` and of every value under it that ``schema``
    specifies (a schema that is not a mapping specifies nothing)."""
    if not isinstance(schema, dict):
        return
    path = [] if path is None else path
    yield schema, value, path
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if key in value:
                    yield from walk(sub, value[key], [*path, key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                if not (isinstance(props, dict) and key in props):
                    yield from walk(extra, item, [*path, key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from walk(schema["items"], item, [*path, index])
