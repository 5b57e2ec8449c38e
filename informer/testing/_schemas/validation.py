"""Validation of written objects as the apiserver does it for built-in types.

- ``kind``/``apiVersion`` must match the endpoint (400, worded as the handlers word it);
- names: DNS-1123 subdomains, or labels for namespaces and services (422 Invalid);
- label keys and values, ConfigMap/Secret data keys;
- required fields: Pod containers with name and image, workload selectors and pod templates;
- unknown fields (from the published schemas, ``known_fields``) and fields named twice:
  ``fieldValidation=Strict`` refuses them (400 "strict decoding error", 422 for a patch),
  ``Warn`` answers a ``Warning`` each, ``Ignore`` does not; unknown fields are dropped in every
  case, as decoding into the Go types drops them. Server-side apply refuses unknown fields
  whatever the directive (``check_applied``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._query.write_options import WriteOptions
from informer.testing._schemas import structural
from informer.testing._schemas.go_format import go_print
from informer.testing._schemas.known_fields import (
    object_meta_node,
    prune,
    schema_duplicates,
    strict_problems,
    type_node,
    typed_problems,
)
from informer.testing._schemas.quantities import canonical_quantities
from informer.testing._schemas.quantity import QuantityError
from informer.testing._schemas.resource_requirements import resource_errors
from informer.testing._schemas.webhook_configurations import webhook_configuration_errors

__all__ = ["check_applied", "check_type", "prune_unknown", "validate_object"]

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

_WEBHOOK_CONFIGURATIONS: Final = frozenset(
    {
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    }
)

_ROUNDED_LISTS: Final = frozenset({"", "apps", "batch", "extensions", "storage.k8s.io"})
"""Groups whose defaulters round resource lists up to 1m (``SetDefaults_ResourceList``)."""

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
    resource: Resource, obj: Json, options: WriteOptions, *, custom: bool = False
) -> Json:
    """``obj`` without its unknown fields (a custom resource's: in its metadata; its schema
    prunes the rest). Under ``fieldValidation=Strict`` they, and fields the body names twice,
    are a 400 (422 for a patch: the patched object is what is decoded); ``Warn`` (a built-in's
    default) answers a warning each."""
    if custom:
        meta_node = object_meta_node()
        meta = obj.get("metadata")
        if meta_node is None or not isinstance(meta, dict):
            return obj
        problems, unknown = strict_problems(meta, meta_node, "metadata")
        _refuse(resource, obj, problems, options, custom=True)
        return {**obj, "metadata": prune(meta, meta_node)} if unknown else obj
    node = type_node(resource.group, resource.version, resource.kind)
    if node is None:
        return obj
    if options.patch_type:
        problems, unknown = strict_problems(obj, node)
        problems = options.patch_problems + problems
    elif options.document is not None:
        problems, unknown = strict_problems(options.document, node)
    else:
        problems, unknown = strict_problems(obj, node)
    _refuse(resource, obj, problems, options)
    pruned: Json = prune(obj, node) if unknown else obj
    return pruned


def _refuse(
    resource: Resource,
    obj: Json,
    problems: list[str],
    options: WriteOptions,
    *,
    custom: bool = False,
) -> None:
    """Raise the strict decoder's error, or add its warnings, as ``fieldValidation`` says."""
    if not problems:
        return
    mode = options.field_validation
    if custom and not options.field_validation_given and not options.apply:
        mode = "Ignore"  # a v1.36 server pruned a custom resource silently without it
    if mode == "Warn":
        options.warnings.extend(problems)
    if mode != "Strict":
        return
    raise _decode_failure(resource, obj, f"strict decoding error: {', '.join(problems)}", options)


def _decode_failure(
    resource: Resource, obj: Json, error: str, options: WriteOptions
) -> st.StatusError:
    """The answer to a body the decoder refused with ``error``: 400 "cannot be handled as" for
    a body decoded as the object; for a patch, 422 quoting the patched object (JSON and merge
    patches) or the patch (strategic merge, Go's ``%+v`` of it); for server-side apply, 500:
    the merged object failed its conversion to the typed object."""
    if options.apply:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        where = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        group, _, version = resource.api_version.rpartition("/")
        gvk = f"{group}/{version}, Kind={resource.kind}"
        message = (
            f"failed to convert new object ({where}; {gvk}) to proper version: unable to "
            f"convert unstructured object to {gvk}: {error}"
        )
        return st.StatusError(st.status(500, "", message))
    if options.patch_type:
        if options.patch_type == "strategic":
            value = go_print(options.patch)
        else:
            value = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        return st.invalid_patch(value, error)
    kind = resource.kind
    version = str(obj.get("apiVersion") or resource.version).rsplit("/", 1)[-1]
    return st.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {error}')


