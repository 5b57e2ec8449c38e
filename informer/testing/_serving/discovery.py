"""Non-resource paths: health checks, ``/version``, API discovery and OpenAPI of what is served.

- Legacy discovery (``/api``, ``/apis``, ``/api/v1``, ``/apis/G/V``) with ``singularName``,
  ``shortNames``, ``categories``, ``verbs`` and the ``status`` subresource entries.
- Aggregated discovery (``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``) for clients that
  ask for it in ``Accept`` (kubectl, client-go), answered with its own Content-Type.
- ``/version`` with every field of ``version.Info`` (the Python clients' ``VersionApi`` needs
  them all).
- ``/openapi/v3`` and ``/openapi/v2`` (see ``openapi``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from aiohttp import web

from informer.resource import NAMESPACES
from informer.testing import _status as st
from informer.testing._catalog.specs import STATUS_VERBS, ResourceSpec
from informer.testing._options import ServerOptions
from informer.testing._registry.registry import Registry
from informer.testing._serving.content import encode, prefers, respond
from informer.testing._serving.openapi import openapi_v2, openapi_v3_document, openapi_v3_index

__all__ = ["AGGREGATED_TYPE", "non_resource", "version_info"]

Json = dict[str, Any]
AGGREGATED_TYPE: Final = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def non_resource(request: web.Request, options: ServerOptions, registry: Registry) -> web.Response:
    """The answer to a GET of a path that is not a resource (404 for unknown paths)."""
    parts = [p for p in request.path.split("/") if p]
    specs = registry.specs()
    if parts[:1] == ["apis"] and len(parts) >= 2:
        if parts[1] not in {s.resource.group for s in specs}:  # no handler: Go's mux answers
            return web.Response(status=404, text="404 page not found\n", content_type="text/plain")
    if request.method.upper() != "GET":
        if parts[:1] in (["api"], ["apis"]):
            raise st.no_such_path()  # a resource not served, whatever the verb
        raise st.method_not_allowed()
    if parts in (["healthz"], ["livez"], ["readyz"]):
        return web.Response(text="ok", content_type="text/plain")
    if parts == ["version"]:
        return respond(request, encode(version_info(options)))
    if parts in (["api"], ["apis"]):
        core = parts == ["api"]
        if wants_aggregated(request.headers.get("Accept", "")):
            response = respond(request, encode(aggregated(specs, core)))
            response.content_type = "application/json"
            response.headers["Content-Type"] = AGGREGATED_TYPE
            return response
        return respond(request, encode(api_versions() if core else api_group_list(specs)))
    if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
        group, gv = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        body = api_resource_list(specs, group, gv)
        if body is not None:
            return respond(request, encode(body))
    if parts == ["openapi", "v2"]:
        if not _accepts_json(request.headers.get("Accept", "")):
            raise st.not_acceptable(["application/json"])
        return respond(request, encode(openapi_v2(specs)))
    if parts == ["openapi", "v3"]:
        return respond(request, encode(openapi_v3_index(specs)))
    if parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
        rest = parts[2:]
        group, gv = ("", rest[1]) if rest[0] == "api" else (rest[1], rest[-1])
        if (rest[0] == "api" and len(rest) == 2) or (rest[0] == "apis" and len(rest) == 3):
            doc = openapi_v3_document(specs, group, gv)
            if doc is not None:
                return respond(request, encode(doc))
    raise st.no_such_path()


def _accepts_json(accept: str) -> bool:
    """Whether an ``Accept`` header allows JSON (no header, ``*/*`` and ``application/*`` do)."""
    if not accept.strip():
        return True
    for choice in accept.split(","):
        media = choice.split(";")[0].strip().lower()
        if media in ("*/*", "application/*", "application/json"):
            return True
    return False


def wants_aggregated(accept: str) -> bool:
    """Whether ``accept`` prefers aggregated discovery (v2) over the legacy documents."""
    return prefers(accept, "APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2")


def version_info(options: ServerOptions) -> Json:
    """``version.Info`` of the personality's Kubernetes version (v1.21 for no-watch-list)."""
    minor = 21 if options.personality == "no-watch-list" else 35
    return {
        "major": "1",
        "minor": str(minor),
        "emulationMajor": "1",
        "emulationMinor": str(minor),
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": str(minor - 1),
        "gitVersion": f"v1.{minor}.0",
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def _group_versions(specs: Iterable[ResourceSpec]) -> dict[str, list[str]]:
    """Served API groups (core "" first) and their versions, preferred version first."""
    groups: dict[str, list[str]] = {}
    for spec in specs:
        r = spec.resource
        versions = groups.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return groups


def api_versions() -> Json:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def api_group_list(specs: Iterable[ResourceSpec]) -> Json:
    groups = [
        {
            "name": group,
            "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
            "preferredVersion": {"groupVersion": f"{group}/{versions[0]}", "version": versions[0]},
        }
        for group, versions in _group_versions(specs).items()
        if group
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resource_list(specs: Iterable[ResourceSpec], group: str, version: str) -> Json | None:
    """``APIResourceList`` of one group-version, or None when nothing is served there."""
    resources: list[Json] = []
    for spec in specs:
        r = spec.resource
        if (r.group, r.version) != (group, version):
            continue
        entry: Json = {
            "name": r.plural,
            "singularName": spec.singular_name,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(spec.verbs),
        }
        if spec.short_names:
            entry["shortNames"] = list(spec.short_names)
        if spec.categories:
            entry["categories"] = list(spec.categories)
        resources.append(entry)
        if r == NAMESPACES:
            resources.append(
                {
                    "name": "namespaces/finalize",
                    "singularName": "",
                    "namespaced": False,
                    "kind": "Namespace",
                    "verbs": ["update"],
                }
            )
        if spec.status_subresource:
            resources.append(
                {
                    "name": f"{r.plural}/status",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": list(STATUS_VERBS),
                }
            )
        if spec.scale is not None:
            resources.append(
                {
                    "name": f"{r.plural}/scale",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": list(STATUS_VERBS),
                }
            )
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _aggregated_resource(spec: ResourceSpec) -> Json:
    r = spec.resource
    kind = {"group": r.group, "version": r.version, "kind": r.kind}
    entry: Json = {
        "resource": r.plural,
        "responseKind": kind,
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": spec.singular_name,
        "verbs": list(spec.verbs),
    }
    if spec.short_names:
        entry["shortNames"] = list(spec.short_names)
    if spec.categories:
        entry["categories"] = list(spec.categories)
    subresources: list[Json] = []
    if spec.status_subresource:
        subresources.append(
            {"subresource": "status", "responseKind": kind, "verbs": list(STATUS_VERBS)}
        )
    if spec.scale is not None:
        subresources.append(
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": list(STATUS_VERBS),
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated(specs: Iterable[ResourceSpec], core: bool) -> Json:
    """``APIGroupDiscoveryList`` for ``/api`` (``core``) or ``/apis``."""
    specs = list(specs)
    items = []
    for group, versions in _group_versions(specs).items():
        if bool(group) == core:
            continue
        metadata: Json = {"creationTimestamp": None}
        if group:
            metadata = {"name": group, "creationTimestamp": None}
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": version,
                        "resources": [
                            _aggregated_resource(s)
                            for s in specs
                            if (s.resource.group, s.resource.version) == (group, version)
                        ],
                        "freshness": "Current",
                    }
                    for version in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
