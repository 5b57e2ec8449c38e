"""Validation of written objects as the apiserver does it for built-in types.

- ``kind``/``apiVersion`` must match the endpoint (400, worded as the handlers word it);
- names: DNS-1123 subdomains, or labels for namespaces and services (422 Invalid);
- label keys and values, ConfigMap/Secret data keys;
- required fields: Pod containers with name and image, workload selectors and pod templates;
- unknown fields of the types whose fields are known here: ``fieldValidation=Strict`` refuses
  them (400 "strict decoding error"), ``Warn`` answers a ``Warning`` per field, ``Ignore`` does
  not; in every case they are dropped, as decoding into the Go types drops them.
"""

from __future__ import annotations

import re
from typing import Any, Final

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._query.write_options import WriteOptions
from informer.testing._schemas.structural import OBJECT_META_FIELDS
from informer.testing._schemas.types import TYPES, Field, root_type

__all__ = ["check_type", "prune_unknown", "validate_object"]

Json = dict[str, Any]
Error = tuple[str, str, str]

_LABEL_NAMED: Final = frozenset({"namespaces", "services"})
_DNS1123_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN: Final = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_LABEL_VALUE: Final = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_NAME_PART: Final = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_CONFIG_KEY: Final = r"[-._a-zA-Z0-9]+"
_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN}')"
)
_LABEL_MESSAGE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    f"used for validation is '{_DNS1123_LABEL}')"
)

_CONTAINER: Final = frozenset(
    {
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "ports",
        "envFrom",
        "env",
        "resources",
        "resizePolicy",
        "restartPolicy",
        "restartPolicyRules",
        "volumeMounts",
        "volumeDevices",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
        "targetContainerName",  # ephemeral containers
    }
)
_POD_SPEC: Final = frozenset(
    {
        "volumes",
        "initContainers",
        "containers",
        "ephemeralContainers",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "dnsPolicy",
        "nodeSelector",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "nodeName",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace",
        "securityContext",
        "imagePullSecrets",
        "hostname",
        "hostnameOverride",
        "subdomain",
        "affinity",
        "schedulerName",
        "tolerations",
        "hostAliases",
        "priorityClassName",
        "priority",
        "dnsConfig",
        "readinessGates",
        "runtimeClassName",
        "enableServiceLinks",
        "preemptionPolicy",
        "overhead",
        "topologySpreadConstraints",
        "setHostnameAsFQDN",
        "os",
        "hostUsers",
        "schedulingGates",
        "resourceClaims",
        "resources",
    }
)
CLOSED: Final[dict[str, frozenset[str]]] = {
    "ObjectMeta": OBJECT_META_FIELDS,
    "PodSpec": _POD_SPEC,
    "Container": _CONTAINER,
    "ContainerPort": frozenset({"containerPort", "hostPort", "hostIP", "name", "protocol"}),
    "EnvVar": frozenset({"name", "value", "valueFrom"}),
    "VolumeMount": frozenset(
        {
            "name",
            "mountPath",
            "readOnly",
            "recursiveReadOnly",
            "subPath",
            "subPathExpr",
            "mountPropagation",
        }
    ),
    "PodTemplateSpec": frozenset({"metadata", "spec"}),
    "LeaseSpec": frozenset(
        {
            "holderIdentity",
            "leaseDurationSeconds",
            "acquireTime",
            "renewTime",
            "leaseTransitions",
            "strategy",
            "preferredHolder",
        }
    ),
    "NamespaceSpec": frozenset({"finalizers"}),
}
"""Types whose fields are all known here: others are not checked for unknown fields."""

_TYPE_META: Final = frozenset({"apiVersion", "kind", "metadata"})
ROOT_FIELDS: Final[dict[tuple[str, str], frozenset[str]]] = {
    ("", "configmaps"): _TYPE_META | {"data", "binaryData", "immutable"},
    ("", "secrets"): _TYPE_META | {"data", "stringData", "type", "immutable"},
    ("", "pods"): _TYPE_META | {"spec", "status"},
    ("", "namespaces"): _TYPE_META | {"spec", "status"},
    ("coordination.k8s.io", "leases"): _TYPE_META | {"spec"},
    ("", "services"): _TYPE_META | {"spec", "status"},
    ("apps", "deployments"): _TYPE_META | {"spec", "status"},
    ("apps", "statefulsets"): _TYPE_META | {"spec", "status"},
    ("apps", "daemonsets"): _TYPE_META | {"spec", "status"},
    ("apps", "replicasets"): _TYPE_META | {"spec", "status"},
    ("batch", "jobs"): _TYPE_META | {"spec", "status"},
}
_WORKLOADS: Final = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("apps", "replicasets"),
        ("batch", "jobs"),
    }
)


