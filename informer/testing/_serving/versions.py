"""Serving one version of a custom resource from the collection stored in another
(``conversion: None``): the answers of the stored collection with ``apiVersion`` rewritten.

Objects of a custom resource are encoded with ``kind`` and ``apiVersion`` first, lists with
their ``<Kind>List`` envelope first, so the rewrite replaces exactly those heads (an object's,
a list's, a watch event's, a bookmark's) and never an ``apiVersion`` inside an object
(owner references, embedded resources)."""

from __future__ import annotations

from collections.abc import Callable

from informer.testing._storage.store import Kind

__all__ = ["version_view"]


def version_view(stored: Kind, served: Kind) -> Callable[[bytes], bytes] | None:
    """The rewrite of ``stored``'s answers into ``served``'s version (None: the same)."""
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
        return body

    return rewrite
