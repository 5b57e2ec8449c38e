"""What the test server knows about each resource it serves, as a real kube-apiserver states it.

A ``ResourceSpec`` is the registry's view of one resource beyond its address (``Resource``):
its discovery names (singular, short names, categories, verbs), its subresources, whether it
keeps ``metadata.generation`` and how writes treat its ``status``, its default deletion
propagation and its ``kubectl get`` columns. ``BUILTIN_SPECS`` lists the built-in resources the
server serves at start; custom resources get their spec from their CustomResourceDefinition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from informer.resource import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    CONFIGMAPS,
    CRONJOBS,
    DAEMONSETS,
    DEPLOYMENTS,
    ENDPOINTSLICES,
    INGRESSES,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    REPLICASETS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    STATEFULSETS,
    Resource,
)
from informer.resource import EVENTS as EVENTS_V1
from informer.testing._query.field_labels import FieldLabels, field_labels

__all__ = [
    "BUILTIN_SPECS",
    "CRDS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "REPLICASETS",
    "REVIEWS",
    "SELFSUBJECTACCESSREVIEWS",
    "SERVICES",
    "STATEFULSETS",
    "Column",
    "Generation",
    "Propagation",
    "ResourceSpec",
    "ScalePaths",
    "spec_for",
]

Json = dict[str, Any]
Propagation = Literal["Background", "Foreground", "Orphan"]
Generation = Literal["none", "spec", "all"]
"""How ``metadata.generation`` is kept: absent (ConfigMaps, Secrets...), bumped when anything but
metadata and status changes (``spec``: built-in workloads, custom resources with a status
subresource), or when anything but metadata changes (``all``: custom resources without one)."""

VERBS: Final[tuple[str, ...]] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
STATUS_VERBS: Final[tuple[str, ...]] = ("get", "patch", "update")

EVENTS = Resource("", "v1", "events", "Event")
REPLICATIONCONTROLLERS = Resource("", "v1", "replicationcontrollers", "ReplicationController")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
PERSISTENTVOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PODTEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate")
RESOURCEQUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
LIMITRANGES = Resource("", "v1", "limitranges", "LimitRange")
PODDISRUPTIONBUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
HORIZONTALPODAUTOSCALERS = Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"
)
APISERVICES = Resource(
    "apiregistration.k8s.io", "v1", "apiservices", "APIService", namespaced=False
)
MUTATINGWEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
VALIDATINGWEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
SELFSUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io",
    "v1",
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    namespaced=False,
)
SELFSUBJECTRULESREVIEWS = Resource(
    "authorization.k8s.io",
    "v1",
    "selfsubjectrulesreviews",
    "SelfSubjectRulesReview",
    namespaced=False,
)
REVIEWS: Final[frozenset[Resource]] = frozenset({SELFSUBJECTACCESSREVIEWS, SELFSUBJECTRULESREVIEWS})
"""Create-only resources answered, never stored (the authorizer's reviews)."""
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)


@dataclass(frozen=True)
class Column:
    """One ``kubectl get`` column: its Table definition and the JSON path of its cell.

    ``path`` is a dotted path into the object (``status.replicas``) or one of the computed cells
    the real printers show (``@age``, ``@pod-ready``, ...; see ``_serving.tables``).
    """

    name: str
    type: str
    path: str
    description: str = ""
    format: str = ""
    priority: int = 0


NAME_COLUMN = Column("Name", "string", "metadata.name", "Name must be unique.", "name")
AGE_COLUMN = Column("Age", "string", "@age", "CreationTimestamp is a timestamp.")


@dataclass(frozen=True)
class ScalePaths:
    """Where a resource keeps what its ``/scale`` subresource shows (JSON paths without the
    leading dot, as a CRD's ``subresources.scale`` names them)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""


@dataclass(frozen=True)
class ResourceSpec:
    """The registry's knowledge of one served resource."""

    resource: Resource
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS
    status_subresource: bool = False
    scale: ScalePaths | None = None
    """The ``/scale`` subresource (autoscaling/v1 Scale), when the resource has one."""
    generation: Generation = "none"
    propagation: Propagation = "Background"
    columns: tuple[Column, ...] = (NAME_COLUMN, AGE_COLUMN)
    custom: bool = False
    """Served for a CustomResourceDefinition: list items keep kind and apiVersion."""
    storage_version: str = ""
    """A custom resource's storage version, when another one: objects of all served versions
    are one collection stored in that version (``conversion: None`` rewrites apiVersion)."""
    selectable_fields: tuple[str, ...] = ()
    """A custom resource version's ``selectableFields`` (paths without the leading dot)."""
    unconditional_update: bool = True
    """Whether a PUT without ``metadata.resourceVersion`` is accepted (the strategy's
    ``AllowUnconditionalUpdate``): not for custom resources, CRDs, Leases."""
    schema: Json | None = field(default=None, compare=False)
    """The OpenAPI v3 schema of the objects (custom resources), for /openapi/v3."""

    @property
    def field_labels(self) -> FieldLabels:
        """The field labels a ``fieldSelector`` may name for this resource."""
        return field_labels(self.resource, custom=self.custom, selectable=self.selectable_fields)

    @property
    def allows_unconditional_update(self) -> bool:
        """A PUT may omit ``metadata.resourceVersion`` (never for custom resources)."""
        return self.unconditional_update and not self.custom

    @property
    def singular_name(self) -> str:
        return self.singular or self.resource.kind.lower()


