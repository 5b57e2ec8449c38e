"""Read-your-own-writes for a controller (KEP-5647 "stale controller" mitigation).

While a key is reconciled, the controller sets a context variable naming it; every write the
writes client reports in that context is recorded against the key: per resource, the highest
resource version written (KEP-5504 comparison) and the uids deleted. Before the key is reconciled
again, ``wait_fresh`` waits, bounded, until every informer of that resource the controller uses
(and whose namespace covers the write) has seen that version and no longer holds those uids. If
the bound passes, the caller requeues the key rather than reconcile it on a cache older than its
own last write: this is what prevents the classic duplicate create.

A resource version that is not comparable (an opaque-RV server), or a cache that cannot compare,
fails open: logged once, not waited for. A cache that went backwards (restored server) also fails
open for that write: the write may never appear.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from informer.client import WriteRecord
from informer.errors import StaleCacheError
from informer.informer import Informer
from informer.resource import Resource
from informer.resource_version import (
    InvalidResourceVersion,
    compare_resource_versions,
    is_comparable,
)
from informer.store import CacheWentBackwards

__all__ = ["WriteTracker", "reconciling"]


reconciling: ContextVar[tuple[object, object] | None] = ContextVar(
    "informer_reconciling", default=None
)
"""(tracker, key) while a controller reconciles ``key``: the attribution of writes."""


@dataclass(slots=True)
class _Pending:
    """Writes of one key to one resource not yet known to be in the caches."""

    rv: str | None = None  # the highest RV written
    namespaces: set[str] = field(default_factory=set)  # where ("" for cluster-scoped)
    deleted: dict[str, tuple[str, str]] = field(default_factory=dict)  # uid -> (name, namespace)


class WriteTracker:
    """Records a controller's writes per key and waits until its informers have seen them."""

    def __init__(self, informers: Sequence[Informer], log: Any) -> None:
        self._informers: dict[Resource, list[Informer]] = {}
        for inf in informers:
            group = self._informers.setdefault(inf.resource, [])
            if inf not in group:
                group.append(inf)
        self._log = log
        self._pending: dict[object, dict[Resource, _Pending]] = {}
        self._warned: set[str] = set()
        self.recorded = 0
        self.failed_open = 0

    def pending(self, key: object) -> bool:
        return key in self._pending

    def forget(self, key: object) -> None:
        self._pending.pop(key, None)

    def observe(self, record: WriteRecord) -> None:
        """The writes client's callback: attribute ``record`` to the key being reconciled."""
        current = reconciling.get()
        if current is None or current[0] is not self:
            return  # not written by one of this controller's reconciles
        if record.resource not in self._informers:
            return  # no cache of ours holds it: nothing to wait for
        key = current[1]
        pending = self._pending.setdefault(key, {}).setdefault(record.resource, _Pending())
        namespace = record.namespace or ""
        self.recorded += 1
        if record.deleted:
            if record.uid:
                pending.deleted[record.uid] = (record.name, namespace)
                pending.namespaces.add(namespace)
            return
        rv = record.resource_version
        if not rv:
            return
        if not is_comparable(rv):
            self._fail_open("controller.rv_not_comparable", record.resource)
            return
        pending.namespaces.add(namespace)
        if pending.rv is None or compare_resource_versions(rv, pending.rv) > 0:
            pending.rv = rv

    async def wait_fresh(self, key: object, timeout: float) -> bool:
        """True when the caches have seen every write of ``key`` (then forgotten), False when
        ``timeout`` passed first (the writes stay recorded)."""
        writes = self._pending.get(key)
        if not writes:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for resource, pending in list(writes.items()):
            for inf in self._informers[resource]:
                scope = inf.reflector.namespace
                if scope and scope not in pending.namespaces:
                    continue  # a namespaced informer does not see writes elsewhere
                try:
                    if pending.rv is not None:
                        await inf.wait_for_resource_version(
                            pending.rv, max(0.0, deadline - loop.time())
                        )
                    for uid, (name, _) in pending.deleted.items():
                        status = {"kind": "Status", "details": {"name": name, "uid": uid}}
                        await inf.wait_for_deletion(status, max(0.0, deadline - loop.time()))
                except CacheWentBackwards:
                    self._fail_open("controller.cache_went_backwards", resource)
                except InvalidResourceVersion:  # CacheNotComparable included
                    self._fail_open("controller.cache_not_comparable", resource)
                except StaleCacheError:
                    return False
            del writes[resource]
        del self._pending[key]
        return True

    def _fail_open(self, event: str, resource: Resource) -> None:
        self.failed_open += 1
        if event not in self._warned:
            self._warned.add(event)
            self._log.warning(event, resource=resource.group_resource)
