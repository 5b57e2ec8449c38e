"""Serving one version of a custom resource from the collection stored in another
(``conversion: None``): the answers of the stored collection with ``apiVersion`` rewritten.

Objects of a custom resource are encoded with ``kind`` and ``apiVersion`` first, lists with
their ``<Kind>List`` envelope first, so the rewrite replaces exactly those heads (an object's,
a list's, a watch event's, a bookmark's) and never an ``apiVersion`` inside an object
(owner references, embedded resources)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from informer.testing._storage.store import Kind

__all__ = ["version_view"]

Json = dict[str, Any]
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def version_view(
    stored: Kind, served: Kind, defaults: Callable[[Json], Json] | None = None
) -> Callable[[bytes], bytes] | None:
    """The rewrite of ``stored``'s answers into ``served``'s version (None: the same);
    ``defaults``: the served version's schema defaults, applied to each object read."""
    if stored is served or stored.resource == served.resource:
        return None
    old, new = stored.resource, served.resource
    heads = [
        (
            f'{{"kind":"{kind}","apiVersion":"{old.api_version}"'.encode(),
            f'{{"kind":"{kind}","apiVersion":"{new.api_version}"'.encode(),
        )
        for kind in (old.kind, f"{old.kind}List")
    ]

    def rewrite(body: bytes) -> bytes:
        for before, after in heads:
            body = body.replace(before, after)
        if defaults is not None:
            body = _defaulted(body, defaults)
        return body

    return rewrite


def _defaulted(body: bytes, defaults: Callable[[Json], Json]) -> bytes:
    """An object, list or watch event line with ``defaults`` applied to its objects."""
    doc = _decode(body)
    if not isinstance(doc, dict):
        return body
    newline = body.endswith(b"\n")
    if isinstance(doc.get("items"), list):
        doc["items"] = [defaults(i) if isinstance(i, dict) else i for i in doc["items"]]
    elif "type" in doc and isinstance(doc.get("object"), dict):
        if doc["type"] in ("ADDED", "MODIFIED", "DELETED"):
            doc["object"] = defaults(doc["object"])
    elif "metadata" in doc:
        doc = defaults(doc)
    encoded = _encode(doc)
    return encoded + b"\n" if newline else encoded
