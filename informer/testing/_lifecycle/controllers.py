"""The control-plane loops a test server needs and envtest lacks, run synchronously after writes.

A real cluster runs these in kube-controller-manager and the apiextensions server; here they
react to every committed change, to completion, before the write's HTTP answer is sent, so a
test observes their effects deterministically (as watch events, in order):

- **garbage collector** (``attemptToDeleteItem``): when an owner is deleted or enters foreground
  deletion, each dependent (``ownerReferences`` naming its uid) is classified by its owners:
  *solid* (present, not waiting for its dependents), *dangling* (gone, by uid) and *waiting*
  (being deleted with ``foregroundDeletion``). A dependent with a solid owner stays and loses
  its references to dangling and waiting owners; one without is deleted (Foreground when a
  waiting owner needs it and it has dependents itself, else by its own ``orphan`` /
  ``foregroundDeletion`` finalizer, else Background). An owner in foreground deletion goes once
  no dependent that blocks it (``blockOwnerDeletion: true``) is left; with ``Orphan`` (finalizer
  ``orphan``) its dependents lose their reference to it, then it goes. An object created over
  HTTP is classified at once (the Python API's creates are test setup and may name owners that
  were never created).
- **namespace controller**: a namespace being deleted (``deletionTimestamp``, phase
  Terminating, ``kubernetes`` in ``spec.finalizers``) has all its content deleted; once none is
  left, the ``kubernetes`` finalizer is removed and the namespace goes.
- **service account controller**: every active namespace has its ``default`` ServiceAccount (a
  cluster's pods run as it; the server's fresh namespaces have theirs from the start), created
  again at once when deleted.
- **root CA publisher** (``root_ca``, with ``ApiServer(root_ca_configmaps=True)`` and in
  ``informer serve``): every active namespace has its ``kube-root-ca.crt`` ConfigMap, created
  again when deleted and put back when changed.
- **CRD cleanup**: a CustomResourceDefinition being deleted (finalizer
  ``customresourcecleanup.apiextensions.k8s.io``) has all its objects deleted, then goes; its
  resources stop being served.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Literal, Protocol

from informer.resource import CONFIGMAPS, NAMESPACES, SERVICEACCOUNTS, Resource
from informer.testing import _status as st
from informer.testing._catalog.specs import CRDS
from informer.testing._lifecycle.finalizers import (
    CRD_CLEANUP,
    FOREGROUND,
    NAMESPACE_FINALIZER,
    ORPHAN,
)
from informer.testing._lifecycle.root_ca import ROOT_CA_CONFIGMAP, RootCAPublisher
from informer.testing._storage.store import Change, Store

__all__ = ["Cluster", "Controllers", "default_service_account"]

Json = dict[str, Any]
_ROOT_CA_SUFFIX = f"/{ROOT_CA_CONFIGMAP}"


def default_service_account(namespace: str) -> Json:
    """The ``default`` ServiceAccount every namespace has."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": namespace},
    }


class Cluster(Protocol):
    """What the controllers need of the registry they run on (the registry satisfies it; this
    package does not import it): its storage, owner lookups, and the writes a controller makes,
    under the same rules as any other write."""

    @property
    def store(self) -> Store: ...

    def resource_of(self, api_version: str, kind: str) -> Resource | None: ...

    def namespaced_resources(self) -> list[Resource]: ...

    def crd_resources(self, crd: Json) -> list[Resource]: ...

    def unserve_crd(self, crd: Json) -> None: ...

    def create(self, resource: Resource, obj: Json, url_namespace: str | None = None) -> Json: ...

    def edit(self, resource: Resource, key: str, mutate: Callable[[Json], None]) -> None: ...

    def remove_finalizer(self, resource: Resource, key: str, finalizer: str) -> None: ...

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str | None = None,
    ) -> Json: ...


Ref = tuple[Resource, str]
"""A live object: its resource and store key."""


def _meta(data: Json) -> Json:
    meta = data.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _owner_uids(data: Json) -> list[str]:
    refs = _meta(data).get("ownerReferences") or []
    return [str(r["uid"]) for r in refs if isinstance(r, dict) and r.get("uid")]


