"""The HTTP side of writes: options from the query (and a DeleteOptions body), bodies by content
type, patch formats, and answers with their ``Warning`` headers. The rules themselves are the
registry's (``_registry``), the patch formats ``_patches`` and ``_registry.apply``."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from informer.testing import _status as st
from informer.testing._lifecycle.deletion import DeleteOptions
from informer.testing._patches.json_patches import json_patch
from informer.testing._patches.strategic import strategic_merge_patch
from informer.testing._query.write_options import WriteOptions, parse_write_options
from informer.testing._registry.apply import apply_patch
from informer.testing._registry.registry import Registry
from informer.testing._serving.content import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_PATCH,
    decode,
    decode_body,
    encode,
    respond,
)
from informer.testing._serving.duplicate_fields import duplicate_fields
from informer.testing._storage.store import Kind

__all__ = ["WriteHandler"]

Json = dict[str, Any]


class WriteHandler:
    """Answers create, update, patch and delete requests through the registry."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    @staticmethod
    def options(
        request: web.Request, verb: str, body_dry_run: Any = None, apply: bool = False
    ) -> WriteOptions:
        query = request.query
        dry_run = list(query.getall("dryRun", []))
        if isinstance(body_dry_run, list):
            dry_run.extend(str(v) for v in body_dry_run)
        return parse_write_options(
            verb,
            dry_run,
            query.get("fieldManager"),
            query.get("fieldValidation"),
            query.get("force"),
            request.headers.get("User-Agent", ""),
            apply=apply,
        )

    async def create(self, request: web.Request, kind: Kind, namespace: str | None) -> web.Response:
        options = self.options(request, "create")
        body = await decode_body(request)
        options.duplicate_fields = duplicate_fields(await request.read())
        if not isinstance(body, dict):
            raise st.bad_request("the request body must be a JSON object")
        created = self.registry.create(kind.resource, body, namespace, options=options)
        return respond(request, encode(created), 201, warnings=options.warnings)

    async def update(
        self, request: web.Request, kind: Kind, namespace: str | None, name: str, sub: str = ""
    ) -> web.Response:
        options = self.options(request, "update")
        body = await decode_body(request)
        options.duplicate_fields = duplicate_fields(await request.read())
        if not isinstance(body, dict):
            raise st.bad_request("the request body must be a JSON object")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise st.bad_request("the name of the object does not match the name on the URL")
        updated = self.registry.update(
            kind.resource,
            body,
            name,
            namespace,
            subresource=sub,
            options=options,
            conditional=True,
        )
        return respond(request, encode(updated), warnings=options.warnings)

    async def patch(
        self, request: web.Request, kind: Kind, namespace: str | None, name: str, sub: str = ""
    ) -> web.Response:
        ctype = request.content_type
        options = self.options(request, "patch", apply=ctype == APPLY_PATCH)
        resource, registry = kind.resource, self.registry
        if ctype == STRATEGIC_PATCH and registry.strategy(resource).spec.custom:
            # custom resources have no patch merge keys: the apiserver does not offer it
            raise st.unsupported_media_type(ctype, [JSON_PATCH, MERGE_PATCH, APPLY_PATCH])
        body = await decode_body(request, PATCH_TYPES)
        code = 200
        if ctype == JSON_PATCH:
            if not isinstance(body, list):
                raise st.bad_request("a JSON patch must be a list of operations")
            ops = body
            result = registry.patch(
                resource,
                name,
                namespace,
                lambda cur: json_patch(cur, ops),
                None,
                subresource=sub,
                options=options,
            )
        elif ctype == APPLY_PATCH:
            if not isinstance(body, dict):
                raise st.bad_request("an apply patch must be an object")
            result, created = apply_patch(registry, kind, name, namespace, body, options, sub)
            code = 201 if created else 200
        else:
            if not isinstance(body, dict):
                raise st.bad_request("a merge patch must be a JSON object")
            patch: Json = body
            precondition = (patch.get("metadata") or {}).get("resourceVersion")
            if ctype == STRATEGIC_PATCH:
                result = registry.patch(
                    resource,
                    name,
                    namespace,
                    lambda cur: strategic_merge_patch(resource, cur, patch),
                    precondition,
                    subresource=sub,
                    options=options,
                )
            else:
                assert ctype == MERGE_PATCH
                result = registry.merge_patch(
                    resource, name, patch, namespace, subresource=sub, options=options
                )
        return respond(request, encode(result), code, warnings=options.warnings)

    async def delete(
        self,
        request: web.Request,
        kind: Kind,
        namespace: str | None,
        name: str,
        query: dict[str, str],
    ) -> web.Response:
        body = await decode_body(request)
        write = self.options(
            request, "delete", body.get("dryRun") if isinstance(body, dict) else None
        )
        options = DeleteOptions.parse(query, body)
        resource = kind.resource
        deleted = self.registry.delete(resource, name, namespace, options=options, write=write)
        if not deleted["metadata"].get("deletionTimestamp"):
            deleted = self.registry.strategy(resource).delete_response(deleted)
        # else held by finalizers or a grace period: the object, as the real store answers
        return respond(request, encode(deleted), warnings=write.warnings)

    async def delete_collection(
        self,
        request: web.Request,
        kind: Kind,
        namespace: str | None,
        query: dict[str, str],
        listed: bytes,
    ) -> bytes:
        """DELETE of a collection: every object of ``listed`` (the selected ones) deleted as a
        DELETE of each would (DeleteOptions, dry run, finalizers), answered as a list of the
        deleted objects (each as its delete left it), as the generic registry's
        ``DeleteCollection`` does."""
        body = await decode_body(request)
        write = self.options(
            request, "delete", body.get("dryRun") if isinstance(body, dict) else None
        )
        options = DeleteOptions.parse(query, body)
        resource = kind.resource
        answer: Json = decode(listed)
        deleted: list[Json] = []
        for item in answer.get("items") or []:
            meta = item.get("metadata") or {}
            try:
                gone = self.registry.delete(
                    resource, meta["name"], meta.get("namespace"), options=options, write=write
                )
            except st.NotFound:  # deleted meanwhile (a cascade of an earlier item)
                continue
            if not self.registry.strategy(resource).spec.custom:
                gone.pop("kind", None)
                gone.pop("apiVersion", None)
            deleted.append(gone)
        answer["items"] = deleted
        answer.setdefault("metadata", {})["resourceVersion"] = self.registry.store.rv(
            self.registry.store.revision
        )
        answer["metadata"].pop("continue", None)
        answer["metadata"].pop("remainingItemCount", None)
        return encode(answer)
