"""Serving one version of a custom resource from the collection stored in another
(``conversion: None``): the answers of the stored collection with ``apiVersion`` rewritten.

Custom resources are answered with every key sorted (unstructured), so ``apiVersion`` is not at
a fixed place of an object (a top-level ``data`` or ``Alpha`` comes before it): the answer (an
object, a list or a watch event line) is decoded, the ``apiVersion`` of its objects and of the
list rewritten (never one inside an object: owner references, embedded resources) and encoded
again with its keys sorted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from informer.testing._storage.store import Kind

__all__ = ["version_view"]

Json = dict[str, Any]
_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.decode


def version_view(
    stored: Kind, served: Kind, defaults: Callable[[Json], Json] | None = None
) -> Callable[[bytes], bytes] | None:
    """The rewrite of ``stored``'s answers into ``served``'s version (None: the same);
    ``defaults``: the served version's schema defaults, applied to each object read."""
    if stored is served or stored.resource == served.resource:
        return None
    old, new = stored.resource.api_version, served.resource.api_version

    def convert(obj: Any) -> Any:
        if not isinstance(obj, dict):
            return obj
        if obj.get("apiVersion") == old:
            obj["apiVersion"] = new
        return defaults(obj) if defaults is not None else obj

    def rewrite(body: bytes) -> bytes:
        doc = _decode(body)
        if not isinstance(doc, dict):
            return body
        if isinstance(doc.get("items"), list):
            if doc.get("apiVersion") == old:
                doc["apiVersion"] = new
            doc["items"] = [convert(item) for item in doc["items"]]
        elif "type" in doc and isinstance(doc.get("object"), dict):
            if doc["type"] == "ERROR":  # a Status: nothing of this version in it
                return body
            if doc["type"] in ("ADDED", "MODIFIED", "DELETED"):
                doc["object"] = convert(doc["object"])
            elif doc["type"] == "BOOKMARK" and doc["object"].get("apiVersion") == old:
                doc["object"]["apiVersion"] = new
            # the watch event's envelope is a struct: type, then object
            encoded = b'{"type":' + _encode(doc["type"]) + b',"object":'
            encoded += _encode(doc["object"]) + b"}"
            return encoded + b"\n" if body.endswith(b"\n") else encoded
        elif "metadata" in doc:
            doc = convert(doc)
        encoded = _encode(doc)
        return encoded + b"\n" if body.endswith(b"\n") else encoded

    return rewrite
