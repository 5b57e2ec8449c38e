"""The registry: which resources are served and the rules of writing them.

``Registry`` holds one ``Strategy`` per resource (as the real apiserver's generic registry holds a
``RESTCreateStrategy``/``RESTUpdateStrategy`` per type). The strategy decides the stored form of an
object (server-owned metadata, generation) and what a DELETE answers; the registry applies the
generic rules around it (names, namespaces, preconditions, no-op updates) and commits to the
store. Every method is synchronous and raises ``StatusError`` subclasses worded as the real
server words them.
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from informer.resource import CONFIGMAPS, LEASES, NAMESPACES, PODS, SECRETS, Resource
from informer.testing import _status as st
from informer.testing._history import History
from informer.testing._patch import merge_patch
from informer.testing._store import Kind, StoredObject

__all__ = ["BUILTINS", "Registry", "Strategy"]

Json = dict[str, Any]

BUILTINS: Final[tuple[Resource, ...]] = (NAMESPACES, CONFIGMAPS, SECRETS, PODS, LEASES)

_RETURN_DELETED_OBJECT: Final[frozenset[str]] = frozenset({"pods", "namespaces"})
"""Resources whose registry returns the deleted object over HTTP; the others answer a Status."""

_SERVER_OWNED: Final = ("uid", "resourceVersion", "generation", "creationTimestamp", "selfLink")
_TYPE_AND_META: Final = ("kind", "apiVersion", "metadata")

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def now() -> str:
    """The current time as metadata timestamps carry it (seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def copy(obj: Any) -> Any:
    """A deep copy of JSON data (the stored form never shares a caller's dicts)."""
    return _decode(_encode(obj))


class Strategy:
    """The write rules of one resource; a resource with special rules gets a subclass."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        self.resource = kind.resource

    def build(
        self, obj: Json, name: str, namespace: str | None, previous: StoredObject | None
    ) -> Json:
        """The stored form of ``obj``: kind, apiVersion, server-owned metadata, then the rest.

        ``generation`` starts at 1 and is bumped when anything but metadata and status changes.
        """
        resource = self.resource
        given = obj.get("metadata") or {}
        meta: Json = {"name": name}
        if given.get("generateName"):
            meta["generateName"] = given["generateName"]
        if namespace is not None:
            meta["namespace"] = namespace
        old_meta = previous.data["metadata"] if previous is not None else {}
        meta["uid"] = old_meta.get("uid") or str(uuid.uuid4())
        meta["resourceVersion"] = ""
        rest = {k: v for k, v in obj.items() if k not in _TYPE_AND_META}
        generation = 1
        if previous is not None:
            generation = int(old_meta.get("generation", 1))
            old_rest = {
                k: v for k, v in previous.data.items() if k not in _TYPE_AND_META and k != "status"
            }
            new_rest = {k: v for k, v in rest.items() if k != "status"}
            if old_rest != new_rest:
                generation += 1
        meta["generation"] = generation
        meta["creationTimestamp"] = old_meta.get("creationTimestamp") or now()
        for key, value in given.items():
            if key not in meta and key not in _SERVER_OWNED:
                meta[key] = value
        data: Json = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        data.update(rest)
        return data

    def delete_response(self, deleted: Json) -> Json:
        """What an HTTP DELETE answers: the object (pods, namespaces) or, as the generic
        registry's finalizeDelete does, a Status naming it."""
        resource = self.resource
        if resource.plural in _RETURN_DELETED_OBJECT:
            return deleted
        details: Json = {"name": deleted["metadata"]["name"]}
        if resource.group:
            details["group"] = resource.group
        details["kind"] = resource.plural
        details["uid"] = deleted["metadata"].get("uid", "")
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }


