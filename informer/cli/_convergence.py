"""The demo's final check: does every cache hold exactly the server's objects?

The workload stops, the controller drains, the faults are cleared; bookmarks then bring every
cache up to the server's revision, and each cache is compared with the server's objects in its
scope (namespace, label selector): same keys, and for each the same uid, resourceVersion, labels
and data. Anything else is a divergence, reported with a few of its keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from informer.informer import Informer
from informer.resource_version import InvalidResourceVersion
from informer.testing import ApiServer

__all__ = ["CacheCheck", "catch_up", "check_cache"]


@dataclass(frozen=True, slots=True)
class CacheCheck:
    """The comparison of one cache with the server."""

    name: str
    objects: int
    missing: list[str]
    extra: list[str]
    different: list[str]
    cache_rv: str

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.different)

    def line(self) -> str:
        if self.equal:
            return (
                f"OK       {self.name}: {self.objects} objects equal the server's "
                f"(cache RV {self.cache_rv})"
            )
        parts = []
        for what, keys in (
            ("missing", self.missing),
            ("extra", self.extra),
            ("different", self.different),
        ):
            if keys:
                parts.append(f"{len(keys)} {what} (e.g. {', '.join(keys[:3])})")
        return f"DIVERGED {self.name}: " + "; ".join(parts)


def _selected(obj: Mapping[str, Any], selector: str | None) -> bool:
    """Equality selectors (``k=v,k2=v2``), the only ones the demo uses."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (selector or "").split(",")):
        key, _, value = term.partition("=")
        if labels.get(key.strip()) != value.strip():
            return False
    return True


def _essence(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    return (
        meta.get("uid"),
        meta.get("resourceVersion"),
        sorted((meta.get("labels") or {}).items()),
        sorted((obj.get("data") or {}).items()),
        obj.get("spec"),
    )


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def check_cache(server: ApiServer, informer: Informer, name: str) -> CacheCheck:
    """Compare one cache with the server's current objects in its scope."""
    r = informer.reflector
    expected = {
        _key(o): _essence(o)
        for o in server.list_objects(r.resource, r.namespace)
        if _selected(o, r.label_selector)
    }
    cached = {o.key: _essence(o) for o in informer.store.list()}
    return CacheCheck(
        name=name,
        objects=len(cached),
        missing=sorted(expected.keys() - cached.keys()),
        extra=sorted(cached.keys() - expected.keys()),
        different=sorted(k for k in expected.keys() & cached.keys() if expected[k] != cached[k]),
        cache_rv=informer.store.resource_version,
    )


def _caught_up(informer: Informer, rv: str, current: str) -> bool:
    if not informer.has_synced:
        return False
    if not informer.store.comparable:  # opaque RVs: only "exactly the server's RV" can be asked
        return informer.store.resource_version == current
    try:
        return informer.store.is_fresh(rv)
    except InvalidResourceVersion:
        return False


async def catch_up(
    server: ApiServer, informers: list[Informer], revision: int, timeout: float
) -> bool:
    """Bookmark every watch until each cache has seen ``revision`` (or ``timeout``)."""
    rv = server.format_resource_version(revision)
    try:
        async with asyncio.timeout(timeout):
            while not all(
                _caught_up(inf, rv, server.format_resource_version(server.revision))
                for inf in informers
            ):
                server.send_bookmarks(force=True)
                await asyncio.sleep(0.1)
    except TimeoutError:
        return False
    return True
