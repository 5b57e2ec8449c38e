"""Non-resource paths: health checks, ``/version`` and API discovery of the served resources."""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from informer.testing import _status as st
from informer.testing._content import encode, respond
from informer.testing._options import ServerOptions
from informer.testing._registry import Registry

__all__ = ["non_resource"]

Json = dict[str, Any]

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_SHORT_NAMES: Final[dict[tuple[str, str], list[str]]] = {
    ("", "configmaps"): ["cm"],
    ("", "namespaces"): ["ns"],
    ("", "pods"): ["po"],
}
"""Discovery's ``shortNames`` of the built-ins, as a real kube-apiserver lists them."""


def non_resource(request: web.Request, options: ServerOptions, registry: Registry) -> web.Response:
    """The answer to a GET of a path that is not a resource (404 for unknown paths)."""
    parts = [p for p in request.path.split("/") if p]
    if request.method.upper() != "GET":
        raise st.method_not_allowed()
    if parts in (["healthz"], ["livez"], ["readyz"]):
        return web.Response(text="ok", content_type="text/plain")
    if parts == ["version"]:
        return respond(request, encode(version(options)))
    if parts == ["api"]:
        return respond(
            request,
            encode({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        )
    if parts == ["apis"]:
        return respond(request, encode(group_list(registry)))
    if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
        group, gv = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        body = resource_list(registry, group, gv)
        if body is not None:
            return respond(request, encode(body))
    raise st.no_such_path()


def version(options: ServerOptions) -> Json:
    """The ``/version`` body of the personality's Kubernetes version."""
    old = options.personality == "no-watch-list"
    return {
        "major": "1",
        "minor": "21" if old else "35",
        "gitVersion": "v1.21.0" if old else "v1.35.0",
        "platform": "informer/testing",
    }


def group_list(registry: Registry) -> Json:
    """``/apis``: the served groups with their versions (the first registered is preferred)."""
    groups: dict[str, list[str]] = {}
    for group, gv, _ in registry.kinds:
        if group and gv not in groups.setdefault(group, []):
            groups[group].append(gv)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": g,
                "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
            }
            for g, vs in groups.items()
        ],
    }


def resource_list(registry: Registry, group: str, gv: str) -> Json | None:
    """``/api/v1`` or ``/apis/G/V``: the APIResourceList, None when nothing is served there."""
    resources = [k.resource for (g, v, _), k in registry.kinds.items() if g == group and v == gv]
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{gv}" if group else gv,
        "resources": [
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                **(
                    {"shortNames": _SHORT_NAMES[(group, r.plural)]}
                    if (group, r.plural) in _SHORT_NAMES
                    else {}
                ),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(_VERBS),
            }
            for r in resources
        ],
    }