def _deleting(data: Json) -> bool:
    return bool(_meta(data).get("deletionTimestamp"))


def _blocks(dependent: Json, owner_uid: str) -> bool:
    """Whether ``dependent`` holds its owner's foreground deletion (``blockOwnerDeletion``)."""
    return any(
        isinstance(r, dict) and r.get("uid") == owner_uid and r.get("blockOwnerDeletion") is True
        for r in _meta(dependent).get("ownerReferences") or []
    )


def _drop_owners(obj: Json, uids: set[str]) -> None:
    """Remove the ownerReferences naming ``uids`` (the garbage collector's patch)."""
    meta = obj["metadata"]
    refs = [r for r in meta.get("ownerReferences") or [] if str(r.get("uid")) not in uids]
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)


class Controllers:
    """Garbage collector, namespace controller, service account controller, root CA publisher
    and CRD cleanup over one registry."""

    def __init__(self, registry: Cluster, *, root_ca: bool = False) -> None:
        self.registry = registry
        self.dependents: dict[str, set[Ref]] = {}
        """Owner uid -> live objects whose ownerReferences name it."""
        self._queue: deque[Change] = deque()
        self._recheck: dict[tuple[Resource, str], None] = {}
        """Namespaces and CRDs being emptied, to look at again once the queue is drained (once
        per cascade, not once per deleted object: a namespace of N objects costs O(N))."""
        self._running = False
        self.root_ca = RootCAPublisher(registry) if root_ca else None
        """The root CA publisher, when the server runs it (``root_ca_configmaps``)."""

    # -- index --------------------------------------------------------------------------------

    def index(self, resource: Resource, key: str, data: Json | None, old: Json | None) -> None:
        """Keep the owner index in step with one object's change (``bulk_load`` calls it too)."""
        if old is not None:
            for uid in _owner_uids(old):
                refs = self.dependents.get(uid)
                if refs is not None:
                    refs.discard((resource, key))
                    if not refs:
                        del self.dependents[uid]
        if data is not None:
            for uid in _owner_uids(data):
                self.dependents.setdefault(uid, set()).add((resource, key))

    # -- reacting -----------------------------------------------------------------------------

    def observe(self, change: Change) -> None:
        """React to ``change`` (and to the changes that causes) before returning."""
        self.index(
            change.resource,
            change.key,
            change.obj.data if change.obj is not None else None,
            change.prev.data if change.prev is not None else None,
        )
        self._queue.append(change)
        if self._running:
            return
        self._running = True
        try:
            while self._queue or self._recheck:
                if self._queue:
                    self._react(self._queue.popleft())
                    continue
                resource, key = next(iter(self._recheck))
                del self._recheck[(resource, key)]
                live = self._live((resource, key))
                if live is None:
                    continue
                if resource == NAMESPACES:
                    self._namespace(key)
                else:
                    self._crd(key, live)
        finally:
            self._running = False

    def _react(self, change: Change) -> None:
        publisher = self.root_ca
        if (
            publisher is not None
            and change.resource == CONFIGMAPS
            and change.key.endswith(_ROOT_CA_SUFFIX)
        ):
            publisher.sync(change.key.split("/", 1)[0])  # deleted or changed: put back
        if change.obj is None:
            assert change.prev is not None
            self._deleted(change.resource, change.prev.data)
            if change.resource == SERVICEACCOUNTS and change.key.endswith("/default"):
                self._service_account(change.key.split("/", 1)[0])  # made again at once
            return
        data = change.obj.data
        if not _deleting(data):
            if change.resource == NAMESPACES:
                active = (data.get("status") or {}).get("phase", "Active") == "Active"
                if change.prev is None or active:
                    self._service_account(change.key)
                if publisher is not None and active:
                    publisher.sync(change.key)
            return
        finalizers = _meta(data).get("finalizers") or []
        if FOREGROUND in finalizers:
            self._foreground(change.resource, change.key, data)
        if ORPHAN in finalizers:
            self._orphan(change.resource, change.key, data)
        if change.resource == NAMESPACES:
            self._namespace(change.key)
        if change.resource == CRDS and CRD_CLEANUP in finalizers:
            self._crd(change.key, data)

    def _service_account(self, namespace: str) -> None:
        """The ``default`` ServiceAccount of an active namespace (the serviceaccounts
        controller: on a namespace's creation or update, and when it is deleted)."""
        if self._live((SERVICEACCOUNTS, f"{namespace}/default")) is not None:
            return
        live_ns = self._live((NAMESPACES, namespace))
        if live_ns is None or _deleting(live_ns):
            return
        try:
            self.registry.create(SERVICEACCOUNTS, default_service_account(namespace), namespace)
        except st.StatusError:
            pass  # the namespace is already being deleted

    def publish_root_ca(self, ca_pem: str) -> None:
        """The server's CA (made when it starts with TLS) into every active namespace."""
        if self.root_ca is None:
            return
        active = [
            key
            for key, found in self.registry.store.objects[NAMESPACES].items()
            if not _deleting(found.data)
        ]
        self.root_ca.publish(ca_pem, active)

    def _live(self, ref: Ref) -> Json | None:
        found = self.registry.store.objects.get(ref[0], {}).get(ref[1])
        return found.data if found is not None else None

    def _classify(self, dependent: Ref, owner: Json) -> Literal["solid", "dangling", "waiting"]:
        """An ownerReference's owner (``classifyReferences``): gone or of another uid
        (dangling), being deleted with ``foregroundDeletion`` (waiting), else solid; an owner of
        a kind not served here is solid (never collect on its account)."""
        resource = self.registry.resource_of(
            str(owner.get("apiVersion") or ""), str(owner.get("kind") or "")
        )
        if resource is None:
            return "solid"
        namespace = dependent[1].split("/", 1)[0] if "/" in dependent[1] else None
        key = f"{namespace}/{owner.get('name')}" if resource.namespaced else str(owner.get("name"))
        live = self._live((resource, key))
        if live is None or _meta(live).get("uid") != owner.get("uid"):
            return "dangling"
        if _deleting(live) and FOREGROUND in (_meta(live).get("finalizers") or []):
            return "waiting"
        return "solid"

    def _attempt(self, ref: Ref) -> None:
        """The garbage collector's verdict on one dependent (``attemptToDeleteItem``)."""
        data = self._live(ref)
        if data is None or _deleting(data):
            return
        refs = [r for r in _meta(data).get("ownerReferences") or [] if isinstance(r, dict)]
        if not refs:
            return
        verdicts = [(str(r.get("uid")), self._classify(ref, r)) for r in refs]
        solid = any(verdict == "solid" for _, verdict in verdicts)
        waiting = any(verdict == "waiting" for _, verdict in verdicts)
        unwanted = {uid for uid, verdict in verdicts if verdict != "solid"}
        if solid:
            if unwanted:
                self.registry.edit(ref[0], ref[1], partial(_drop_owners, uids=unwanted))
            return
        uid = str(_meta(data).get("uid") or "")
        if waiting and any(True for _ in self._dependents_of(uid)):
            self._delete(ref, "Foreground")
            return
        finalizers = _meta(data).get("finalizers") or []
        if ORPHAN in finalizers:
            self._delete(ref, "Orphan")
        elif FOREGROUND in finalizers:
            self._delete(ref, "Foreground")
        else:
            self._delete(ref, "Background")

    def _delete(self, ref: Ref, propagation: str | None = None) -> None:
        resource, key = ref
        namespace, _, name = key.rpartition("/")
        try:
            self.registry.delete(resource, name, namespace or None, propagation=propagation)
        except st.NotFound:
            pass

    def _dependents_of(self, uid: str) -> Iterator[tuple[Ref, Json]]:
        for ref in sorted(self.dependents.get(uid, ()), key=lambda r: (r[0].plural, r[1])):
            data = self._live(ref)
            if data is not None:
                yield ref, data

    def collect_orphan(self, resource: Resource, key: str) -> None:
        """Classify a just-created object's owners (an HTTP create; the Python API's setup
        writes may name owners the test never created)."""
        data = self._live((resource, key))
        if data is not None and _meta(data).get("ownerReferences"):
            self._attempt((resource, key))

    def _deleted(self, resource: Resource, data: Json) -> None:
        meta = _meta(data)
        uid = str(meta.get("uid") or "")
        for ref, _ in list(self._dependents_of(uid)):
            self._attempt(ref)
        # owners in foreground deletion may have been waiting for this object
        namespace = meta.get("namespace")
        for owner in meta.get("ownerReferences") or []:
            if not isinstance(owner, dict):
                continue
            owner_resource = self.registry.resource_of(
                str(owner.get("apiVersion") or ""), str(owner.get("kind") or "")
            )
            if owner_resource is None:
                continue
            key = (
                f"{namespace}/{owner.get('name')}"
                if owner_resource.namespaced
                else str(owner.get("name"))
            )
            live = self._live((owner_resource, key))
            if live is not None and FOREGROUND in (_meta(live).get("finalizers") or []):
                self._foreground(owner_resource, key, live)
        if namespace and resource != NAMESPACES:
            live_ns = self._live((NAMESPACES, str(namespace)))
            if live_ns is not None and _deleting(live_ns):
                self._recheck[(NAMESPACES, str(namespace))] = None
        if resource == CRDS:
            self.registry.unserve_crd(data)
        elif self._crd_of(resource) is not None:
            self._recheck[(CRDS, f"{resource.plural}.{resource.group}")] = None

    def _crd_of(self, resource: Resource) -> tuple[str, Json] | None:
        key = f"{resource.plural}.{resource.group}"
        live = self._live((CRDS, key))
        if live is None or not _deleting(live):
            return None
        return key, live

    # -- propagation --------------------------------------------------------------------------

    def _foreground(self, resource: Resource, key: str, data: Json) -> None:
        uid = str(_meta(data).get("uid") or "")
        for ref, _ in list(self._dependents_of(uid)):
            self._attempt(ref)
        if any(_blocks(dependent, uid) for _, dependent in self._dependents_of(uid)):
            return
        self.registry.remove_finalizer(resource, key, FOREGROUND)

    def _orphan(self, resource: Resource, key: str, data: Json) -> None:
        uid = str(_meta(data).get("uid") or "")
        for ref, _ in list(self._dependents_of(uid)):
            self.registry.edit(ref[0], ref[1], partial(_drop_owners, uids={uid}))
        self.registry.remove_finalizer(resource, key, ORPHAN)

    # -- namespaces and CRDs ------------------------------------------------------------------

    def _namespace(self, name: str) -> None:
        live = self._live((NAMESPACES, name))
        if live is None or NAMESPACE_FINALIZER not in (
            (live.get("spec") or {}).get("finalizers") or []
        ):
            return
        remaining = False
        for resource in self.registry.namespaced_resources():
            objects = self.registry.store.objects.get(resource, {})
            keys = [k for k in objects if k.startswith(f"{name}/")]
            for key in keys:
                remaining = True
                data = self._live((resource, key))
                if data is not None and not _deleting(data):
                    self._delete((resource, key))
        if remaining and any(
            k.startswith(f"{name}/")
            for r in self.registry.namespaced_resources()
            for k in self.registry.store.objects.get(r, {})
        ):
            return

        def finalize(obj: Json) -> None:
            spec = obj.setdefault("spec", {})
            spec["finalizers"] = [
                f for f in spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER
            ]
            if not spec["finalizers"]:
                del spec["finalizers"]

        self.registry.edit(NAMESPACES, name, finalize)

    def _crd(self, key: str, data: Json) -> None:
        resources = self.registry.crd_resources(data)
        remaining = False
        for resource in resources:
            for obj_key in list(self.registry.store.objects.get(resource, {})):
                remaining = True
                live = self._live((resource, obj_key))
                if live is not None and not _deleting(live):
                    self._delete((resource, obj_key))
        if remaining and any(self.registry.store.objects.get(r) for r in resources):
            return
        self.registry.remove_finalizer(CRDS, key, CRD_CLEANUP)
