"""Duplicate fields of a JSON request body (``{"a":1,"a":2}``), found as the apiserver's strict
decoder finds them, with their paths (``spec.image``, ``spec.list[0].name``): refused under
``fieldValidation=Strict``, reported under ``Warn``. The decoded body keeps the last value."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["duplicate_fields"]


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers which keys it saw twice."""

    __slots__ = ("twice",)

    def __init__(self) -> None:
        super().__init__()
        self.twice: list[str] = []


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    for key, value in pairs:
        if key in obj and key not in obj.twice:
            obj.twice.append(key)
        obj[key] = value
    return obj


def duplicate_fields(raw: bytes) -> list[str]:
    """The paths of the fields ``raw`` (JSON) names more than once; [] when none or not JSON."""
    if raw.count(b'":') < 2:
        return []
    try:
        doc = json.loads(raw, object_pairs_hook=_pairs)
    except ValueError:
        return []
    found: list[str] = []
    _walk(doc, "", found)
    return found


def _walk(node: Any, path: str, found: list[str]) -> None:
    if isinstance(node, _Object):
        for key in node.twice:
            found.append(f"{path}.{key}" if path else key)
        for key, value in node.items():
            _walk(value, f"{path}.{key}" if path else key, found)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _walk(value, f"{path}[{index}]", found)
