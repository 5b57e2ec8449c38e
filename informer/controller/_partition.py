"""The hook through which a controller reconciles only part of its keys (``Controller.partition``,
set by ``informer.ring.Ring.shard``): which requests an object change may queue, whether a
queued key may be reconciled now, and the reconcile call itself (so the partition can wait for,
or cut, the reconciles of a part it gives up). Keys outside the partition are dropped, not
counted as reconciles."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from informer.controller._keys import Request, Result
from informer.objects import KubeObject

if TYPE_CHECKING:
    from informer.informer import Informer

__all__ = ["Partition", "ReconcileCall"]


class ReconcileCall(Protocol):
    def __call__(self, request: Request, /) -> Awaitable[float | Result | None]: ...


class Partition(Protocol):
    def admit(self, source: Informer, obj: KubeObject, request: Request) -> bool:
        """Whether the change of ``obj`` (seen by ``source``) may queue ``request``."""
        ...

    def admits_key(self, request: Request) -> bool:
        """Whether a key taken from the queue may be reconciled now."""
        ...

    def reconcile(
        self, request: Request, reconcile: ReconcileCall
    ) -> Awaitable[float | Result | None]:
        """Run ``reconcile(request)`` (or skip it: None when the key left the partition)."""
        ...
