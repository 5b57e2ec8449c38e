"""Catch-up at the start of a run: wait until each informer holds at least what a consistent list
of its selection shows now, so that a new leader with warm caches does not act on caches older
than the previous leader's last writes (it would delete what it does not see yet, or create it
again)."""

from __future__ import annotations

import asyncio
from typing import Any

from informer._log import error_fields
from informer.errors import ApiError, ShardSelectorRejected, StaleCacheError, TransportError
from informer.informer import Informer
from informer.pager import list_all
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
    rv_sort_key,
)

__all__ = ["catch_up"]


async def catch_up(inf: Informer, timeout: float, log: Any) -> None:
    """Until ``inf`` holds at least the state a consistent list of its selection shows now:
    every listed object at its listed RV or newer, none of the cached objects the list no
    longer has. Needs no bookmark, so a quiet resource does not wait. A ``limit=1`` list
    first: when the cache has seen the server's current RV, the full list is skipped.
    Bounded by ``timeout``; fails open (logged)."""
    log = log.bind(resource=inf.resource.group_resource)
    shards = inf.shards
    if shards is not None and not shards:
        return  # a sharded informer holding no range: nothing it could be missing
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        reflector = inf.reflector
        probe = await reflector.transport.list_page(
            inf.resource, namespace=reflector.namespace, limit=1
        )
        if is_comparable(probe.resource_version) and inf.store.is_fresh(probe.resource_version):
            return  # the cache has seen the server's current RV: nothing can be missing
        listed, list_rv = await _list_all(inf)
        newest = max(
            (rv for rv in listed.values() if is_comparable(rv)), key=rv_sort_key, default=None
        )
        if newest is not None:
            await inf.wait_for_resource_version(newest, max(0.0, deadline - loop.time()))
        if not is_comparable(list_rv):
            return
        for obj in inf.store.list():
            rv = obj.resource_version
            if obj.uid in listed or not is_comparable(rv):
                continue
            if compare_resource_versions(rv, list_rv) <= 0:  # existed when listed: gone since
                status = {"kind": "Status", "details": {"name": obj.name, "uid": obj.uid}}
                await inf.wait_for_deletion(status, max(0.0, deadline - loop.time()))
    except StaleCacheError:
        log.warning("controller.catch_up_timeout")
    except (InvalidResourceVersion, ApiError, TransportError) as exc:
        log.warning("controller.catch_up_failed", **error_fields(exc))


async def _list_all(inf: Informer) -> tuple[dict[str, str], str]:
    """uid -> RV of every object in ``inf``'s selection now (a consistent, paginated list), and
    the list's RV.

    A sharded informer's list asks only for its ranges (its reflector's shard selector, on every
    page): at 100,000 objects the rest of the collection is not worth reading, and an object
    outside the ranges would be waited for in vain. A page the server did not filter (no
    ``shardInfo``: gate off, an older server) is filtered here by the same hash, as the
    informer's own lists are (``pager.list_all``); its RV is valid to wait for either way. A
    server that refuses the selector is listed without it, filtered here the same way."""
    reflector = inf.reflector
    selector = reflector.shard_selector
    scope: dict[str, Any] = {
        "namespace": reflector.namespace,
        "label_selector": reflector.label_selector,
        "field_selector": reflector.field_selector,
        "limit": 500,
    }
    try:
        result = await list_all(reflector.transport, inf.resource, shard_selector=selector, **scope)
        items = result.items
    except ShardSelectorRejected:
        if selector is None:
            raise
        result = await list_all(reflector.transport, inf.resource, **scope)
        ranges, field = selector.shard_set, selector.field
        items = [o for o in result.items if ranges.contains(o.shard_hash(field))]
    return {o.uid: o.resource_version for o in items}, result.resource_version
