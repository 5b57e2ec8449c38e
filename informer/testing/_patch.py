"""Patch formats a write may come in: JSON merge patch (RFC 7386) and JSON patch (RFC 6902)."""

from __future__ import annotations

from typing import Any

import msgspec

from informer.testing import _status as st

__all__ = ["json_patch", "merge_patch"]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: list[Any]) -> Any:
    """A minimal RFC 6902 JSON patch: add, remove, replace, test."""
    doc = _decode(_encode(target))
    for op in operations:
        if not isinstance(op, dict) or "path" not in op:
            raise st.bad_request("invalid JSON patch operation")
        parts = [p.replace("~1", "/").replace("~0", "~") for p in str(op["path"]).split("/")[1:]]
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1] if parts else ""
        kind = op.get("op")
        try:
            if kind in ("add", "replace"):
                if isinstance(parent, list):
                    index = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(index, op.get("value"))
                    else:
                        parent[index] = op.get("value")
                else:
                    parent[last] = op.get("value")
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind == "test":
                got = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if got != op.get("value"):
                    raise st.StatusError(
                        st.status(
                            422,
                            "Invalid",
                            "the server rejected our request due to an error in our request",
                        )
                    )
            else:
                raise st.bad_request(f"Unexpected kind: {kind}")
        except (KeyError, IndexError, ValueError, TypeError):
            raise st.bad_request(
                f"jsonpatch {kind} operation does not apply: doc is missing path: {op['path']}"
            ) from None
    return doc
