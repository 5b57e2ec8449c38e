"""What the writes need to know of the built-in types' structure: which lists merge by key
(``patchMergeKey`` for strategic merge patch, ``listMapKeys`` for server-side apply), which are
sets of primitives, which structs keep only the keys a patch names (``retainKeys``), and which
maps are free-form (labels, data). Lists not described are atomic; maps not described merge
field by field. Covers the core, apps, batch and coordination types the server serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ROOTS", "TYPES", "Field", "root_type"]

ListKind = Literal["atomic", "map", "set"]


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct: its type, and for lists how they merge."""

    type: str | None = None
    """The struct type of the field (or of its list items / map values), if described."""
    list: ListKind = "atomic"
    merge_key: str = ""
    """Strategic merge patch's ``patchMergeKey`` (lists of kind "map")."""
    keys: tuple[str, ...] = ()
    """Server-side apply's ``listMapKeys`` (default: the merge key)."""
    retain_keys: bool = False
    """``patchStrategy: retainKeys``: a patch replaces the union members it does not name."""
    free_map: bool = False
    """A map of arbitrary keys (labels, data), not a struct."""
    atomic: bool = False
    """An object applied and owned as one value (``x-kubernetes-map-type: atomic``)."""

    @property
    def list_keys(self) -> tuple[str, ...]:
        return self.keys or ((self.merge_key,) if self.merge_key else ())


def _by(key: str, type_: str | None = None, *keys: str, retain: bool = False) -> Field:
    return Field(type_, "map", key, keys, retain)


_FREE = Field(free_map=True)
_SET = Field(list="set")
_CONDITIONS = _by("type")

TYPES: Final[dict[str, dict[str, Field]]] = {
    "ObjectMeta": {
        "labels": _FREE,
        "annotations": _FREE,
        "finalizers": _SET,
        "ownerReferences": _by("uid"),
    },
    "LabelSelector": {"matchLabels": _FREE},
    "PodTemplateSpec": {"metadata": Field("ObjectMeta"), "spec": Field("PodSpec")},
    "PodSpec": {
        "containers": _by("name", "Container"),
        "initContainers": _by("name", "Container"),
        "ephemeralContainers": _by("name", "Container"),
        "volumes": _by("name", None, retain=True),
        "imagePullSecrets": _by("name"),
        "hostAliases": _by("ip"),
        "topologySpreadConstraints": _by("topologyKey", None, "topologyKey", "whenUnsatisfiable"),
        "resourceClaims": _by("name", None, retain=True),
        "schedulingGates": _by("name"),
        "nodeSelector": _FREE,
        "overhead": _FREE,
    },
    "Container": {
        "ports": _by("containerPort", "ContainerPort", "containerPort", "protocol"),
        "env": _by("name", "EnvVar"),
        "volumeMounts": _by("mountPath", "VolumeMount"),
        "volumeDevices": _by("devicePath"),
        "resources": Field("ResourceRequirements"),
    },
    "ResourceRequirements": {"limits": _FREE, "requests": _FREE, "claims": _by("name")},
    "PodStatus": {
        "conditions": _CONDITIONS,
        "podIPs": _by("ip"),
        "hostIPs": _by("ip"),
    },
    "WorkloadSpec": {  # Deployment, StatefulSet, DaemonSet, ReplicaSet, Job specs
        "selector": Field("LabelSelector"),
        "template": Field("PodTemplateSpec"),
    },
    "DeploymentSpec": {
        "selector": Field("LabelSelector"),
        "template": Field("PodTemplateSpec"),
        "strategy": Field(retain_keys=True),
    },
    "ConditionsStatus": {"conditions": _CONDITIONS},
    "ServiceSpec": {
        "ports": _by("port", None, "port", "protocol"),
        "selector": _FREE,
    },
}

_CONFIG_DATA: Final = {"data": _FREE, "binaryData": _FREE, "stringData": _FREE}
_WORKLOAD_STATUS: Final = Field("ConditionsStatus")

ROOTS: Final[dict[tuple[str, str], dict[str, Field]]] = {
    ("", "pods"): {"spec": Field("PodSpec"), "status": Field("PodStatus")},
    ("", "podtemplates"): {"template": Field("PodTemplateSpec")},
    ("", "replicationcontrollers"): {
        "spec": Field("WorkloadSpec"),
        "status": _WORKLOAD_STATUS,
    },
    ("", "configmaps"): _CONFIG_DATA,
    ("", "secrets"): _CONFIG_DATA,
    ("", "services"): {"spec": Field("ServiceSpec"), "status": _WORKLOAD_STATUS},
    ("", "namespaces"): {"spec": Field("NamespaceSpec"), "status": _WORKLOAD_STATUS},
    ("coordination.k8s.io", "leases"): {"spec": Field("LeaseSpec")},
    ("", "nodes"): {"status": _WORKLOAD_STATUS},
    ("apps", "deployments"): {"spec": Field("DeploymentSpec"), "status": _WORKLOAD_STATUS},
    ("apps", "statefulsets"): {"spec": Field("WorkloadSpec"), "status": _WORKLOAD_STATUS},
    ("apps", "daemonsets"): {"spec": Field("WorkloadSpec"), "status": _WORKLOAD_STATUS},
    ("apps", "replicasets"): {"spec": Field("WorkloadSpec"), "status": _WORKLOAD_STATUS},
    ("batch", "jobs"): {"spec": Field("WorkloadSpec"), "status": _WORKLOAD_STATUS},
}


def root_type(group: str, plural: str) -> dict[str, Field]:
    """The top-level fields of a resource's objects (metadata is always ``ObjectMeta``)."""
    return {"metadata": Field("ObjectMeta"), **ROOTS.get((group, plural), {})}
