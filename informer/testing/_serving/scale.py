"""HTTP for the ``/scale`` subresource: GET, PUT, and PATCH (merge, strategic or JSON patch of
the Scale object); other methods are 405 as on a cluster."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from informer.testing import _status as st
from informer.testing._catalog.specs import ScalePaths
from informer.testing._patches.json_patches import json_patch, merge_patch
from informer.testing._registry.registry import Registry
from informer.testing._registry.scale import read_scale, write_scale
from informer.testing._serving.content import (
    JSON_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_PATCH,
    decode_body,
    encode,
    respond,
)
from informer.testing._serving.duplicate_fields import duplicate_paths, ordered_document
from informer.testing._serving.writes import WriteHandler
from informer.testing._storage.store import Kind

__all__ = ["serve_scale"]


async def serve_scale(
    request: web.Request,
    registry: Registry,
    kind: Kind,
    paths: ScalePaths,
    verb: str,
    namespace: str | None,
    name: str,
) -> web.Response:
    resource = kind.resource
    if verb == "get":
        current = registry.get(resource, name, namespace)
        if current is None:
            raise st.not_found(resource, name)
        return respond(request, encode(read_scale(paths, current)))
    if verb == "update":
        options = WriteHandler.options(request, "update")
        body = await decode_body(request)
        document = ordered_document(await request.read())
        if document is not None:  # the Scale names a field twice
            options.document = document
            options.duplicate_fields = duplicate_paths(document)
        written = write_scale(registry, resource, paths, name, namespace, body, options)
        return respond(request, encode(written), warnings=options.warnings)
    if verb == "patch":
        ctype = request.content_type
        if ctype not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH):
            raise st.unsupported_media_type(ctype, [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH])
        options = WriteHandler.options(request, "patch")
        body = await decode_body(request, PATCH_TYPES)
        options.patch_type = "json" if ctype == JSON_PATCH else "merge"
        if ctype == STRATEGIC_PATCH:
            options.patch_type = "strategic"
        options.patch = body
        document = ordered_document(await request.read())
        if document is not None and options.field_validation != "Ignore":
            prefix = "json patch " if ctype == JSON_PATCH else ""
            options.patch_problems = [
                f'{prefix}duplicate field "{path}"' for path in duplicate_paths(document)
            ]
        current = registry.get(resource, name, namespace)
        if current is None:
            raise st.not_found(resource, name)
        scale: Any = read_scale(paths, current)
        if ctype == JSON_PATCH:
            if not isinstance(body, list):
                raise st.bad_request("a JSON patch must be a list of operations")
            scale = json_patch(scale, body)
        else:
            if not isinstance(body, dict):
                raise st.bad_request("a merge patch must be a JSON object")
            scale = merge_patch(scale, body)
        result = write_scale(registry, resource, paths, name, namespace, scale, options)
        return respond(request, encode(result), warnings=options.warnings)
    raise st.method_not_allowed()