def decode_quantities(resource: Resource, obj: Json, options: WriteOptions) -> Json:
    """``obj`` with its quantities canonical (a built-in's); a malformed one is the decoder's
    error (``_decode_failure``)."""
    node = type_node(resource.group, resource.version, resource.kind)
    if node is None:
        return obj
    try:
        decoded: Json = canonical_quantities(
            obj, node, round_lists=resource.group in _ROUNDED_LISTS
        )
    except QuantityError as error:
        raise _decode_failure(resource, obj, str(error), options) from None
    return decoded


def validate_object(
    resource: Resource, obj: Json, options: WriteOptions, *, custom: bool = False
) -> Json:
    """``obj`` as decoded: without its unknown fields, its quantities canonical; raises 400
    (Strict, a malformed quantity) or 422 (invalid values)."""
    if not custom:
        obj = decode_quantities(resource, obj, options)
    pruned = prune_unknown(resource, obj, options, custom=custom)
    errors = _errors(resource, pruned)
    if errors:
        name = str((pruned.get("metadata") or {}).get("name") or "")
        raise st.invalid_object(resource, resource.kind, name, errors)
    return pruned


def check_applied(resource: Resource, body: Json, name: str, schema: Json | None = None) -> None:
    """Server-side apply's typed conversion of the applied configuration: a field the type
    does not declare (a built-in's published schema; a custom resource's structural
    ``schema``), or an item a keyed list or a set names twice (``.spec.containers: duplicate
    entries for key [name="c"]``; a custom resource's by its schema's list types), fails it
    whatever ``fieldValidation`` says (500 without a reason: v1.36 returns the error as no
    Status, kubernetes#139253), before any strict check."""
    if schema is not None:
        _, unknown = structural.prune(body, schema)
        reasons = [f".{path}: field not declared in schema" for path in unknown]
        meta, meta_node = body.get("metadata"), object_meta_node()
        if isinstance(meta, dict) and meta_node is not None:
            reasons += [r for r in typed_problems(meta, meta_node, ".metadata") if "duplicate" in r]
        reasons += schema_duplicates({k: v for k, v in body.items() if k != "metadata"}, schema)
    else:
        node = type_node(resource.group, resource.version, resource.kind)
        reasons = typed_problems(body, node) if node is not None else []
    if not reasons:
        return
    meta = body.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    where = f"{meta.get('namespace') or ''}/{meta.get('name') or name}"
    group, _, version = str(body.get("apiVersion") or resource.api_version).rpartition("/")
    gvk = f"{group}/{version}, Kind={body.get('kind') or resource.kind}"
    if len(reasons) == 1:
        listed = reasons[0]
    else:
        listed = "errors:\n" + "\n".join(f"  {reason}" for reason in reasons)
    message = f"failed to create typed patch object ({where}; {gvk}): {listed}"
    raise st.StatusError(st.status(500, "", message))


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
        errors.extend(_pod_spec_errors(obj.get("spec"), "spec", pod=True))
    if key in _WEBHOOK_CONFIGURATIONS:
        mutating = key[1] == "mutatingwebhookconfigurations"
        errors.extend(webhook_configuration_errors(obj, mutating=mutating))
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


def _pod_spec_errors(spec: Any, path: str, *, pod: bool = False) -> list[Error]:
    """Containers named and with an image, their resources valid; ``pod``: validated as a Pod
    is, after its defaulters made limits the requests where none are named."""
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
        errors.extend(resource_errors(container.get("resources"), f"{at}.resources", pod))
    for index, container in enumerate(_list(spec.get("initContainers"))):
        if isinstance(container, dict):
            at = f"{path}.initContainers[{index}].resources"
            errors.extend(resource_errors(container.get("resources"), at, pod))
    return errors


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _invalid(field: str, value: str, detail: str) -> Error:
    return ("FieldValueInvalid", field, f'Invalid value: "{value}": {detail}')


def _config_key_message() -> str:
    return (
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        f"'{_CONFIG_KEY}')"
    )
