"""``/openapi/v3`` and ``/openapi/v2`` documents of the served resources.

Enough for kubectl: every resource path carries ``x-kubernetes-group-version-kind`` and its PATCH
the ``fieldValidation`` query parameter, so kubectl's ``--validate`` (strict by default) leaves
validation to the server (``fieldValidation=Strict``) instead of validating client-side, and
``kubectl apply`` computes strategic merge patches of built-in types from its compiled-in types
(the PATCH request bodies do not list ``application/strategic-merge-patch+json``). Schemas are
the published ones of the built-ins when the ``openapi`` extra (kubernetes-validate) is
installed (``builtin_schemas``), else minimal and valid: ObjectMeta, then open
``spec``/``status``; a custom resource's schema is its CRD's. Version 2 is served as JSON
only: a request accepting only protobuf (client-go's ``OpenAPISchema``) is 406, as from a
server that cannot encode it (``discovery``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from informer.testing._catalog.specs import ResourceSpec
from informer.testing._schemas.builtin_schemas import builtin_schemas

__all__ = ["openapi_v2", "openapi_v3_document", "openapi_v3_index"]

Json = dict[str, Any]
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META_SCHEMA: Final[Json] = {
    "type": "object",
    "description": "ObjectMeta is metadata that all persisted resources must have.",
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer", "format": "int64"},
        "creationTimestamp": {"type": "string", "format": "date-time"},
        "deletionTimestamp": {"type": "string", "format": "date-time"},
        "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "managedFields": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
}
_PATCH_TYPES: Final[tuple[str, ...]] = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_QUERY_PARAMS: Final[tuple[str, ...]] = ("dryRun", "fieldManager", "fieldValidation")


def _schema_name(spec: ResourceSpec) -> str:
    """The OpenAPI definition name of a resource's objects (the published one of a built-in;
    else the reversed group, as Kubernetes names custom resources')."""
    r = spec.resource
    published = builtin_schemas()
    if not spec.custom and published is not None:
        name = published.name_of(r.group, r.version, r.kind)
        if name is not None:
            return name
    group = r.group or "core"
    if "." in group:
        group = ".".join(reversed(group.split(".")))
    elif spec.custom is False:
        group = f"io.k8s.api.{group}"
    return f"{group}.{r.version}.{r.kind}"


def _object_schema(spec: ResourceSpec, ref_prefix: str) -> Json:
    r = spec.resource
    gvk = [{"group": r.group, "version": r.version, "kind": r.kind}]
    if spec.schema is not None:
        schema = dict(spec.schema)
        schema["x-kubernetes-group-version-kind"] = gvk
        return schema
    published = builtin_schemas()
    if not spec.custom and published is not None:
        name = published.name_of(r.group, r.version, r.kind)
        if name is not None:
            return published.closure([name], ref_prefix)[name]
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": f"{ref_prefix}{_OBJECT_META}"},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": gvk,
    }


def _paths(spec: ResourceSpec, v3: bool) -> dict[str, Json]:
    r = spec.resource
    prefix = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
    if r.namespaced:
        prefix += "/namespaces/{namespace}"
    gvk = {"group": r.group, "version": r.version, "kind": r.kind}
    ref = ("#/components/schemas/" if v3 else "#/definitions/") + _schema_name(spec)

    def parameters() -> list[Json]:
        found: list[Json] = []
        for name in _QUERY_PARAMS:
            param: Json = {"name": name, "in": "query", "description": name}
            if v3:
                param["schema"] = {"type": "string", "uniqueItems": True}
            else:
                param["type"] = "string"
                param["uniqueItems"] = True
            found.append(param)
        return found

    def operation(action: str, patch: bool = False) -> Json:
        op: Json = {
            "operationId": f"{action}{r.kind}",
            "parameters": parameters(),
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }
        if v3:
            types = _PATCH_TYPES if patch else ("application/json",)
            op["requestBody"] = {
                "content": {t: {"schema": {"$ref": ref}} for t in types},
                "required": True,
            }
            op["responses"]["200"]["content"] = {"application/json": {"schema": {"$ref": ref}}}
        else:
            op["consumes"] = list(_PATCH_TYPES) if patch else ["application/json"]
            op["parameters"] = [
                {"name": "body", "in": "body", "required": True, "schema": {"$ref": ref}},
                *op["parameters"],
            ]
            op["responses"]["200"]["schema"] = {"$ref": ref}
        return op

    item = {
        "get": operation("get"),
        "put": operation("put"),
        "patch": operation("patch", patch=True),
        "delete": operation("delete"),
    }
    paths = {
        f"{prefix}/{r.plural}": {"get": operation("list"), "post": operation("post")},
        f"{prefix}/{r.plural}/{{name}}": item,
    }
    if spec.status_subresource:
        paths[f"{prefix}/{r.plural}/{{name}}/status"] = {
            "get": operation("get"),
            "put": operation("put"),
            "patch": operation("patch", patch=True),
        }
    return paths


def _shared(ref_prefix: str, specs: list[ResourceSpec]) -> Json:
    """The definitions the objects' schemas reference: ObjectMeta (the published one with
    everything it references, when available) and the built-ins' nested types."""
    published = builtin_schemas()
    if published is None:
        return {_OBJECT_META: _META_SCHEMA}
    names = [_OBJECT_META]
    for spec in specs:
        if not spec.custom:
            name = published.name_of(spec.resource.group, spec.resource.version, spec.resource.kind)
            if name is not None:
                names.append(name)
    return published.closure(names, ref_prefix)


def openapi_v3_index(specs: Iterable[ResourceSpec]) -> Json:
    """``/openapi/v3``: one entry per served group-version."""
    paths: Json = {}
    for spec in specs:
        r = spec.resource
        key = f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}"
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}"}
    return {"paths": paths}


def _paths_and_schemas(specs: list[ResourceSpec], ref: str, *, v3: bool) -> tuple[Json, Json]:
    """The paths of ``specs`` and the schemas they refer to (under ``ref``), in either document."""
    paths: Json = {}
    schemas: Json = _shared(ref, specs)
    for spec in specs:
        paths.update(_paths(spec, v3=v3))
        schemas[_schema_name(spec)] = _object_schema(spec, ref)
    return paths, schemas


def openapi_v3_document(specs: Iterable[ResourceSpec], group: str, version: str) -> Json | None:
    """The OpenAPI v3 document of one group-version, or None when nothing is served there."""
    selected = [s for s in specs if (s.resource.group, s.resource.version) == (group, version)]
    if not selected:
        return None
    paths, schemas = _paths_and_schemas(selected, "#/components/schemas/", v3=True)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_v2(specs: Iterable[ResourceSpec]) -> Json:
    """The swagger 2.0 document of everything served (JSON; no protobuf encoding)."""
    paths, definitions = _paths_and_schemas(list(specs), "#/definitions/", v3=False)
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "definitions": definitions,
    }