def check_type(resource: Resource, obj: Json) -> None:
    """400 when the body's apiVersion or kind is not the endpoint's (absent ones are fine)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != resource.api_version:
        raise st.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({resource.api_version})"
        )
    if kind and kind != resource.kind:
        version = str(api_version or resource.version).rsplit("/", 1)[-1]
        raise st.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {resource.kind}: '
            f'the kind "{kind}" is not served at this endpoint'
        )


def prune_unknown(
    resource: Resource, obj: Json, options: WriteOptions, *, duplicates: bool = True
) -> Json:
    """``obj`` without its unknown fields; 400 with ``fieldValidation=Strict``, a warning each
    with ``Warn`` (for its duplicate fields too, unless ``duplicates`` is False: a custom
    resource's schema reports them)."""
    unknown: list[str] = []
    pruned = _prune(obj, resource, unknown)
    if duplicates:
        problems = options.field_problems(unknown)
    else:
        problems = [f'unknown field "{path}"' for path in unknown]
    if problems:
        if options.field_validation == "Strict":
            raise st.bad_request(f"strict decoding error: {', '.join(problems)}")
        if options.field_validation == "Warn":
            options.warnings.extend(problems)
    return pruned


def validate_object(
    resource: Resource, obj: Json, options: WriteOptions, *, custom: bool = False
) -> Json:
    """``obj`` without its unknown fields; raises 400 (Strict) or 422 (invalid values)."""
    pruned = prune_unknown(resource, obj, options, duplicates=not custom)
    errors = _errors(resource, pruned)
    if errors:
        name = str((pruned.get("metadata") or {}).get("name") or "")
        raise st.invalid_object(resource, resource.kind, name, errors)
    return pruned


# -- unknown fields ---------------------------------------------------------------------------


def _prune(obj: Json, resource: Resource, unknown: list[str]) -> Json:
    allowed = ROOT_FIELDS.get((resource.group, resource.plural))
    struct = root_type(resource.group, resource.plural)
    result: Json = {}
    for key, value in obj.items():
        if allowed is not None and key not in allowed:
            unknown.append(key)
            continue
        result[key] = _prune_value(value, struct.get(key), key, unknown)
    return result


def _prune_value(value: Any, field: Field | None, path: str, unknown: list[str]) -> Any:
    type_name = field.type if field is not None else None
    if isinstance(value, list):
        return [_prune_value(item, field, f"{path}[{i}]", unknown) for i, item in enumerate(value)]
    if not isinstance(value, dict) or type_name is None or (field and field.free_map):
        return value
    allowed = CLOSED.get(type_name)
    struct = TYPES.get(type_name, {})
    result: Json = {}
    for key, sub in value.items():
        if allowed is not None and key not in allowed:
            unknown.append(f"{path}.{key}")
            continue
        result[key] = _prune_value(sub, struct.get(key), f"{path}.{key}", unknown)
    return result


# -- values -----------------------------------------------------------------------------------


def _errors(resource: Resource, obj: Json) -> list[Error]:
    errors: list[Error] = []
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if isinstance(name, str) and name:
        errors.extend(_name_errors(resource, name))
    errors.extend(_label_errors(meta.get("labels"), "metadata.labels"))
    key = (resource.group, resource.plural)
    if key in (("", "configmaps"), ("", "secrets")):
        for field in ("data", "binaryData", "stringData"):
            for data_key in obj.get(field) or {}:
                if not re.fullmatch(_CONFIG_KEY, data_key):
                    errors.append(_invalid(f"{field}[{data_key}]", data_key, _config_key_message()))
    if key == ("", "pods"):
        errors.extend(_pod_spec_errors(obj.get("spec"), "spec"))
    if key in _WORKLOADS:
        spec = _mapping(obj.get("spec"))
        if key != ("batch", "jobs") and not spec.get("selector"):
            errors.append(("FieldValueRequired", "spec.selector", "Required value"))
        template = _mapping(spec.get("template"))
        template_meta = _mapping(template.get("metadata"))
        errors.extend(_label_errors(template_meta.get("labels"), "spec.template.metadata.labels"))
        errors.extend(_pod_spec_errors(template.get("spec"), "spec.template.spec"))
    return errors


def _mapping(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _name_errors(resource: Resource, name: str) -> list[Error]:
    if resource.plural in _LABEL_NAMED:
        if len(name) > 63:
            return [_invalid("metadata.name", name, "must be no more than 63 characters")]
        if not re.fullmatch(_DNS1123_LABEL, name):
            return [_invalid("metadata.name", name, _LABEL_MESSAGE)]
        return []
    if len(name) > 253:
        return [_invalid("metadata.name", name, "must be no more than 253 characters")]
    if not re.fullmatch(_DNS1123_SUBDOMAIN, name):
        return [_invalid("metadata.name", name, _SUBDOMAIN_MESSAGE)]
    return []


def _label_errors(labels: Any, field: str) -> list[Error]:
    errors: list[Error] = []
    if not isinstance(labels, dict):
        return errors
    for key, value in labels.items():
        prefix, _, part = str(key).rpartition("/")
        if (
            not part
            or len(part) > 63
            or not re.fullmatch(_NAME_PART, part)
            or (prefix and not re.fullmatch(_DNS1123_SUBDOMAIN, prefix))
        ):
            errors.append(
                _invalid(
                    field,
                    str(key),
                    "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                    "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                    "'my.name',  or '123-abc', regex used for validation is "
                    f"'{_NAME_PART}')",
                )
            )
        text = value if isinstance(value, str) else str(value)
        if len(text) > 63 or not re.fullmatch(_LABEL_VALUE, text):
            errors.append(
                _invalid(
                    field,
                    text,
                    "a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                    f"validation is '{_LABEL_VALUE}')",
                )
            )
    return errors


def _pod_spec_errors(spec: Any, path: str) -> list[Error]:
    if not isinstance(spec, dict):
        return [("FieldValueRequired", f"{path}.containers", "Required value")]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [("FieldValueRequired", f"{path}.containers", "Required value")]
    errors: list[Error] = []
    for index, container in enumerate(containers):
        at = f"{path}.containers[{index}]"
        if not isinstance(container, dict):
            errors.append(("FieldValueRequired", f"{at}.name", "Required value"))
            continue
        if not container.get("name"):
            errors.append(("FieldValueRequired", f"{at}.name", "Required value"))
        if not container.get("image"):
            errors.append(("FieldValueRequired", f"{at}.image", "Required value"))
    return errors


def _invalid(field: str, value: str, detail: str) -> Error:
    return ("FieldValueInvalid", field, f'Invalid value: "{value}": {detail}')


def _config_key_message() -> str:
    return (
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        f"'{_CONFIG_KEY}')"
    )