class Registry:
    """Served resources, their strategies, and the create/update/patch/delete rules."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.store = history.store
        self.kinds: dict[tuple[str, str, str], Kind] = {}
        """Served resources by (group, version, plural), in registration order."""
        self.strategies: dict[Resource, Strategy] = {}
        self._generate_counter = 0
        for resource in BUILTINS:
            self.register(resource, list_items_typed=False)

    # -- resources ----------------------------------------------------------------------------

    def register(self, resource: Resource, *, list_items_typed: bool = True) -> None:
        """Serve ``resource`` (a custom resource: list items keep kind and apiVersion)."""
        key = (resource.group, resource.version, resource.plural)
        if key in self.kinds:
            return
        self.store.register(resource, strip_items=not list_items_typed)
        kind = self.store.kinds[resource]
        self.kinds[key] = kind
        self.strategies[resource] = Strategy(kind)

    def lookup(self, group: str, version: str, plural: str) -> Kind | None:
        """The served resource at a URL's group, version and plural, if any."""
        return self.kinds.get((group, version, plural))

    def strategy(self, resource: Resource) -> Strategy:
        strategy = self.strategies.get(resource)
        if strategy is None:
            raise KeyError(f"resource {resource.group_resource} is not registered")
        return strategy

    @staticmethod
    def key(resource: Resource, namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if resource.namespaced else name

    @staticmethod
    def namespace_of(resource: Resource, namespace: str | None) -> str | None:
        if not resource.namespaced:
            return None
        return namespace or "default"

    # -- writes -------------------------------------------------------------------------------

    def create(self, resource: Resource, obj: Json, url_namespace: str | None = None) -> Json:
        """Create ``obj`` (namespace from the URL, its metadata, or "default"); 409 if it exists."""
        strategy = self.strategy(resource)
        obj = copy(obj)
        if not isinstance(obj, dict):
            raise st.bad_request("the object must be a JSON object")
        meta = obj.get("metadata") or {}
        namespace = self.namespace_of(resource, url_namespace or meta.get("namespace"))
        if url_namespace and meta.get("namespace") and meta["namespace"] != url_namespace:
            raise st.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            self._generate_counter += 1
            name = f"{meta['generateName']}{self._generate_counter:05x}"
        if not name:
            raise st.invalid_object(
                resource,
                resource.kind,
                "",
                [st.required("metadata.name", "name or generateName is required")],
            )
        key = self.key(resource, namespace, name)
        if key in self.store.objects[resource]:
            raise st.already_exists(resource, name)
        change = self.store.commit(resource, key, strategy.build(obj, name, namespace, None))
        self.history.after_write()
        assert change.obj is not None
        return dict(_decode(change.obj.typed))

    def update(
        self,
        resource: Resource,
        obj: Json,
        name: str,
        namespace: str | None,
        precondition_rv: str | None = None,
    ) -> Json:
        """Replace the object; a stale ``metadata.resourceVersion`` (or precondition) is 409."""
        strategy = self.strategy(resource)
        obj = copy(obj)
        namespace = self.namespace_of(resource, namespace)
        key = self.key(resource, namespace, name)
        current = self.store.objects[resource].get(key)
        if current is None:
            raise st.not_found(resource, name)
        wanted = precondition_rv or (obj.get("metadata") or {}).get("resourceVersion")
        if wanted:
            self._check_rv_precondition(resource, name, wanted, current)
        data = strategy.build(obj, name, namespace, current)
        data["metadata"]["resourceVersion"] = current.data["metadata"]["resourceVersion"]
        if data == current.data:
            # a no-op write is not written to etcd (GuaranteedUpdate short-circuits): same RV,
            # no new revision, no watch event
            return dict(_decode(current.typed))
        change = self.store.commit(resource, key, data)
        self.history.after_write()
        assert change.obj is not None
        return dict(_decode(change.obj.typed))

    def _check_rv_precondition(
        self, resource: Resource, name: str, wanted: str, current: StoredObject
    ) -> None:
        if wanted != current.data["metadata"]["resourceVersion"]:
            if not self.history.options.opaque and not (wanted.isascii() and wanted.isdigit()):
                raise st.bad_request(
                    f'metadata.resourceVersion: Invalid value: "{wanted}": '
                    f'strconv.ParseUint: parsing "{wanted}": invalid syntax'
                )
            raise st.conflict(resource, name)

    def merge_patch(
        self, resource: Resource, name: str, patch: Json, namespace: str | None = None
    ) -> Json:
        """Apply a JSON merge patch; a ``metadata.resourceVersion`` in it is a precondition."""
        return self.patch(
            resource,
            name,
            namespace,
            lambda current: merge_patch(current, patch),
            (patch.get("metadata") or {}).get("resourceVersion")
            if isinstance(patch, dict)
            else None,
        )

    def patch(
        self,
        resource: Resource,
        name: str,
        namespace: str | None,
        apply: Callable[[Json], Any],
        precondition_rv: str | None,
    ) -> Json:
        """Update the object to ``apply(current)`` (a patch of any format)."""
        self.strategy(resource)
        namespace = self.namespace_of(resource, namespace)
        current = self.store.objects[resource].get(self.key(resource, namespace, name))
        if current is None:
            raise st.not_found(resource, name)
        if precondition_rv:
            self._check_rv_precondition(resource, name, precondition_rv, current)
        patched = apply(_decode(current.typed))
        if not isinstance(patched, dict):
            raise st.bad_request("the patch must produce a JSON object")
        meta = patched.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        meta.pop("resourceVersion", None)
        return self.update(resource, patched, name, namespace)

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
    ) -> Json:
        """Delete and return the object as last stored (stamped with the deletion revision)."""
        self.strategy(resource)
        namespace = self.namespace_of(resource, namespace)
        key = self.key(resource, namespace, name)
        current = self.store.objects[resource].get(key)
        if current is None:
            raise st.not_found(resource, name)
        meta = current.data["metadata"]
        if uid and uid != meta.get("uid"):
            raise st.conflict(
                resource,
                name,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {meta.get('uid')}",
            )
        if resource_version and resource_version != meta.get("resourceVersion"):
            raise st.conflict(
                resource,
                name,
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        change = self.store.commit(resource, key, None)
        self.history.after_write()
        return dict(_decode(change.deleted_object().typed))

    # -- reads --------------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Json | None:
        """The current object, or None."""
        namespace = self.namespace_of(resource, namespace)
        found = self.store.objects[self.strategy(resource).resource].get(
            self.key(resource, namespace, name)
        )
        return dict(_decode(found.typed)) if found is not None else None

    def list_objects(self, resource: Resource, namespace: str | None = None) -> list[Json]:
        """Current objects of ``resource`` (in one namespace if given), in key order."""
        live = self.store.objects[self.strategy(resource).resource]
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        return [
            dict(_decode(live[k].typed))
            for k in self.store.sorted_keys(resource, live)
            if k.startswith(prefix)
        ]

    def bulk_load(self, resource: Resource, objs: Iterable[Json]) -> None:
        """Create many objects fast (one revision each); see ``ApiServer.bulk_load``."""
        self.strategy(resource)
        live = self.store.objects[resource]
        created = now()
        kind_name, api_version = resource.kind, resource.api_version
        seen: set[str] = set()
        namespace_of, key_of = self.namespace_of, self.key

        def build() -> Iterable[tuple[str, Json]]:
            for obj in objs:
                given = obj.get("metadata") or {}
                name = given.get("name")
                if not name:
                    raise st.invalid_object(
                        resource,
                        kind_name,
                        "",
                        [st.required("metadata.name", "name or generateName is required")],
                    )
                namespace = namespace_of(resource, given.get("namespace"))
                key = key_of(resource, namespace, name)
                if key in live or key in seen:
                    raise st.already_exists(resource, name)
                seen.add(key)
                meta: Json = {"name": name}
                if namespace is not None:
                    meta["namespace"] = namespace
                meta["uid"] = str(uuid.uuid4())
                meta["resourceVersion"] = ""
                meta["generation"] = 1
                meta["creationTimestamp"] = created
                for k, v in given.items():
                    if k not in meta and k not in _SERVER_OWNED:
                        meta[k] = v
                data: Json = {"kind": kind_name, "apiVersion": api_version, "metadata": meta}
                for k, v in obj.items():
                    if k not in _TYPE_AND_META:
                        data[k] = v
                yield key, data

        collecting = gc.isenabled()
        gc.disable()
        try:
            self.store.bulk_add(resource, build())
        finally:
            if collecting:
                gc.enable()
        self.history.after_write()
