"""Resolve a resource name the way ``kubectl`` does, through the cluster's discovery documents.

``await discover(api, "deployments.apps")`` (also ``Resource.discover``) accepts:

- a plural, singular, short name or kind: ``configmaps``, ``configmap``, ``cm``, ``ConfigMap``;
- ``NAME.GROUP`` or ``NAME.VERSION.GROUP``: ``deployments.apps``, ``deployments.v1.apps``;
- ``GROUP/VERSION/PLURAL`` (``VERSION/PLURAL`` for the core group): ``apps/v1/deployments``.

It reads ``/api``, ``/api/v1``, ``/apis`` and the ``/apis/GROUP/VERSION`` lists it needs, so custom
resources work and the kind and scope come from the server. Without a group, the core group wins,
then the groups in the server's priority order (the order of ``/apis``), each at its preferred
version, as kubectl's RESTMapper does. A name nobody serves raises ``UnknownResource``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from informer.errors import ApiError
from informer.resource import Resource, _register_discoverer
from informer.transport import Transport

__all__ = ["DiscoveryError", "UnknownResource", "discover"]


class DiscoveryError(Exception):
    """The resource name could not be resolved."""


class UnknownResource(DiscoveryError, LookupError):
    """No group/version of the server serves a resource of that name (kubectl's wording)."""

    def __init__(self, name: str) -> None:
        super().__init__(f'the server doesn\'t have a resource type "{name}"')
        self.name = name


@dataclass(frozen=True, slots=True)
class _Query:
    """What the user asked for: a name, and the group and version when spelled out."""

    name: str
    group: str | None = None
    version: str | None = None


@dataclass(frozen=True, slots=True)
class _GroupVersion:
    group: str
    version: str
    preferred: bool

    @property
    def path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


def _queries(spelled: str) -> list[_Query]:
    """The readings of ``spelled``, most likely first."""
    text = spelled.strip()
    if not text:
        raise UnknownResource(spelled)
    if "/" in text:
        parts = text.split("/")
        if len(parts) == 3 and all(parts):
            return [_Query(parts[2].lower(), parts[0], parts[1])]
        if len(parts) == 2 and all(parts):
            return [_Query(parts[1].lower(), "", parts[0])]
        raise UnknownResource(spelled)
    name, _, rest = text.partition(".")
    if not rest:
        return [_Query(name.lower())]
    queries = [_Query(name.lower(), rest)]
    version, _, group = rest.partition(".")
    if group:
        queries.append(_Query(name.lower(), group, version))
    return queries


async def _get(transport: Transport, path: str) -> Mapping[str, Any] | None:
    """A discovery document, or None when the server does not serve that path (404)."""
    try:
        doc = await transport.get_json(path)
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise
    return doc if isinstance(doc, Mapping) else None


async def _group_versions(transport: Transport, groups: set[str] | None) -> list[_GroupVersion]:
    """Every group/version to look at (only ``groups`` when given), in priority order."""
    out: list[_GroupVersion] = []
    if groups is None or "" in groups:
        core = await _get(transport, "/api") or {}
        versions = [v for v in core.get("versions") or () if isinstance(v, str)] or ["v1"]
        out += [_GroupVersion("", v, i == 0) for i, v in enumerate(versions)]
    if groups is None or groups - {""}:
        listing = await _get(transport, "/apis") or {}
        for group in listing.get("groups") or ():
            if not isinstance(group, Mapping):
                continue
            name = group.get("name")
            if not isinstance(name, str) or (groups is not None and name not in groups):
                continue
            preferred = (group.get("preferredVersion") or {}).get("version")
            for v in group.get("versions") or ():
                version = v.get("version") if isinstance(v, Mapping) else None
                if isinstance(version, str):
                    out.append(_GroupVersion(name, version, version == preferred))
    return out


def _matches(entry: Mapping[str, Any], name: str) -> bool:
    plural = entry.get("name")
    if not isinstance(plural, str) or "/" in plural:  # subresources (pods/log) are not listable
        return False
    names = {plural.lower(), str(entry.get("singularName") or "").lower()}
    names.add(str(entry.get("kind") or "").lower())
    names.update(str(s).lower() for s in entry.get("shortNames") or ())
    return name in names


def _pick(
    queries: Sequence[_Query], lists: Mapping[_GroupVersion, Mapping[str, Any] | None]
) -> Resource | None:
    for query in queries:
        found: list[tuple[int, Resource]] = []
        for gv, doc in lists.items():
            if query.group is not None and gv.group != query.group:
                continue
            if query.version is not None and gv.version != query.version:
                continue
            for entry in (doc or {}).get("resources") or ():
                if isinstance(entry, Mapping) and _matches(entry, query.name):
                    resource = Resource(
                        gv.group,
                        gv.version,
                        str(entry["name"]),
                        str(entry.get("kind") or ""),
                        namespaced=bool(entry.get("namespaced", True)),
                    )
                    # an exact plural first, then the server's priority order (sort is stable)
                    found.append((0 if entry["name"] == query.name else 1, resource))
                    break
        if found:
            found.sort(key=lambda f: f[0])
            return found[0][1]
    return None


async def discover(client: Transport | Any, name: str) -> Resource:
    """The ``Resource`` that ``name`` designates on this server (see the module docstring).

    ``client`` is a ``kubernetes_asyncio`` ``ApiClient`` or a ``Transport``. Raises
    ``UnknownResource``, or the typed errors of the discovery requests (``ApiError`` such as a 403,
    ``TransportError`` for an unreachable server or a TLS failure).
    """
    transport = client if isinstance(client, Transport) else Transport(client)
    queries = _queries(name)
    groups: set[str] | None = None
    if all(q.group is not None for q in queries):
        groups = {q.group for q in queries if q.group is not None}
    candidates = await _group_versions(transport, groups)
    wanted_versions = {(q.group, q.version) for q in queries if q.version is not None}
    if len(wanted_versions) == len(queries):  # every reading names its version
        candidates = [gv for gv in candidates if (gv.group, gv.version) in wanted_versions] or [
            _GroupVersion(g or "", v, True) for g, v in wanted_versions if v
        ]
    else:
        candidates = [gv for gv in candidates if gv.preferred or gv.group == ""]
    docs = await asyncio.gather(*(_get(transport, gv.path) for gv in candidates))
    resource = _pick(queries, dict(zip(candidates, docs, strict=True)))
    if resource is None:
        raise UnknownResource(name)
    return resource


_register_discoverer(discover)  # Resource.discover, without an upward import
