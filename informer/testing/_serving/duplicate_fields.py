"""Duplicate fields of a JSON request body (``{"a":1,"a":2}``), found as the apiserver's strict
decoder finds them, with their paths (``spec.image``, ``spec.list[0].name``): refused under
``fieldValidation=Strict``, reported under ``Warn``. The decoded body keeps the last value."""

from __future__ import annotations

import json
from typing import Any

from informer.testing._schemas.known_fields import ObjectPairs

__all__ = ["duplicate_paths", "ordered_document"]


def ordered_document(raw: bytes) -> Any | None:
    """``raw`` (JSON) decoded into ``ObjectPairs`` when it names some field twice (the strict
    decoder's view of it); None when it does not, or is not JSON."""
    if raw.count(b'":') < 2:
        return None
    twice = False

    def pairs(items: list[tuple[str, Any]]) -> ObjectPairs:
        nonlocal twice
        obj = ObjectPairs(items)
        twice = twice or len(obj) < len(items)
        return obj

    try:
        doc = json.loads(raw, object_pairs_hook=pairs)
    except ValueError:
        return None
    return doc if twice else None


def duplicate_paths(doc: Any) -> list[str]:
    """The paths of the fields ``doc`` (an ``ordered_document``) names more than once."""
    found: list[str] = []
    _walk(doc, "", found)
    return found


def _walk(node: Any, path: str, found: list[str]) -> None:
    if isinstance(node, ObjectPairs):
        seen: set[str] = set()
        for key, _ in node.pairs:
            if key in seen:
                at = f"{path}.{key}" if path else key
                if at not in found:
                    found.append(at)
            seen.add(key)
        for key, value in node.items():
            _walk(value, f"{path}.{key}" if path else key, found)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _walk(value, f"{path}[{index}]", found)
