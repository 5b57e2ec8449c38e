"""Duplicate fields of a JSON request body (``{"a":1,"a":2}``), found as the apiserver's strict
decoder finds them, with their paths (``spec.image``, ``spec.list[0].name``): refused under
``fieldValidation=Strict``, reported under ``Warn``. The decoded body keeps the last value.

A server-side apply body (YAML, or JSON read as YAML) is checked by YAML's strict decoder
instead (``yaml_duplicate_keys``), which names each repeated key by the line of its value."""

from __future__ import annotations

import json
from typing import Any

from informer.testing._schemas.known_fields import ObjectPairs

__all__ = ["duplicate_paths", "ordered_document", "yaml_duplicate_keys"]


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


def yaml_duplicate_keys(raw: bytes) -> list[str]:
    """go-yaml v2's strict complaints about ``raw``: ``line 5: key "image" already set in
    map`` for each key a mapping repeats (the line of the repeated key's value), in the order
    the decoder meets them (a value's own complaints before its key's). Nothing for a body that
    is not YAML (the decoder has refused it already) or names no key twice."""
    import yaml  # PyYAML comes with kubernetes_asyncio

    if raw.count(b":") < 2:
        return []
    try:
        root = yaml.compose(raw, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    found: list[str] = []
    _duplicate_keys(root, found, yaml)
    return found


def _duplicate_keys(node: Any, found: list[str], yaml: Any) -> None:
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _duplicate_keys(item, found, yaml)
    elif isinstance(node, yaml.MappingNode):
        seen: set[tuple[str, str]] = set()
        for key, value in node.value:
            _duplicate_keys(value, found, yaml)
            if not isinstance(key, yaml.ScalarNode):
                continue
            identity = (key.tag, key.value)
            if identity in seen:
                shown = key.value
                if key.tag.endswith(":str"):
                    shown = json.dumps(key.value, ensure_ascii=False)
                found.append(f"line {value.start_mark.line + 1}: key {shown} already set in map")
            seen.add(identity)
