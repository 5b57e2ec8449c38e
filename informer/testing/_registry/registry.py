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

from informer.resource import CONFIGMAPS, NAMESPACES, PODS, SERVICEACCOUNTS, Resource
from informer.testing import _status as st
from informer.testing._catalog import crd as _crd
from informer.testing._catalog.specs import (
    BUILTIN_SPECS,
    CRDS,
    JOBS,
    SERVICES,
    ResourceSpec,
    spec_for,
)
from informer.testing._lifecycle.controllers import Controllers, default_service_account
from informer.testing._lifecycle.deletion import (
    INITIAL_NAMESPACES,
    DeleteOptions,
    deletion_state,
    namespace_object,
    prepare_namespace,
    update_rules,
)
from informer.testing._lifecycle.finalizers import CRD_CLEANUP
from informer.testing._lifecycle.root_ca import ROOT_CA_CONFIGMAP, root_ca_configmap
from informer.testing._patches.json_patches import merge_patch
from informer.testing._patches.managed_fields import track_update
from informer.testing._query.write_options import WriteOptions
from informer.testing._registry.defaults import (
    ClusterIPs,
    allocate_service,
    apply_defaults,
    job_selector,
)
from informer.testing._schemas.apply_types import register_schema_types
from informer.testing._schemas.custom_resources import CustomResourceSchema
from informer.testing._schemas.key_order import builtin_order
from informer.testing._schemas.quantity import Quantity, QuantityError, parse_quantity
from informer.testing._schemas.validation import check_type, validate_object
from informer.testing._storage.history import History
from informer.testing._storage.store import Change, Kind, StoredObject

__all__ = ["BUILTINS", "Registry", "Strategy"]

Json = dict[str, Any]

BUILTINS: Final[tuple[Resource, ...]] = tuple(spec.resource for spec in BUILTIN_SPECS)

_RETURN_DELETED_OBJECT: Final[frozenset[str]] = frozenset(
    {
        "pods",
        "namespaces",
        "services",
        "serviceaccounts",
        "persistentvolumes",
        "persistentvolumeclaims",
        "podtemplates",
        "resourcequotas",
    }
)
"""Core resources whose registry returns the deleted object over HTTP (``ReturnDeletedObject``);
the others answer a Status."""

