"""What a controller reconciles (``Request``), what a reconcile returns (``Result``), and how an
object change becomes requests: the object itself, its controller owner, or a mapping function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from informer.objects import KubeObject
from informer.resource import Resource
from informer.store import Tombstone

__all__ = ["Mapper", "Request", "Result", "controller_owner", "request_for"]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """The key of one reconcile: an object's name and namespace (``""`` when cluster-scoped)."""

    name: str
    namespace: str = ""

    @property
    def key(self) -> str:
        """The store key: ``namespace/name``, or ``name``."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile may return instead of ``None`` (done) or a delay in seconds.

    ``requeue_after``: reconcile again after that many seconds (the backoff is forgotten).
    ``priority``: the priority of that requeue (default: the one the key was taken with).
    """

    requeue_after: float | None = None
    priority: int | None = None


Mapper = Callable[[KubeObject], Iterable[Request]]
"""Maps a changed object (for a delete: its last known state) to the requests to reconcile."""


def object_of(obj: KubeObject | Tombstone) -> KubeObject:
    """The object of a delete notification (a relist's tombstone carries the last known state)."""
    return obj.obj if isinstance(obj, Tombstone) else obj


def request_for(obj: KubeObject) -> Request:
    """The request naming ``obj`` itself."""
    return Request(obj.name, obj.namespace)


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]  # "v1" -> "", "apps/v1" -> "apps"


def controller_owner(obj: KubeObject, owner: Resource) -> Request | None:
    """The request of ``obj``'s controller owner reference when it is of type ``owner`` (same
    group and kind, any version), else None. A namespaced owner is in ``obj``'s namespace."""
    refs: Any = obj.get("metadata", {}).get("ownerReferences") or ()
    for ref in refs:
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        if not (isinstance(api_version, str) and isinstance(name, str) and name):
            return None
        if kind == owner.kind and _group_of(api_version) == owner.group:
            return Request(name, obj.namespace if owner.namespaced else "")
        return None  # one controller reference at most
    return None
