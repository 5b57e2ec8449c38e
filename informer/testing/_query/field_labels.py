"""The field labels each resource can be selected by, as the apiserver converts and matches them.

A ``fieldSelector`` term names a field label; the apiserver first converts it with the kind's
field label conversion function (``pkg/apis/<group>/<version>/conversion.go``; 400 BadRequest
with that function's message for a label it does not know), then matches it against the field
set of the object (the registry's ``GetAttrs`` / ``ToSelectableFields``). Kinds without a
conversion function take ``runtime.DefaultMetaV1FieldSelectorConversion`` (``metadata.name``
and ``metadata.namespace`` only); custom resources accept ``metadata.name``,
``metadata.namespace`` (namespaced ones) and their CRD version's ``selectableFields``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from informer.resource import NAMESPACES, PODS, SECRETS, Resource

__all__ = ["FieldLabels", "field_labels"]

Getter = Callable[[Mapping[str, Any]], str]


def _text(value: Any) -> str:
    """A field value as the field set holds it (Go's string, FormatBool, Itoa)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _path(path: str, default: Any = None) -> Getter:
    keys = path.split(".")

    def get(obj: Mapping[str, Any]) -> str:
        node: Any = obj
        for key in keys:
            if not isinstance(node, Mapping):
                return _text(default)
            node = node.get(key)
        return _text(default if node is None else node)

    return get


def _pod_ip(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    ips = status.get("podIPs") if isinstance(status, Mapping) else None
    if isinstance(ips, list) and ips and isinstance(ips[0], Mapping):
        return _text(ips[0].get("ip"))
    return _text(status.get("podIP") if isinstance(status, Mapping) else None)


def _event_source(obj: Mapping[str, Any]) -> str:
    return _path("source.component")(obj) or _path("reportingComponent")(obj)


def _none(_: Mapping[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class FieldLabels:
    """The field labels of one kind: label -> (the label it converts to, its getter)."""

    getters: Mapping[str, Getter]
    default_conversion: bool = False
    """Labels refused with ``DefaultMetaV1FieldSelectorConversion``'s message."""

    def getter(self, label: str) -> Getter | None:
        return self.getters.get(label)

    def unsupported(self, label: str) -> str:
        """The conversion function's error for a label it does not know."""
        if self.default_conversion:
            return (
                f'"{label}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"'
            )
        return f"field label not supported: {label}"


_NAME: Final = _path("metadata.name")
_NAMESPACE: Final = _path("metadata.namespace")
_META: Final[dict[str, Getter]] = {"metadata.name": _NAME, "metadata.namespace": _NAMESPACE}

_EVENT_FIELDS: Final[dict[str, Getter]] = {
    "involvedObject.kind": _path("involvedObject.kind"),
    "involvedObject.namespace": _path("involvedObject.namespace"),
    "involvedObject.name": _path("involvedObject.name"),
    "involvedObject.uid": _path("involvedObject.uid"),
    "involvedObject.apiVersion": _path("involvedObject.apiVersion"),
    "involvedObject.resourceVersion": _path("involvedObject.resourceVersion"),
    "involvedObject.fieldPath": _path("involvedObject.fieldPath"),
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _event_source,
    "type": _path("type"),
}

_BUILTIN: Final[dict[tuple[str, str], dict[str, Getter]]] = {
    (PODS.group, PODS.kind): {
        **_META,
        "spec.nodeName": _path("spec.nodeName"),
        "spec.host": _path("spec.nodeName"),  # converted to spec.nodeName
        "spec.restartPolicy": _path("spec.restartPolicy"),
        "spec.schedulerName": _path("spec.schedulerName"),
        "spec.serviceAccountName": _path("spec.serviceAccountName"),
        "spec.hostNetwork": _path("spec.hostNetwork", False),
        "status.phase": _path("status.phase"),
        "status.podIP": _pod_ip,
        "status.podIPs": _none,  # accepted by the conversion, absent from the field set
        "status.nominatedNodeName": _path("status.nominatedNodeName"),
    },
    ("", "Node"): {
        "metadata.name": _NAME,
        "spec.unschedulable": _path("spec.unschedulable", False),
    },
    ("", "ReplicationController"): {**_META, "status.replicas": _path("status.replicas", 0)},
    ("", "Event"): {**_META, **_EVENT_FIELDS},
    (NAMESPACES.group, NAMESPACES.kind): {
        "metadata.name": _NAME,
        "status.phase": _path("status.phase"),
    },
    (SECRETS.group, SECRETS.kind): {**_META, "type": _path("type")},
    ("", "Service"): {
        **_META,
        "spec.clusterIP": _path("spec.clusterIP"),
        "spec.type": _path("spec.type"),
    },
    ("batch", "Job"): {**_META, "status.successful": _path("status.succeeded", 0)},
    ("certificates.k8s.io", "CertificateSigningRequest"): {
        "metadata.name": _NAME,
        "spec.signerName": _path("spec.signerName"),
    },
    ("events.k8s.io", "Event"): {
        **_META,
        "reason": _path("reason"),
        "regarding.kind": _path("regarding.kind"),
        "regarding.namespace": _path("regarding.namespace"),
        "regarding.name": _path("regarding.name"),
        "regarding.uid": _path("regarding.uid"),
        "regarding.apiVersion": _path("regarding.apiVersion"),
        "regarding.resourceVersion": _path("regarding.resourceVersion"),
        "regarding.fieldPath": _path("regarding.fieldPath"),
        "reportingController": _path("reportingController"),
        "type": _path("type"),
    },
}


def field_labels(
    resource: Resource, *, custom: bool = False, selectable: tuple[str, ...] = ()
) -> FieldLabels:
    """The field labels ``resource`` is selectable by (``selectable``: a custom resource's
    ``selectableFields`` paths, without the leading dot)."""
    if custom:
        getters: dict[str, Getter] = {"metadata.name": _NAME}
        if resource.namespaced:
            getters["metadata.namespace"] = _NAMESPACE
        for path in selectable:
            getters[path] = _path(path)
        return FieldLabels(getters)
    known = _BUILTIN.get((resource.group, resource.kind))
    if known is not None:
        return FieldLabels(known)
    return FieldLabels(_META, default_conversion=True)
