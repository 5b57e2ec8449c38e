"""The HTTP layer: routing a request to a resource and verb, recording it, applying faults, and
dispatching to list, watch, get and the registry's writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from aiohttp import web

from informer.resource import NAMESPACES
from informer.testing import _status as st
from informer.testing._catalog.specs import REVIEWS
from informer.testing._query.list_options import TRUE
from informer.testing._registry.registry import Registry
from informer.testing._registry.reviews import review
from informer.testing._serving.content import decode, decode_body, encode, error_response, respond
from informer.testing._serving.discovery import non_resource
from informer.testing._serving.faults import cut_response, fault_response, replaces_response
from informer.testing._serving.lists import ListServer
from informer.testing._serving.scale import serve_scale
from informer.testing._serving.tables import TableEvents, table, wants_table
from informer.testing._serving.versions import version_view
from informer.testing._serving.watches import WatchServer
from informer.testing._serving.writes import WriteHandler
from informer.testing._signals import Signal
from informer.testing._status import StatusError
from informer.testing._storage.history import History
from informer.testing._storage.store import Kind
from informer.testing.faults import Fault, FaultSet, RecordedRequest

__all__ = ["HttpApi", "Route"]

Json = dict[str, Any]

_VERBS_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Route(NamedTuple):
    """Where a request goes: ``kind`` is None for non-resource paths (discovery, health)."""

    verb: str
    kind: Kind | None
    namespace: str | None
    name: str | None
    subresource: str = ""


class HttpApi:
    """The aiohttp handler of the server: one entry point, ``handle``."""

    def __init__(
        self,
        history: History,
        registry: Registry,
        lists: ListServer,
        watches: WatchServer,
        faults: FaultSet,
        requests: list[RecordedRequest],
        activity: Signal,
    ) -> None:
        self.history = history
        self.options = history.options
        self.registry = registry
        self.lists = lists
        self.watches = watches
        self.faults = faults
        self.requests = requests
        self.activity = activity
        self.writes = WriteHandler(registry)

    def route(self, request: web.Request) -> Route:
        """The verb, resource, namespace and name of a request's path."""
        parts = [p for p in request.path.split("/") if p]
        method = request.method.upper()
        none = Route(method.lower(), None, None, None)
        if len(parts) >= 3 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return none
        watch_path = bool(rest) and rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = self.registry.lookup(group, version, rest[2])
            if candidate is not None and candidate.resource.namespaced:
                namespace, rest = rest[1], rest[2:]
        subresource = ""
        if len(rest) == 3 and not watch_path:
            subresource, rest = rest[2], rest[:2]
        if not rest or len(rest) > 2:
            return none
        kind = self.registry.lookup(group, version, rest[0])
        if kind is None:
            return none
        if subresource == "finalize":
            if kind.resource != NAMESPACES or method != "PUT":
                return none
        elif subresource == "scale":
            if self.registry.strategy(kind.resource).spec.scale is None:
                return none
        elif subresource and (
            subresource != "status"
            or not self.registry.strategy(kind.resource).spec.status_subresource
        ):
            return none
        name = rest[1] if len(rest) == 2 else None
        if method == "GET":
            if watch_path or request.query.get("watch") in TRUE:
                verb = "watch"
            else:
                verb = "get" if name is not None else "list"
        else:
            verb = _VERBS_BY_METHOD.get(method, method.lower())
        return Route(verb, kind, namespace, name, subresource)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Record the request, apply a fault if one fires, then answer it."""
        route = self.route(request)
        query = {k: v for k, v in request.query.items()}
        record = RecordedRequest(
            method=request.method.upper(),
            path=request.path,
            query=query,
            verb=route.verb,
            resource=route.kind.resource.plural if route.kind is not None else "",
            namespace=route.namespace,
            name=route.name,
            page=self.lists.page_of(query.get("continue", "")) if route.verb == "list" else None,
        )
        self.requests.append(record)
        fault = self.faults.select(record)
        record.fault = fault
        self.activity.notify()
        try:
            if fault is not None and fault.latency:
                await self.history.sleep(fault.latency)
            if fault is not None and replaces_response(fault):
                response: web.StreamResponse = fault_response(request, record, fault)
            elif route.kind is None:
                response = non_resource(request, self.options, self.registry)
            else:
                response = await self._dispatch(request, record, route, route.kind, query, fault)
                if fault is not None and fault.answer_latency and record.verb != "watch":
                    await self.history.sleep(fault.answer_latency)  # applied, not yet answered
        except StatusError as error:
            response = error_response(request, error)
        if not record.status:
            record.status = response.status
            self.activity.notify()
        return response

    async def _dispatch(
        self,
        request: web.Request,
        record: RecordedRequest,
        route: Route,
        kind: Kind,
        query: dict[str, str],
        fault: Fault | None,
    ) -> web.StreamResponse:
        verb, namespace, name = route.verb, route.namespace, route.name
        resource = kind.resource
        if resource in REVIEWS:  # create-only, answered and never stored
            if verb != "create" or name is not None or route.subresource:
                raise st.method_not_allowed()
            return respond(request, encode(review(resource, await decode_body(request))), 201)
        table = wants_table(request.headers.get("Accept", "")) and not route.subresource
        stored = self.registry.storage_kind(kind)
        served_schema = self.registry.strategy(resource).schema
        view = version_view(  # another version than the stored one
            stored,
            kind,
            served_schema.default if served_schema and served_schema.has_defaults else None,
        )
        if verb == "watch":
            spec = self.registry.strategy(resource).spec
            convert: Callable[[list[bytes]], list[bytes]] | None = (
                TableEvents(spec, query.get("includeObject", "Metadata")) if table else None
            )
            if view is not None:
                convert = _viewed(view, convert)
            return await self.watches.serve(
                request,
                record,
                stored,
                namespace,
                name,
                query,
                fault,
                convert,
                spec.field_labels,
                shown=kind,
            )
        if verb == "list":
            fields_of = self.registry.strategy(resource).spec.field_labels
            body = await self.lists.serve_list(stored, namespace, query, fault, fields_of)
            if view is not None:
                body = view(body)
            if fault is not None and fault.cut_mid_line:
                return await cut_response(request, record, body)
            return respond(request, self._table(kind, body, query) if table else body)
        spec = self.registry.strategy(resource).spec
        if verb == "delete" and name is None and not route.subresource:
            if "deletecollection" not in spec.verbs:
                raise st.method_not_allowed()
            selection = _selection(query)
            listed = await self.lists.serve_list(
                stored, namespace, selection, None, spec.field_labels
            )
            body = await self.writes.delete_collection(request, kind, namespace, query, listed)
            return respond(request, view(body) if view is not None else body)
        if resource.namespaced and namespace is None and verb != "create":
            raise st.no_such_path()
        if route.subresource and verb not in ("get", "update", "patch"):
            raise st.method_not_allowed()
        paths = self.registry.strategy(resource).spec.scale
        if route.subresource == "scale" and paths is not None and name is not None:
            return await serve_scale(request, self.registry, kind, paths, verb, namespace, name)
        if verb == "get":
            assert name is not None
            body = await self.lists.serve_get(stored, namespace, name, query)
            if view is not None:
                body = view(body)
            if fault is not None and fault.cut_mid_line:
                return await cut_response(request, record, body)
            return respond(request, self._table(kind, body, query) if table else body)
        writes = self.writes
        if verb == "create":
            if name is not None:
                raise st.method_not_allowed()
            if resource.namespaced and namespace is None:
                raise st.no_such_path()
            return await writes.create(request, kind, namespace)
        if name is None:
            raise st.method_not_allowed()
        sub = route.subresource
        if verb == "update":
            return await writes.update(request, kind, namespace, name, sub)
        if verb == "patch":
            return await writes.patch(request, kind, namespace, name, sub)
        if verb == "delete":
            return await writes.delete(request, kind, namespace, name, query)
        raise st.method_not_allowed()

    def _table(self, kind: Kind, body: bytes, query: dict[str, str]) -> bytes:
        """A list or object answer re-encoded as the Table kubectl asked for."""
        decoded = decode(body)
        if "items" in decoded:
            items = decoded["items"]
            list_meta = decoded.get("metadata") or {}
        else:
            items = [decoded]
            list_meta = {"resourceVersion": decoded["metadata"].get("resourceVersion", "")}
        spec = self.registry.strategy(kind.resource).spec
        return encode(table(spec, items, list_meta, query.get("includeObject", "Metadata")))


def _selection(query: dict[str, str]) -> dict[str, str]:
    """The list options of a deletecollection that choose its objects (selectors): every
    matching object, from the latest revision, in one page."""
    return {k: v for k, v in query.items() if k in ("labelSelector", "fieldSelector")}


def _viewed(
    view: Callable[[bytes], bytes], then: Callable[[list[bytes]], list[bytes]] | None
) -> Callable[[list[bytes]], list[bytes]]:
    """Watch lines rewritten into the served version, then (Tables) converted."""

    def convert(lines: list[bytes]) -> list[bytes]:
        viewed = [view(line) for line in lines]
        return then(viewed) if then is not None else viewed

    return convert
