"""CustomResourceDefinitions: what a CRD object serves, and the status the server gives it.

``served_specs(crd)`` reads ``apiextensions.k8s.io/v1`` fields (group, names, scope, versions
with ``served``, ``subresources.status``, ``additionalPrinterColumns`` and the schema) into one
``ResourceSpec`` per served version. ``validate(crd)`` refuses what the real server refuses
before serving anything (422 Invalid, with its field paths and wording). ``accepted_status``
is the status the real apiextensions controllers converge to (NamesAccepted, Established).

Several served versions are one collection, stored in the storage version: a read in another
version rewrites ``apiVersion`` (``conversion: None``); a storage version that is not served
leaves each served version its own collection.
"""

from __future__ import annotations

import json
from typing import Any

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._catalog.specs import (
    AGE_COLUMN,
    CRDS,
    NAME_COLUMN,
    Column,
    ResourceSpec,
    ScalePaths,
)
from informer.testing._schemas.cel_rules import compile_error
from informer.testing._schemas.openapi_validation import SchemaValidator

__all__ = ["accepted_status", "served_specs", "validate"]

Json = dict[str, Any]


def _names(crd: Json) -> Json:
    return (crd.get("spec") or {}).get("names") or {}


def validate(crd: Json, name: str) -> None:
    """422 Invalid for a CRD the real server would refuse (the fields our serving relies on)."""
    spec = crd.get("spec") or {}
    names = _names(crd)
    group = spec.get("group") or ""
    errors: list[tuple[str, str, str]] = []
    plural = names.get("plural") or ""
    if not group:
        errors.append(st.required("spec.group", ""))
    if not plural:
        errors.append(st.required("spec.names.plural", ""))
    if not names.get("kind"):
        errors.append(st.required("spec.names.kind", ""))
    if plural and group and name != f"{plural}.{group}":
        errors.append(
            (
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errors.append(
            st.not_supported("spec.scope", str(spec.get("scope") or ""), ["Cluster", "Namespaced"])
        )
    versions = spec.get("versions") or []
    if not versions:
        errors.append(
            st.required("spec.versions", "must have exactly one version marked as storage version")
        )
    elif sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        errors.append(
            (
                "FieldValueInvalid",
                "spec.versions",
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: "
                "must have exactly one version marked as storage version",
            )
        )
    for index, version in enumerate(versions):
        if not isinstance(version, dict):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            where = f"spec.versions[{index}].schema.openAPIV3Schema"
            errors.extend(_schema_errors(schema, where, "root"))
    if errors:
        raise st.invalid_object(CRDS, CRDS.kind, name, errors)


def _schema_errors(node: Json, path: str, place: str) -> list[tuple[str, str, str]]:
    """What the apiextensions server refuses in a v1 schema node (structural-schema rules the
    served objects depend on): a missing ``type``, ``uniqueItems: true``, ``properties`` with
    ``additionalProperties``."""
    errors: list[tuple[str, str, str]] = []
    typed = (
        node.get("type")
        or node.get("x-kubernetes-int-or-string")
        or node.get("x-kubernetes-preserve-unknown-fields")
    )
    if not typed:
        detail = {
            "root": "must not be empty at the root",
            "property": "must not be empty for specified object fields",
            "items": "must not be empty for specified array items",
        }.get(place)
        if detail:
            errors.append(st.required(f"{path}.type", detail))
    elif place == "root" and node.get("type") not in (None, "object"):
        errors.append(
            (
                "FieldValueInvalid",
                f"{path}.type",
                f'Invalid value: "{node.get("type")}": must be object at the root',
            )
        )
    if node.get("uniqueItems") is True:
        errors.append(
            st.forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props = node.get("properties")
    extra = node.get("additionalProperties")
    if isinstance(props, dict) and props and extra not in (None, False):
        errors.append(
            st.forbidden(
                f"{path}.additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if "default" in node and node.get("default") is not None:
        try:
            errors.extend(SchemaValidator(node).validate(node["default"], f"{path}.default"))
        except ImportError:  # without the schemas extra defaults are not checked
            pass
    rules = node.get("x-kubernetes-validations")
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        text = rule.get("rule") if isinstance(rule, dict) else None
        where = f"{path}.x-kubernetes-validations[{index}].rule"
        if not isinstance(text, str) or not text.strip():
            errors.append(st.required(where, ""))
            continue
        why = compile_error(text)
        if why is not None:
            errors.append(("FieldValueInvalid", where, f"Invalid value: {json.dumps(text)}: {why}"))
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                errors.extend(_schema_errors(sub, f"{path}.properties[{key}]", "property"))
    if isinstance(node.get("items"), dict):
        errors.extend(_schema_errors(node["items"], f"{path}.items", "items"))
    if isinstance(extra, dict):
        errors.extend(_schema_errors(extra, f"{path}.additionalProperties", "additional"))
    return errors


def _printer_columns(version: Json) -> tuple[Column, ...]:
    extra = version.get("additionalPrinterColumns") or []
    if not extra:
        return (NAME_COLUMN, AGE_COLUMN)
    columns = [NAME_COLUMN]
    for column in extra:
        if not isinstance(column, dict) or not column.get("jsonPath"):
            continue
        columns.append(
            Column(
                str(column.get("name") or ""),
                str(column.get("type") or "string"),
                str(column["jsonPath"]).lstrip("."),
                str(column.get("description") or ""),
                str(column.get("format") or ""),
                int(column.get("priority") or 0),
            )
        )
    columns.append(AGE_COLUMN)
    return tuple(columns)


def served_specs(crd: Json) -> list[ResourceSpec]:
    """One ``ResourceSpec`` per served version of ``crd`` (validated)."""
    spec = crd.get("spec") or {}
    names = _names(crd)
    specs = []
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    stored = next((v for v in versions if v.get("storage")), None)
    storage_version = (
        str(stored.get("name") or "") if stored is not None and stored.get("served", True) else ""
    )
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        status = "status" in subresources
        scale = subresources.get("scale")
        scale_paths = (
            ScalePaths(
                str(scale.get("specReplicasPath") or "").lstrip("."),
                str(scale.get("statusReplicasPath") or "").lstrip("."),
                str(scale.get("labelSelectorPath") or "").lstrip("."),
            )
            if isinstance(scale, dict) and scale.get("specReplicasPath")
            else None
        )
        resource = Resource(
            str(spec["group"]),
            str(version.get("name") or "v1"),
            str(names["plural"]),
            str(names["kind"]),
            namespaced=spec.get("scope") == "Namespaced",
        )
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        specs.append(
            ResourceSpec(
                resource,
                singular=str(names.get("singular") or names["kind"].lower()),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status_subresource=status,
                scale=scale_paths,
                generation="spec" if status else "all",
                columns=_printer_columns(version),
                custom=True,
                storage_version=(storage_version if storage_version != resource.version else ""),
                schema=schema if isinstance(schema, dict) else None,
                selectable_fields=tuple(
                    str(f["jsonPath"]).lstrip(".")
                    for f in version.get("selectableFields") or []
                    if isinstance(f, dict) and f.get("jsonPath")
                ),
            )
        )
    return specs


def accepted_status(crd: Json, now: str) -> Json:
    """The status of an established CRD: names accepted, established, its stored version."""
    spec = crd.get("spec") or {}
    names = dict(_names(crd))
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    stored = [v.get("name") for v in spec.get("versions") or [] if v.get("storage")]

    def condition(type_: str, reason: str, message: str) -> Json:
        return {
            "type": type_,
            "status": "True",
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    return {
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition(
                "Established", "InitialNamesAccepted", "the initial names have been accepted"
            ),
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    }
