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


def _rejected() -> st.StatusError:
    """The apiserver's answer to a patch that does not apply (``NewGenericServerResponse(422)``):
    the reason is not in the body, only in the server's log."""
    return st.StatusError(
        st.status(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        )
    )


def _decode_key(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _index(key: str, size: int, *, adding: bool = False) -> int:
    """An array index as evanphx/json-patch reads it (negative indices count from the end)."""
    index = int(key)  # ValueError: not an index
    bound = size + 1 if adding else size
    if index >= bound or index < -bound:
        raise IndexError(key)
    return index + bound if index < 0 else index


def _container(doc: Any, path: str) -> tuple[Any, str] | None:
    """The object or array holding the last token of ``path``, and that token (``findObject``):
    None when the path is empty or a parent is missing or not a container."""
    parts = path.split("/")
    if len(parts) < 2:
        return None
    node = doc
    for raw in parts[1:-1]:
        part = _decode_key(raw)
        try:
            if isinstance(node, list):
                node = node[_index(part, len(node))]
            elif isinstance(node, dict):
                node = node.get(part)
            else:
                return None
        except (ValueError, IndexError):
            return None
        if not isinstance(node, (dict, list)):
            return None
    return node, _decode_key(parts[-1])


def _get(container: Any, key: str) -> tuple[bool, Any]:
    if isinstance(container, list):
        return True, container[_index(key, len(container))]
    return key in container, container.get(key)


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, list):
        if key == "-":
            container.append(value)
        else:
            container.insert(_index(key, len(container), adding=True), value)
    else:
        container[key] = value


def json_patch(target: Any, operations: list[Any]) -> Any:
    """RFC 6902 JSON patch as the apiserver applies it (evanphx/json-patch v4): ``add`` needs
    the parent to exist, ``replace`` of a missing object member creates it, ``remove`` of a
    missing path changes nothing; an operation that does not apply is a 422 for the whole
    patch. A patch that is not a list of operations is a 400."""
    doc = _decode(_encode(target))
    for op in operations:
        if not isinstance(op, dict):
            raise st.bad_request("json: cannot unmarshal into Go value of type jsonpatch.Operation")
    for op in operations:
        kind = op.get("op")
        path = op.get("path")
        if not isinstance(path, str):
            raise _rejected()
        try:
            doc = _apply(doc, kind, path, op)
        except (ValueError, IndexError, KeyError, TypeError):
            raise _rejected() from None
    return doc


def _apply(doc: Any, kind: Any, path: str, op: dict[str, Any]) -> Any:
    if kind == "replace" and path == "":
        value = op.get("value")
        if not isinstance(value, (dict, list)):
            raise ValueError("replace operation value must be object or array")
        return value
    if kind == "test" and path == "":
        if doc != op.get("value"):
            raise ValueError("test failed")
        return doc
    if kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise ValueError("missing from")
        found = _container(doc, source)
        if found is None:
            raise KeyError(source)
        holder, key = found
        present, value = _get(holder, key)
        if kind == "move":
            if not present:
                raise KeyError(source)
            if isinstance(holder, list):
                del holder[_index(key, len(holder))]
            else:
                del holder[key]
        else:
            value = _decode(_encode(value))
        target = _container(doc, path)
        if target is None:
            raise KeyError(path)
        _add(target[0], target[1], value)
        return doc
    found = _container(doc, path)
    if kind == "remove":
        # a real v1.36 server answers 200 to a remove of a path that is not there
        if found is None:
            return doc
        holder, key = found
        if isinstance(holder, list):
            try:
                del holder[_index(key, len(holder))]
            except (ValueError, IndexError):
                return doc
        else:
            holder.pop(key, None)
        return doc
    if found is None:
        raise KeyError(path)
    holder, key = found
    if kind == "add":
        _add(holder, key, op.get("value"))
    elif kind == "replace":
        if isinstance(holder, list):
            holder[_index(key, len(holder))] = op.get("value")
        else:
            holder[key] = op.get("value")  # a missing member is created, as evanphx v4 does
    elif kind == "test":
        present, value = _get(holder, key)
        if not present:
            if "value" in op and op["value"] is not None:
                raise ValueError("test failed")
        elif value != op.get("value"):
            raise ValueError("test failed")
    else:
        raise ValueError(f"Unexpected kind: {kind}")
    return doc