def _builtin(resource: Resource, **kwargs: Any) -> ResourceSpec:
    return ResourceSpec(resource, **kwargs)


# what kubectl get shows of ReplicaSets and ReplicationControllers (one printer for both)
_REPLICA_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Desired", "integer", "spec.replicas"),
    Column("Current", "integer", "status.replicas"),
    Column("Ready", "integer", "status.readyReplicas"),
    AGE_COLUMN,
)
_BUILTIN_SCALE: Final = ScalePaths("spec.replicas", "status.replicas", "spec.selector")
"""The ``/scale`` of Deployments, StatefulSets, ReplicaSets and ReplicationControllers: their
``spec.selector`` (a LabelSelector, or a map for ReplicationControllers) shown as a string."""

_WORKLOAD: Final[Json] = {
    "categories": ("all",),
    "status_subresource": True,
    "generation": "spec",
}

BUILTIN_SPECS: Final[tuple[ResourceSpec, ...]] = (
    _builtin(
        NAMESPACES,
        short_names=("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        status_subresource=True,
        columns=(
            NAME_COLUMN,
            Column("Status", "string", "status.phase", "The status of the namespace"),
            AGE_COLUMN,
        ),
    ),
    _builtin(
        CONFIGMAPS,
        short_names=("cm",),
        columns=(NAME_COLUMN, Column("Data", "string", "@data-count"), AGE_COLUMN),
    ),
    _builtin(
        SECRETS,
        columns=(
            NAME_COLUMN,
            Column("Type", "string", "type"),
            Column("Data", "string", "@data-count"),
            AGE_COLUMN,
        ),
    ),
    _builtin(
        PODS,
        short_names=("po",),
        categories=("all",),
        status_subresource=True,
        generation="spec",
        columns=(
            NAME_COLUMN,
            Column("Ready", "string", "@pod-ready", "The aggregate readiness state of this pod"),
            Column("Status", "string", "@pod-status", "The aggregate status of the containers"),
            Column("Restarts", "string", "@pod-restarts", "The number of container restarts"),
            AGE_COLUMN,
            Column("IP", "string", "status.podIP", "IP address assigned to the pod", "", 1),
            Column("Node", "string", "spec.nodeName", "Name of the node the pod runs on", "", 1),
        ),
    ),
    _builtin(
        SERVICES,
        short_names=("svc",),
        categories=("all",),
        status_subresource=True,
        columns=(
            NAME_COLUMN,
            Column("Type", "string", "@service-type"),
            Column("Cluster-IP", "string", "spec.clusterIP"),
            Column("External-IP", "string", "@service-external-ips"),
            Column("Port(s)", "string", "@service-ports"),
            AGE_COLUMN,
        ),
    ),
    _builtin(EVENTS, short_names=("ev",)),
    _builtin(
        LEASES,
        unconditional_update=False,
        columns=(NAME_COLUMN, Column("Holder", "string", "spec.holderIdentity"), AGE_COLUMN),
    ),
    _builtin(
        DEPLOYMENTS,
        scale=_BUILTIN_SCALE,
        short_names=("deploy",),
        columns=(
            NAME_COLUMN,
            Column("Ready", "string", "@ready-of-replicas"),
            Column("Up-to-date", "integer", "status.updatedReplicas"),
            Column("Available", "integer", "status.availableReplicas"),
            AGE_COLUMN,
        ),
        **_WORKLOAD,
    ),
    _builtin(
        STATEFULSETS,
        scale=_BUILTIN_SCALE,
        short_names=("sts",),
        columns=(NAME_COLUMN, Column("Ready", "string", "@ready-of-replicas"), AGE_COLUMN),
        **_WORKLOAD,
    ),
    _builtin(
        DAEMONSETS,
        short_names=("ds",),
        columns=(
            NAME_COLUMN,
            Column("Desired", "integer", "status.desiredNumberScheduled"),
            Column("Current", "integer", "status.currentNumberScheduled"),
            Column("Ready", "integer", "status.numberReady"),
            Column("Up-to-date", "integer", "status.updatedNumberScheduled"),
            Column("Available", "integer", "status.numberAvailable"),
            AGE_COLUMN,
        ),
        **_WORKLOAD,
    ),
    _builtin(
        REPLICASETS,
        scale=_BUILTIN_SCALE,
        short_names=("rs",),
        columns=_REPLICA_COLUMNS,
        **_WORKLOAD,
    ),
    _builtin(
        JOBS,
        propagation="Orphan",  # batch/v1 keeps orphaning by default for compatibility
        columns=(
            NAME_COLUMN,
            Column("Status", "string", "@job-status"),
            Column("Completions", "string", "@job-completions"),
            AGE_COLUMN,
        ),
        **_WORKLOAD,
    ),
    _builtin(
        REPLICATIONCONTROLLERS,
        scale=_BUILTIN_SCALE,
        short_names=("rc",),
        columns=_REPLICA_COLUMNS,
        **_WORKLOAD,
    ),
    _builtin(
        NODES,
        short_names=("no",),
        status_subresource=True,
        columns=(NAME_COLUMN, AGE_COLUMN),
    ),
    _builtin(SERVICEACCOUNTS, short_names=("sa",)),
    _builtin(ENDPOINTS, short_names=("ep",)),
    _builtin(
        PERSISTENTVOLUMES,
        short_names=("pv",),
        status_subresource=True,
        columns=(NAME_COLUMN, Column("Status", "string", "status.phase"), AGE_COLUMN),
    ),
    _builtin(
        PERSISTENTVOLUMECLAIMS,
        short_names=("pvc",),
        status_subresource=True,
        columns=(NAME_COLUMN, Column("Status", "string", "status.phase"), AGE_COLUMN),
    ),
    _builtin(PODTEMPLATES),
    _builtin(RESOURCEQUOTAS, short_names=("quota",), status_subresource=True),
    _builtin(LIMITRANGES, short_names=("limits",)),
    _builtin(
        CRONJOBS,
        short_names=("cj",),
        columns=(
            NAME_COLUMN,
            Column("Schedule", "string", "spec.schedule"),
            Column("Suspend", "boolean", "spec.suspend"),
            AGE_COLUMN,
        ),
        **_WORKLOAD,
    ),
    _builtin(ENDPOINTSLICES),
    _builtin(
        PODDISRUPTIONBUDGETS,
        short_names=("pdb",),
        status_subresource=True,
        generation="spec",
    ),
    _builtin(
        HORIZONTALPODAUTOSCALERS,
        short_names=("hpa",),
        categories=("all",),
        status_subresource=True,
    ),
    _builtin(
        INGRESSES,
        short_names=("ing",),
        status_subresource=True,
        generation="spec",
    ),
    _builtin(EVENTS_V1, short_names=("ev",)),
    _builtin(ROLES),
    _builtin(ROLEBINDINGS),
    _builtin(CLUSTERROLES),
    _builtin(CLUSTERROLEBINDINGS),
    _builtin(APISERVICES, status_subresource=True),
    _builtin(MUTATINGWEBHOOKS, generation="spec"),
    _builtin(VALIDATINGWEBHOOKS, generation="spec"),
    _builtin(SELFSUBJECTACCESSREVIEWS, verbs=("create",)),
    _builtin(SELFSUBJECTRULESREVIEWS, verbs=("create",)),
    _builtin(
        CRDS,
        short_names=("crd", "crds"),
        unconditional_update=False,
        categories=("api-extensions",),
        status_subresource=True,
        generation="spec",
        columns=(NAME_COLUMN, Column("Created At", "date", "metadata.creationTimestamp")),
    ),
)

_BY_RESOURCE: Final[dict[Resource, ResourceSpec]] = {s.resource: s for s in BUILTIN_SPECS}


def spec_for(resource: Resource) -> ResourceSpec:
    """The built-in spec of ``resource``, or a plain one (a resource registered in-process:
    list items keep kind and apiVersion, no status subresource, generation on any change)."""
    found = _BY_RESOURCE.get(resource)
    if found is not None:
        return found
    return ResourceSpec(resource, custom=True, generation="all")
