"""Addressing a Kubernetes resource: group, version, plural, kind and scope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from informer.errors import ConfigurationError

__all__ = [
    "CLUSTERROLEBINDINGS",
    "CLUSTERROLES",
    "CONFIGMAPS",
    "CRONJOBS",
    "CUSTOMRESOURCEDEFINITIONS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "ENDPOINTSLICES",
    "EVENTS",
    "INGRESSES",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PERSISTENTVOLUMECLAIMS",
    "PODS",
    "REPLICASETS",
    "ROLEBINDINGS",
    "ROLES",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "STATEFULSETS",
    "Resource",
]

_discoverer: list[Callable[[Any, str], Awaitable[Resource]]] = []
"""``informer.discovery.discover``, registered by that module when it is imported (``informer``
imports it): this leaf module never imports the discovery layer above it."""


def _register_discoverer(discover: Callable[[Any, str], Awaitable[Resource]]) -> None:
    _discoverer[:] = [discover]


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource type of the API (built-in or custom)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    def __post_init__(self) -> None:
        for field in ("group", "version", "plural", "kind"):
            value = getattr(self, field)
            if not isinstance(value, str) or "/" in value:
                raise ConfigurationError(f"Resource.{field} must be a str without '/': {value!r}")
            if not value and field != "group":  # "" is the core group
                raise ConfigurationError(f"Resource.{field} must not be empty")
        if not isinstance(self.namespaced, bool):
            raise ConfigurationError(f"Resource.namespaced must be a bool: {self.namespaced!r}")

    def check_namespace(self, namespace: object) -> None:
        """Raise ``ConfigurationError`` unless ``namespace`` can scope this resource (None or
        ``""``: all namespaces, or the resource is cluster-scoped)."""
        if namespace is not None and not isinstance(namespace, str):
            raise ConfigurationError(f"namespace must be a str or None: {namespace!r}")
        if namespace and not self.namespaced:
            raise ConfigurationError(f"{self.plural} is cluster-scoped: no namespace")

    @classmethod
    async def discover(cls, client: Any, name: str) -> Resource:
        """Resolve ``name`` (``deployments.apps``, ``cm``, ``apps/v1/deployments``) through the
        server's discovery; see ``informer.discovery.discover`` (raises ``UnknownResource``)."""
        if not _discoverer:
            raise ConfigurationError("import informer (or informer.discovery) to use discovery")
        return await _discoverer[0](client, name)

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of its objects: ``v1`` or ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` (``configmaps`` for core): the scope of RV comparisons."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The URL path of the collection (all namespaces when ``namespace`` is None) or object."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{quote(namespace, safe='')}"
        elif not self.namespaced and namespace:
            self.check_namespace(namespace)
        path = f"{prefix}/{self.plural}"
        if name is not None:
            path += f"/{quote(name, safe='')}"
        return path


# The common built-ins, at the version every supported server (v1.21 and later) serves.
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PERSISTENTVOLUMECLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet")
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet")
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet")
JOBS = Resource("batch", "v1", "jobs", "Job")
CRONJOBS = Resource("batch", "v1", "cronjobs", "CronJob")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", "Ingress")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CLUSTERROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
CLUSTERROLEBINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
CUSTOMRESOURCEDEFINITIONS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
"""``events.k8s.io/v1`` Events (what ``EventRecorder`` writes); the core ``v1`` Events are the
same objects in their older form."""
