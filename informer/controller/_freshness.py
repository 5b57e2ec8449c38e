"""Read-your-own-writes for a controller (KEP-5647 "stale controller" mitigation).

While a key is reconciled, the controller sets a context variable naming it; every write the
writes client reports in that context is recorded against the key, for each informer of the
controller that can hold the written object (see ``_scope``: namespace, selectors, or it holds the
object now, so it must see it change or leave): the highest resource version written (KEP-5504
comparison) and the uids deleted. Before the key is reconciled again, ``wait_fresh`` waits,
bounded, until each of those informers has seen that version and no longer holds those uids. If
the bound passes, the caller requeues the key rather than reconcile it on a cache older than its
own last write: this is what prevents the classic duplicate create.

A resource version that is not comparable (an opaque-RV server), or a cache that cannot compare,
fails open: logged once, not waited for. A cache that went backwards (restored server) also fails
open for that write: the write may never appear. An informer whose field selector names a field
other than ``metadata.name``/``metadata.namespace`` is waited for only when it holds the object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from informer.client import WriteRecord
from informer.controller._scope import field_selector_matches, label_selector_matches
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
    """Writes of one key, visible to one informer, not yet known to be in its cache."""

    rv: str | None = None  # the highest RV written
    deleted: dict[str, str] = field(default_factory=dict)  # uid -> name
    # (name, namespace, uid) -> the highest RV written of it: a sharded informer's store waits
    # for the partition that holds the object, not for its lowest partition (a quiet one)
    written: dict[tuple[str, str, str], str] = field(default_factory=dict)


def can_hold(inf: Informer, record: WriteRecord) -> bool:
    """Whether ``inf`` may hold (or must see the change of) the object ``record`` wrote."""
    reflector = inf.reflector
    namespace = record.namespace or ""
    if reflector.namespace and reflector.namespace != namespace:
        return False
    if inf.store.get(record.name, namespace or None) is not None:
        return True  # it holds it: it must see it change, or leave its selector
    if record.deleted:
        return False  # gone, and never cached here
    labels = label_selector_matches(reflector.label_selector, record.labels or {})
    if record.labels is not None and labels is False:
        return False
    fields = field_selector_matches(reflector.field_selector, record.name, namespace)
    return bool(fields)  # unknown field (None): fail open unless it holds the object


class WriteTracker:
    """Records a controller's writes per key and waits until its informers have seen them."""

    def __init__(self, informers: Sequence[Informer], log: Any) -> None:
        self._informers: dict[Resource, list[Informer]] = {}
        for inf in informers:
            group = self._informers.setdefault(inf.resource, [])
            if inf not in group:
                group.append(inf)
        self._log = log
        self._pending: dict[object, dict[Informer, _Pending]] = {}
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
        rv = record.resource_version
        if not record.deleted and rv and not is_comparable(rv):
            self._fail_open("controller.rv_not_comparable", record.resource)
            return
        key = current[1]
        informers = [i for i in self._informers.get(record.resource, ()) if can_hold(i, record)]
        self.recorded += bool(informers)
        for inf in informers:
            pending = self._pending.setdefault(key, {}).setdefault(inf, _Pending())
            if record.deleted:
                if record.uid:
                    pending.deleted[record.uid] = record.name
            elif rv:
                if pending.rv is None or compare_resource_versions(rv, pending.rv) > 0:
                    pending.rv = rv
                obj = (record.name, record.namespace or "", record.uid or "")
                before = pending.written.get(obj)
                if before is None or compare_resource_versions(rv, before) > 0:
                    pending.written[obj] = rv

    async def wait_fresh(self, key: object, timeout: float) -> bool:
        """True when the caches have seen every write of ``key`` (then forgotten), False when
        ``timeout`` passed first (the writes not yet seen stay recorded)."""
        writes = self._pending.get(key)
        if not writes:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for inf, pending in list(writes.items()):
            try:
                if pending.rv is not None and inf.store.partitions:
                    for (name, namespace, uid), rv in pending.written.items():
                        meta = {"name": name, "namespace": namespace, "uid": uid}
                        await inf.store.wait_for_write(
                            {"metadata": {**meta, "resourceVersion": rv}},
                            max(0.0, deadline - loop.time()),
                        )
                elif pending.rv is not None:
                    await inf.wait_for_resource_version(
                        pending.rv, max(0.0, deadline - loop.time())
                    )
                for uid, name in pending.deleted.items():
                    status = {"kind": "Status", "details": {"name": name, "uid": uid}}
                    await inf.wait_for_deletion(status, max(0.0, deadline - loop.time()))
            except CacheWentBackwards:
                self._fail_open("controller.cache_went_backwards", inf.resource)
            except InvalidResourceVersion:  # CacheNotComparable included
                self._fail_open("controller.cache_not_comparable", inf.resource)
            except StaleCacheError:
                return False
            del writes[inf]
        del self._pending[key]
        return True

    def _fail_open(self, event: str, resource: Resource) -> None:
        self.failed_open += 1
        if event not in self._warned:
            self._warned.add(event)
            self._log.warning(event, resource=resource.group_resource)