_INITIAL_STATUS: Final[dict[tuple[str, str], Json]] = {
    ("apps", "daemonsets"): {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    ("apps", "replicasets"): {"replicas": 0},
    ("apps", "statefulsets"): {"replicas": 0, "availableReplicas": 0},
    ("", "replicationcontrollers"): {"replicas": 0},
    ("", "persistentvolumes"): {"phase": "Pending"},
    ("", "persistentvolumeclaims"): {"phase": "Pending"},
    ("policy", "poddisruptionbudgets"): {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
    ("autoscaling", "horizontalpodautoscalers"): {"desiredReplicas": 0},
    ("networking.k8s.io", "ingresses"): {"loadBalancer": {}},
    ("", "nodes"): {
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
        "nodeInfo": {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": "",
            "osImage": "",
            "containerRuntimeVersion": "",
            "kubeletVersion": "",
            "kubeProxyVersion": "",
            "operatingSystem": "",
            "architecture": "",
        },
    },
}
"""A new object's status where Go serializes zero-valued fields without ``omitempty`` (typed
clients such as the official client's models require those fields); others start ``{}``."""

_SERVER_OWNED: Final = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
)
_LOADED_SERVER_OWNED: Final = tuple(k for k in _SERVER_OWNED if k != "managedFields")
"""What ``bulk_load`` sets itself (it stores given managedFields as they are)."""
_TYPE_AND_META: Final = ("kind", "apiVersion", "metadata")

_DIRECT = WriteOptions()
"""Writes through the Python API: persisted, no field manager, no validation."""

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def now() -> str:
    """The current time as metadata timestamps carry it (seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def copy(obj: Any) -> Any:
    """A deep copy of JSON data (the stored form never shares a caller's dicts)."""
    return _decode(_encode(obj))


class Strategy:
    """The write rules of one resource (its ``ResourceSpec``: generation, status subresource)."""

    def __init__(self, kind: Kind, spec: ResourceSpec) -> None:
        self.kind = kind
        self.resource = kind.resource
        self.spec = spec
        self.schema = (
            CustomResourceSchema(kind.resource, spec.schema)
            if spec.custom and spec.schema is not None and _structural(spec.schema)
            else None
        )
        """The structural schema of a custom resource version (pruning, defaults, validation)."""
        if self.schema is not None and spec.schema is not None:
            register_schema_types(kind.resource.group, kind.resource.plural, spec.schema)

    def build(
        self,
        obj: Json,
        name: str,
        namespace: str | None,
        previous: StoredObject | None,
        *,
        subresource: str = "",
        keep_status: bool = False,
    ) -> Json:
        """The stored form of ``obj``: kind, apiVersion, server-owned metadata, then the rest.

        For a resource with a status subresource, a write through ``/status`` changes only
        ``status`` and a write through the main endpoint everything but ``status`` (unless
        ``keep_status``: the Python API stands in for the controllers). ``generation`` (when the
        resource keeps one) starts at 1 and is bumped when the spec changes.
        """
        if subresource == "status":
            assert previous is not None
            written = dict(previous.data)
            written["metadata"] = dict(written["metadata"])
            if "status" in obj:
                written["status"] = obj["status"]
            else:
                written.pop("status", None)
            return written
        if subresource == "finalize":  # namespaces: only spec.finalizers changes
            assert previous is not None
            finalized: Json = copy(previous.data)
            finalizers = (obj.get("spec") or {}).get("finalizers")
            spec = finalized.setdefault("spec", {})
            if finalizers:
                spec["finalizers"] = finalizers
            else:
                spec.pop("finalizers", None)
            return finalized
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
        if self.spec.status_subresource and not keep_status:
            self._keep_status(rest, previous)
        generation = self._generation(rest, previous)
        if generation is not None:
            meta["generation"] = generation
        meta["creationTimestamp"] = old_meta.get("creationTimestamp") or now()
        for key, value in given.items():
            if key not in meta and key not in _SERVER_OWNED:
                meta[key] = value
        data: Json = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        data.update(rest)
        if resource == NAMESPACES:
            if previous is None:
                prepare_namespace(data)
            elif not keep_status:  # spec.finalizers change only through /finalize
                spec = dict(data.get("spec") or {})
                old = (previous.data.get("spec") or {}).get("finalizers")
                if old:
                    spec["finalizers"] = old
                else:
                    spec.pop("finalizers", None)
                data["spec"] = spec
        return data

    def _keep_status(self, rest: Json, previous: StoredObject | None) -> None:
        """Status as the main endpoint leaves it: the stored one, or the initial one."""
        if previous is not None:
            if "status" in previous.data:
                rest["status"] = previous.data["status"]
            else:
                rest.pop("status", None)
            return
        resource = self.resource
        if self.spec.custom or resource == CRDS:
            rest.pop("status", None)
        elif resource == PODS:
            rest["status"] = {"phase": "Pending", "qosClass": _qos_class(rest.get("spec"))}
        elif resource == SERVICES:
            rest["status"] = {"loadBalancer": {}}
        elif resource != NAMESPACES:
            rest["status"] = copy(_INITIAL_STATUS.get((resource.group, resource.plural), {}))

    def _generation(self, rest: Json, previous: StoredObject | None) -> int | None:
        mode = self.spec.generation
        if mode == "none":
            return None
        if previous is None:
            return 1
        generation = int(previous.data["metadata"].get("generation", 1))
        ignored = ("status",) if mode == "spec" else ()
        old_rest = {
            k: v for k, v in previous.data.items() if k not in _TYPE_AND_META and k not in ignored
        }
        new_rest = {k: v for k, v in rest.items() if k not in ignored}
        return generation + 1 if old_rest != new_rest else generation

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


def _structural(schema: Json) -> bool:
    """Whether a CRD schema says anything to apply (a bare ``x-kubernetes-preserve-unknown-
    fields`` object does not)."""
    return bool(set(schema) - {"type", "x-kubernetes-preserve-unknown-fields", "description"})


def _qos_class(spec: Any) -> str:
    """The pod QoS class of a pod spec, as ``GetPodQOS`` computes it: from the non-zero cpu
    and memory requests and limits of its containers and init containers, summed per resource
    and compared by value; Guaranteed when every container limits both and requests equal
    limits, BestEffort when nothing is requested or limited, else Burstable."""
    spec = spec if isinstance(spec, dict) else {}
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            resources = container.get("resources") or {}
            limited: set[str] = set()
            for kind, totals in (("requests", requests), ("limits", limits)):
                for name, text in (resources.get(kind) or {}).items():
                    amount = _amount(text) if name in ("cpu", "memory") else None
                    if amount is None or amount.sign() <= 0:
                        continue
                    totals[name] = _sum(totals.get(name), amount)
                    if kind == "limits":
                        limited.add(name)
            if not limited >= {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, wanted in requests.items():
            limit = limits.get(name)
            if limit is None or limit.compare(wanted) != 0:
                guaranteed = False
    return "Guaranteed" if guaranteed and len(requests) == len(limits) else "Burstable"


def _amount(text: Any) -> Quantity | None:
    try:
        return parse_quantity(text) if isinstance(text, str) else None
    except QuantityError:
        return None


def _sum(total: Quantity | None, amount: Quantity) -> Quantity:
    if total is None:
        return amount
    low = min(total.exponent, amount.exponent)
    unscaled = total.unscaled * 10 ** (total.exponent - low)
    unscaled += amount.unscaled * 10 ** (amount.exponent - low)
    return Quantity(int(unscaled), low, "DecimalSI")


class Registry:
    """Served resources, their strategies, and the create/update/patch/delete rules.

    Every committed change goes through ``_commit``, which lets the controllers (garbage
    collector, namespace controller, CRD cleanup; see ``_lifecycle.controllers``) react
    before returning.
    """

    def __init__(self, history: History) -> None:
        self.history = history
        self.store = history.store
        self.kinds: dict[tuple[str, str, str], Kind] = {}
        """Served resources by (group, version, plural), in registration order."""
        self.strategies: dict[Resource, Strategy] = {}
        self.controllers = Controllers(self, root_ca=history.options.root_ca_configmaps)
        self._generate_counter = 0
        self.cluster_ips = ClusterIPs()
        for spec in BUILTIN_SPECS:
            self.serve(spec)
        created = now()
        for name in INITIAL_NAMESPACES:  # the state of a fresh cluster, at revision 1
            self.store.seed(NAMESPACES, name, namespace_object(name, created, str(uuid.uuid4())))
            account = self.strategy(SERVICEACCOUNTS).build(
                default_service_account(name), "default", name, None
            )
            self.store.seed(SERVICEACCOUNTS, f"{name}/default", account)
            if self.controllers.root_ca is not None:
                root_ca = self.strategy(CONFIGMAPS).build(
                    root_ca_configmap(name, self.controllers.root_ca.ca_pem),
                    ROOT_CA_CONFIGMAP,
                    name,
                    None,
                )
                self.store.seed(CONFIGMAPS, f"{name}/{ROOT_CA_CONFIGMAP}", root_ca)

    # -- resources ----------------------------------------------------------------------------

    def register(self, resource: Resource, *, list_items_typed: bool = True) -> None:
        """Serve ``resource`` (a custom resource: list items keep kind and apiVersion)."""
        spec = spec_for(resource)
        if not list_items_typed and spec.custom:
            spec = ResourceSpec(resource, custom=False, generation="spec")
        self.serve(spec)

    def serve(self, spec: ResourceSpec) -> None:
        """Serve the resource of ``spec`` (again, after its CRD was deleted and re-created)."""
        resource = spec.resource
        key = (resource.group, resource.version, resource.plural)
        stored = resource
        if spec.storage_version:
            stored = Resource(
                resource.group,
                spec.storage_version,
                resource.plural,
                resource.kind,
                namespaced=resource.namespaced,
            )
        self.store.register(
            stored,
            strip_items=not spec.custom,
            order=None if spec.custom else builtin_order(stored.group, stored.version, stored.kind),
            sort_keys=spec.custom,
        )
        if key in self.kinds:
            if spec.custom and resource in self.strategies:  # a CRD update: its new schema
                strategy = Strategy(self.store.kinds[stored], spec)
                self.strategies[resource] = strategy
                if stored == resource and strategy.schema is not None:
                    self._default_stored(strategy)
            return
        # another version of a stored collection is served through a view of its own
        view = (
            self.store.kinds[resource]
            if stored == resource
            else Kind(resource, False, sort_keys=spec.custom)
        )
        self.kinds[key] = view
        self.strategies[resource] = Strategy(self.store.kinds[stored], spec)

    def _default_stored(self, strategy: Strategy) -> None:
        """Stored objects as a read shows them under a new schema: with its defaults (the
        apiserver defaults what it reads from etcd; no new resourceVersion, no event)."""
        assert strategy.schema is not None
        live = self.store.objects[strategy.resource]
        for key, found in list(live.items()):
            defaulted = strategy.schema.default(found.data)
            if defaulted != found.data:
                live[key] = StoredObject(found.kind, defaulted, found.revision)

    def storage_kind(self, kind: Kind) -> Kind:
        """The stored collection behind a served resource (itself, but for another version
        of a custom resource stored in its storage version)."""
        return self.strategy(kind.resource).kind

    def _view(self, resource: Resource, obj: Json) -> Json:
        """``obj`` as the served version ``resource`` shows it (``conversion: None``)."""
        if obj.get("apiVersion") != resource.api_version and resource in self.strategies:
            if self.strategies[resource].resource != resource:
                obj["apiVersion"] = resource.api_version
        return obj

    def unserve(self, resource: Resource) -> None:
        """Stop serving ``resource`` (its CRD is gone); its objects were deleted before."""
        self.kinds.pop((resource.group, resource.version, resource.plural), None)

    def lookup(self, group: str, version: str, plural: str) -> Kind | None:
        """The served resource at a URL's group, version and plural, if any."""
        return self.kinds.get((group, version, plural))

    def specs(self) -> list[ResourceSpec]:
        """The served resources' specs, in registration order (for discovery and OpenAPI)."""
        return [self.strategies[k.resource].spec for k in self.kinds.values()]

    def resource_of(self, api_version: str, kind: str) -> Resource | None:
        """The served resource of objects of ``apiVersion``/``kind`` (owner references)."""
        for served in self.kinds.values():
            r = served.resource
            if r.kind == kind and r.api_version == api_version:
                return self.strategy(r).resource  # the stored collection
        return None

    def namespaced_resources(self) -> list[Resource]:
        return [k.resource for k in self.kinds.values() if k.resource.namespaced]

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

    # -- custom resource definitions ----------------------------------------------------------

    def crd_resources(self, crd: Json) -> list[Resource]:
        return [spec.resource for spec in _crd.served_specs(crd)]

    def unserve_crd(self, crd: Json) -> None:
        for resource in self.crd_resources(crd):
            self.unserve(resource)

    def _prepare_crd(self, data: Json, previous: StoredObject | None) -> None:
        """Validate a CRD and give it the status and finalizer the apiextensions server does."""
        meta = data["metadata"]
        _crd.validate(data, meta["name"])
        if previous is None:
            finalizers = list(meta.get("finalizers") or [])
            if CRD_CLEANUP not in finalizers:
                meta["finalizers"] = [*finalizers, CRD_CLEANUP]
        data["status"] = _crd.accepted_status(data, now())

    # -- writes -------------------------------------------------------------------------------

    def _commit(self, resource: Resource, key: str, data: Json | None) -> Change:
        change = self.store.commit(resource, key, data)
        self.history.after_write()
        if resource == CRDS and data is not None and not data["metadata"].get("deletionTimestamp"):
            for spec in _crd.served_specs(data):
                self.serve(spec)
        self.controllers.observe(change)
        return change

    def _admit_namespace(
        self, resource: Resource, namespace: str | None, name: str, setup: bool
    ) -> None:
        """NamespaceLifecycle admission: 404 into a missing namespace (the Python API creates
        it), 403 into one being terminated."""
        if namespace is None:
            return
        found = self.store.objects[NAMESPACES].get(namespace)
        if found is None:
            if not setup:
                raise st.not_found(NAMESPACES, namespace)
            self._commit(
                NAMESPACES,
                namespace,
                self.strategy(NAMESPACES).build({"metadata": {}}, namespace, None, None),
            )
            return
        if found.data["metadata"].get("deletionTimestamp"):
            raise st.namespace_terminating(resource, name, namespace)

    def _admit_service_account(self, pod: Json, name: str, namespace: str) -> None:
        """ServiceAccount admission: a Pod runs as an existing ServiceAccount (403 without)."""
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        if f"{namespace}/{account}" not in self.store.objects[SERVICEACCOUNTS]:
            raise st.forbidden_object(
                PODS,
                name,
                f"error looking up service account {namespace}/{account}: serviceaccount "
                f'"{account}" not found',
            )

    def create(
        self,
        resource: Resource,
        obj: Json,
        url_namespace: str | None = None,
        *,
        setup: bool = False,
        options: WriteOptions = _DIRECT,
    ) -> Json:
        """Create ``obj`` (namespace from the URL, its metadata, or "default"); 409 if it exists.

        ``setup`` (the Python API): a missing namespace is created and ``status`` is stored as
        given; over HTTP a missing namespace is 404 and status is the server's. With
        ``options.dry_run`` the answer is what would be stored (uid, creationTimestamp, no
        resourceVersion) and nothing is: no revision, no event.
        """
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
        if options.validate:
            check_type(resource, obj)
            obj = validate_object(
                resource,
                {**obj, "metadata": {**meta, "name": name}},
                options,
                custom=strategy.spec.custom,
            )
        if options.validate and not strategy.spec.custom:
            self._default(resource, obj, None)
        if strategy.schema is not None:
            obj = strategy.schema.decode(obj, options if options.validate else None)
        self._admit_namespace(resource, namespace, name, setup)
        if resource == PODS and options.validate and namespace is not None:
            self._admit_service_account(obj, name, namespace)
        key = self.key(resource, namespace, name)
        stored = strategy.resource
        if key in self.store.objects[stored]:
            raise st.already_exists(resource, name)
        data = strategy.build(obj, name, namespace, None, keep_status=setup)
        if resource == JOBS and options.validate:
            job_selector(data)
        if strategy.schema is not None and options.validate:
            strategy.schema.check(data, None, options)
        if resource == CRDS:
            self._prepare_crd(data, None)
        self._stamp_managers(resource, data, None, obj, options)
        if options.dry_run:
            del data["metadata"]["resourceVersion"]
            return self._view(resource, strategy.kind.canonical(data))
        change = self._commit(stored, key, data)
        if not setup:
            self.controllers.collect_orphan(stored, key)
        assert change.obj is not None
        return self._view(resource, dict(_decode(change.obj.typed)))

    def update(
        self,
        resource: Resource,
        obj: Json,
        name: str,
        namespace: str | None,
        precondition_rv: str | None = None,
        *,
        subresource: str = "",
        setup: bool = False,
        options: WriteOptions = _DIRECT,
        conditional: bool = False,
    ) -> Json:
        """Replace the object; a stale ``metadata.resourceVersion`` (or precondition) is 409.

        ``conditional`` (a PUT over HTTP): a resource that allows no unconditional update
        (custom resources, CRDs, Leases) needs ``metadata.resourceVersion`` (422 without).

        ``subresource="status"`` writes only the status. An update that removes the last
        finalizer of an object being deleted deletes it (one DELETED event). With
        ``options.dry_run`` the answer is what would be stored, at the current resourceVersion,
        and nothing is.
        """
        strategy = self.strategy(resource)
        obj = copy(obj)
        namespace, key, current = self._existing(strategy, resource, name, namespace)
        stored = strategy.resource
        wanted = precondition_rv or (obj.get("metadata") or {}).get("resourceVersion")
        if conditional and not wanted and not strategy.spec.allows_unconditional_update:
            raise st.invalid_object(
                resource,
                resource.plural,
                name,
                [
                    (
                        "FieldValueInvalid",
                        "metadata.resourceVersion",
                        "Invalid value: 0: must be specified for an update",
                    )
                ],
            )
        if options.validate:
            check_type(resource, obj)
            obj = validate_object(resource, obj, options, custom=strategy.spec.custom)
        if options.validate and not strategy.spec.custom and subresource in ("", "scale"):
            self._default(resource, obj, current.data)
        if strategy.schema is not None:
            obj = strategy.schema.decode(obj, options if options.validate else None)
        if wanted:
            self._check_rv_precondition(resource, name, wanted, current)
        data = strategy.build(
            obj, name, namespace, current, subresource=subresource, keep_status=setup
        )
        if strategy.schema is not None and options.validate:
            strategy.schema.check(data, current.data, options)
        if resource == CRDS:
            self._prepare_crd(data, current)
        data["metadata"]["resourceVersion"] = current.data["metadata"]["resourceVersion"]
        self._stamp_managers(resource, data, current.data, obj, options, subresource)
        if options.dry_run:
            return self._view(resource, strategy.kind.canonical(data))
        if update_rules(resource, data, current.data):
            self._commit(stored, key, None)
            return self._view(resource, strategy.kind.canonical(data))
        if data == current.data:
            # a no-op write is not written to etcd (GuaranteedUpdate short-circuits): same RV,
            # no new revision, no watch event
            return self._view(resource, dict(_decode(current.typed)))
        change = self._commit(stored, key, data)
        assert change.obj is not None
        return self._view(resource, dict(_decode(change.obj.typed)))

    def _default(self, resource: Resource, obj: Json, previous: Json | None) -> None:
        """Built-in defaults of a write over HTTP, and a Service's allocations."""
        apply_defaults(resource.group, resource.plural, obj)
        if resource == SERVICES:
            allocate_service(obj, previous, self.cluster_ips)
        if resource == JOBS and previous is not None:  # the generated selector is immutable
            spec, old = obj.get("spec"), previous.get("spec") or {}
            if isinstance(spec, dict):
                for key in ("selector", "manualSelector"):
                    if key not in spec and key in old:
                        spec[key] = old[key]

    @staticmethod
    def _stamp_managers(
        resource: Resource,
        data: Json,
        previous: Json | None,
        given: Json,
        options: WriteOptions,
        subresource: str = "",
    ) -> None:
        """Set ``managedFields``: as server-side apply computed them, as a write by
        ``options.field_manager`` changes them, or (Python API writes, like writes straight to
        etcd) as given, else as they were."""
        meta = data["metadata"]
        given_entries = (given.get("metadata") or {}).get("managedFields")
        if options.apply:
            entries = given_entries
        elif options.field_manager:
            entries = track_update(
                previous,
                data,
                options.field_manager,
                resource.api_version,
                resource.group,
                resource.plural,
                now(),
                subresource,
            )
        elif given_entries is not None:  # the Python API stores what it is given
            entries = given_entries
        else:
            entries = ((previous or {}).get("metadata") or {}).get("managedFields")
        if entries:
            meta["managedFields"] = entries

    def current(self, resource: Resource, namespace: str | None, name: str) -> StoredObject | None:
        """The stored object (``namespace`` already defaulted), or None."""
        return self.store.objects[self.strategy(resource).resource].get(
            self.key(resource, namespace, name)
        )

    def _existing(
        self, strategy: Strategy, resource: Resource, name: str, namespace: str | None
    ) -> tuple[str | None, str, StoredObject]:
        """A write's object: its namespace (defaulted), its key and the stored object (404 when
        there is none)."""
        namespace = self.namespace_of(resource, namespace)
        key = self.key(resource, namespace, name)
        current = self.store.objects[strategy.resource].get(key)
        if current is None:
            raise st.not_found(resource, name)
        return namespace, key, current

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
        self,
        resource: Resource,
        name: str,
        patch: Json,
        namespace: str | None = None,
        *,
        subresource: str = "",
        setup: bool = False,
        options: WriteOptions = _DIRECT,
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
            subresource=subresource,
            setup=setup,
            options=options,
        )

    def patch(
        self,
        resource: Resource,
        name: str,
        namespace: str | None,
        apply: Callable[[Json], Any],
        precondition_rv: str | None,
        *,
        subresource: str = "",
        setup: bool = False,
        options: WriteOptions = _DIRECT,
    ) -> Json:
        """Update the object to ``apply(current)`` (a patch of any format)."""
        strategy = self.strategy(resource)
        namespace, _, current = self._existing(strategy, resource, name, namespace)
        if precondition_rv:
            self._check_rv_precondition(resource, name, precondition_rv, current)
        patched = apply(self._view(resource, dict(_decode(current.typed))))
        if not isinstance(patched, dict):
            raise st.bad_request("the patch must produce a JSON object")
        meta = patched.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        meta.pop("resourceVersion", None)
        return self.update(
            resource,
            patched,
            name,
            namespace,
            subresource=subresource,
            setup=setup,
            options=options,
        )

    def edit(self, resource: Resource, key: str, mutate: Callable[[Json], None]) -> None:
        """A controller's write: ``mutate`` a copy of the current object and update it (the
        lifecycle rules apply: removing the last finalizer of an object being deleted deletes
        it). Nothing happens when the object is gone."""
        current = self.store.objects[self.strategy(resource).resource].get(key)
        if current is None:
            return
        data = copy(current.data)
        mutate(data)
        namespace, _, name = key.rpartition("/")
        self.update(resource, data, name, namespace or None, setup=True)

    def remove_finalizer(self, resource: Resource, key: str, finalizer: str) -> None:
        def drop(data: Json) -> None:
            meta = data["metadata"]
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]

        self.edit(resource, key, drop)

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        propagation: str | None = None,
        options: DeleteOptions | None = None,
        write: WriteOptions = _DIRECT,
    ) -> Json:
        """Delete: the object as last stored (stamped with the deletion revision) when it is
        removed now, or the object being deleted (``deletionTimestamp``) when finalizers or a
        grace period hold it; see ``_lifecycle.deletion``. With ``write.dry_run`` nothing
        changes and the answer is the object as it would be."""
        strategy = self.strategy(resource)
        options = options or DeleteOptions(
            propagation=propagation,  # type: ignore[arg-type]
            resource_version=resource_version,
            uid=uid,
        )
        namespace, key, current = self._existing(strategy, resource, name, namespace)
        stored = strategy.resource
        meta = current.data["metadata"]
        if options.uid and options.uid != meta.get("uid"):
            raise st.conflict(
                resource,
                name,
                f"Precondition failed: UID in precondition: {options.uid}, "
                f"UID in object meta: {meta.get('uid')}",
            )
        if options.resource_version and options.resource_version != meta.get("resourceVersion"):
            raise st.conflict(
                resource,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{options.resource_version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        staying = deletion_state(strategy.spec, copy(current.data), options)
        if write.dry_run:
            if staying is not None:
                return self._view(resource, strategy.kind.canonical(staying))
            return self._view(resource, dict(_decode(current.typed)))
        if staying is not None:
            if staying == current.data:
                return self._view(resource, dict(_decode(current.typed)))
            change = self._commit(stored, key, staying)
            assert change.obj is not None
            return self._view(resource, dict(_decode(change.obj.typed)))
        change = self._commit(stored, key, None)
        return self._view(resource, dict(_decode(change.deleted_object().typed)))

    # -- reads --------------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Json | None:
        """The current object, or None."""
        namespace = self.namespace_of(resource, namespace)
        found = self.store.objects[self.strategy(resource).resource].get(
            self.key(resource, namespace, name)
        )
        return self._view(resource, dict(_decode(found.typed))) if found is not None else None

    def list_objects(self, resource: Resource, namespace: str | None = None) -> list[Json]:
        """Current objects of ``resource`` (in one namespace if given), in key order."""
        stored = self.strategy(resource).resource
        live = self.store.objects[stored]
        prefix = f"{namespace}/" if namespace and resource.namespaced else ""
        return [
            self._view(resource, dict(_decode(live[k].typed)))
            for k in self.store.sorted_keys(stored, live)
            if k.startswith(prefix)
        ]

    def bulk_load(self, resource: Resource, objs: Iterable[Json]) -> None:
        """Create many objects fast (one revision each); see ``ApiServer.bulk_load``.

        Missing namespaces are created as they first appear; owner references are indexed for
        the garbage collector; no other admission or controller runs.
        """
        strategy = self.strategy(resource)
        generation = strategy.spec.generation != "none"
        stored = strategy.resource
        live = self.store.objects[stored]
        namespaces = self.store.objects[NAMESPACES]
        index = self.controllers.index
        created = now()
        kind_name, api_version = resource.kind, stored.api_version
        seen: set[str] = set()
        namespace_of, key_of = self.namespace_of, self.key
        schema = strategy.schema

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
                if namespace is not None and namespace not in namespaces:
                    self._admit_namespace(resource, namespace, name, True)
                key = key_of(resource, namespace, name)
                if key in live or key in seen:
                    raise st.already_exists(resource, name)
                seen.add(key)
                meta: Json = {"name": name}
                if namespace is not None:
                    meta["namespace"] = namespace
                meta["uid"] = str(uuid.uuid4())
                meta["resourceVersion"] = ""
                if generation:
                    meta["generation"] = 1
                meta["creationTimestamp"] = created
                for k, v in given.items():
                    if k not in meta and k not in _LOADED_SERVER_OWNED:
                        meta[k] = v
                data: Json = {"kind": kind_name, "apiVersion": api_version, "metadata": meta}
                for k, v in obj.items():
                    if k not in _TYPE_AND_META:
                        data[k] = v
                if schema is not None:  # as a read from storage shows it: pruned, defaulted
                    data = schema.decode(data, None)
                if "ownerReferences" in meta:
                    index(stored, key, data, None)
                yield key, data

        collecting = gc.isenabled()
        gc.disable()
        try:
            self.store.bulk_add(stored, build())
        finally:
            if collecting:
                gc.enable()
        self.history.after_write()
