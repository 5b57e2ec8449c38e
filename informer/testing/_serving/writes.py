"""The HTTP side of writes: options from the query (and a DeleteOptions body), bodies by content
type, patch formats, admission webhooks, and answers with their ``Warning`` headers. The rules
themselves are the registry's (``_registry``), the patch formats ``_patches`` and
``_registry.apply``, the webhook calls ``_admission``.

A write that admission webhooks cover is done as the apiserver orders it: the write is first
computed without storing it (decoded, defaulted, patched, validated), mutating webhooks change
that object, the result is validated again, validating webhooks see it, and only then is it
stored; an object changed by another write while the webhooks ran is a 409 Conflict."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._admission.webhooks import AdmissionWebhooks, Attributes
from informer.testing._lifecycle.deletion import DeleteOptions
from informer.testing._patches.json_patches import json_patch
from informer.testing._patches.strategic import strategic_merge_patch
from informer.testing._query.write_options import PatchType, WriteOptions, parse_write_options
from informer.testing._registry.apply import apply_patch
from informer.testing._registry.registry import Registry, copy
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
from informer.testing._serving.duplicate_fields import (
    duplicate_paths,
    ordered_document,
    yaml_duplicate_keys,
)
from informer.testing._storage.store import Kind

__all__ = ["WriteHandler"]

Json = dict[str, Any]
Run = Callable[[WriteOptions], tuple[Json, bool]]

USER_INFO: Final[Json] = {
    "username": "informer-test",
    "groups": ["system:masters", "system:authenticated"],
}
"""Who every request is (the kubeconfig's token), as admission webhooks are told."""
_PATCH_TYPES: Final[dict[str, PatchType]] = {
    JSON_PATCH: "json",
    MERGE_PATCH: "merge",
    STRATEGIC_PATCH: "strategic",
}
_OPTIONS_KIND: Final = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
}


def _options_json(verb: str, options: WriteOptions) -> Json:
    body: Json = {"kind": _OPTIONS_KIND[verb], "apiVersion": "meta.k8s.io/v1"}
    if options.dry_run:
        body["dryRun"] = ["All"]
    if options.field_manager and verb != "delete":
        body["fieldManager"] = options.field_manager
    if options.force:
        body["force"] = True
    return body


def _dry(options: WriteOptions) -> WriteOptions:
    return dataclasses.replace(options, dry_run=True, warnings=[])


class WriteHandler:
    """Answers create, update, patch and delete requests through the registry, admitted by
    the registered admission webhooks."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.admission = AdmissionWebhooks(registry)

    def _attributes(
        self,
        resource: Resource,
        verb: str,
        operation: str,
        namespace: str | None,
        name: str,
        sub: str,
        options: WriteOptions,
    ) -> Attributes:
        return Attributes(
            resource,
            sub,
            operation,
            self.registry.namespace_of(resource, namespace),
            name,
            options.dry_run,
            _options_json(verb, options),
            USER_INFO,
        )

    def _write(
        self,
        resource: Resource,
        obj: Json,
        operation: str,
        name: str,
        namespace: str | None,
        sub: str,
        old_rv: str | None,
        options: WriteOptions,
    ) -> Json:
        """Store ``obj`` (an admitted object) by create or update."""
        if operation == "CREATE":
            return self.registry.create(resource, obj, namespace, options=options)
        return self.registry.update(
            resource, obj, name, namespace, old_rv, subresource=sub, options=options
        )

    async def _admitted(
        self,
        kind: Kind,
        verb: str,
        namespace: str | None,
        name: str,
        sub: str,
        options: WriteOptions,
        run: Run,
    ) -> tuple[Json, bool]:
        """``run(options)`` (the write; returns the object and whether it was created),
        through the admission webhooks that cover it."""
        resource = kind.resource
        namespace = self.registry.namespace_of(resource, namespace)
        operations = ["CREATE"] if verb == "create" else ["UPDATE"]
        if verb == "patch" and options.apply:
            operations.append("CREATE")  # an apply creates what is missing
        if not any(
            self.admission.interested(
                self._attributes(resource, verb, op, namespace, name, sub, options)
            )
            for op in operations
        ):
            return run(options)
        old = None if verb == "create" else self.registry.get(resource, name, namespace)
        old_rv = old["metadata"].get("resourceVersion") if old is not None else None
        candidate, created = run(_dry(options))
        operation = "CREATE" if verb == "create" or created else "UPDATE"
        if operation == "CREATE":
            old, old_rv = None, None
        name = str(candidate["metadata"].get("name") or name)
        attrs = self._attributes(resource, verb, operation, namespace, name, sub, options)
        given = copy(candidate)
        if operation == "CREATE":  # system fields are set after mutating admission
            for field in ("uid", "creationTimestamp", "generation"):
                given["metadata"].pop(field, None)
        mutated = await self.admission.admit(attrs, given, old, options.warnings, mutating=True)
        assert mutated is not None
        changed = mutated != given
        final = candidate
        if changed:
            final = self._write(
                resource, mutated, operation, name, namespace, sub, old_rv, _dry(options)
            )
        await self.admission.admit(attrs, final, old, options.warnings, mutating=False)
        if operation == "UPDATE":
            current = self.registry.get(resource, name, namespace)
            if (current or {}).get("metadata", {}).get("resourceVersion") != old_rv:
                raise st.conflict(resource, name)
            if not changed:
                return run(options)
        body = mutated if changed else candidate
        written = self._write(resource, body, operation, name, namespace, sub, old_rv, options)
        return written, operation == "CREATE"

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

    @staticmethod
    def _read_duplicates(options: WriteOptions, raw: bytes) -> None:
        """The fields a create or update body names twice, for ``fieldValidation``."""
        document = ordered_document(raw)
        if document is not None:
            options.document = document
            options.duplicate_fields = duplicate_paths(document)

    async def create(self, request: web.Request, kind: Kind, namespace: str | None) -> web.Response:
        options = self.options(request, "create")
        body = await decode_body(request)
        self._read_duplicates(options, await request.read())
        if not isinstance(body, dict):
            raise st.bad_request("the request body must be a JSON object")
        meta = body.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        given: Json = body

        def run(opts: WriteOptions) -> tuple[Json, bool]:
            return self.registry.create(kind.resource, given, namespace, options=opts), True

        created, _ = await self._admitted(kind, "create", namespace, name, "", options, run)
        return respond(request, encode(created), 201, warnings=options.warnings)

    async def update(
        self, request: web.Request, kind: Kind, namespace: str | None, name: str, sub: str = ""
    ) -> web.Response:
        options = self.options(request, "update")
        body = await decode_body(request)
        self._read_duplicates(options, await request.read())
        if not isinstance(body, dict):
            raise st.bad_request("the request body must be a JSON object")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise st.bad_request("the name of the object does not match the name on the URL")
        given: Json = body

        def run(opts: WriteOptions) -> tuple[Json, bool]:
            updated = self.registry.update(
                kind.resource,
                given,
                name,
                namespace,
                subresource=sub,
                options=opts,
                conditional=True,
            )
            return updated, False

        updated, _ = await self._admitted(kind, "update", namespace, name, sub, options, run)
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
        if ctype == APPLY_PATCH and options.field_validation != "Ignore":
            options.yaml_problems = yaml_duplicate_keys(await request.read())
        if ctype != APPLY_PATCH:
            options.patch_type = _PATCH_TYPES[ctype]
            options.patch = body
            document = None
            if options.field_validation != "Ignore":
                document = ordered_document(await request.read())
            if document is not None:  # the patch names a field twice
                prefix = "json patch " if ctype == JSON_PATCH else ""
                options.patch_problems = [
                    f'{prefix}duplicate field "{path}"' for path in duplicate_paths(document)
                ]
        run: Run
        if ctype == JSON_PATCH:
            if not isinstance(body, list):
                raise st.bad_request("a JSON patch must be a list of operations")
            ops = body

            def run(opts: WriteOptions) -> tuple[Json, bool]:
                patched = registry.patch(
                    resource,
                    name,
                    namespace,
                    lambda cur: json_patch(cur, ops),
                    None,
                    subresource=sub,
                    options=opts,
                )
                return patched, False

        elif ctype == APPLY_PATCH:
            if not isinstance(body, dict):
                raise st.bad_request("an apply patch must be an object")
            applied: Json = body

            def run(opts: WriteOptions) -> tuple[Json, bool]:
                return apply_patch(registry, kind, name, namespace, applied, opts, sub)

        else:
            if not isinstance(body, dict):
                raise st.bad_request("a merge patch must be a JSON object")
            patch: Json = body
            precondition = (patch.get("metadata") or {}).get("resourceVersion")
            if ctype == STRATEGIC_PATCH:

                def run(opts: WriteOptions) -> tuple[Json, bool]:
                    patched = registry.patch(
                        resource,
                        name,
                        namespace,
                        lambda cur: strategic_merge_patch(resource, cur, patch),
                        precondition,
                        subresource=sub,
                        options=opts,
                    )
                    return patched, False

            else:
                assert ctype == MERGE_PATCH

                def run(opts: WriteOptions) -> tuple[Json, bool]:
                    patched = registry.merge_patch(
                        resource, name, patch, namespace, subresource=sub, options=opts
                    )
                    return patched, False

        result, created = await self._admitted(kind, "patch", namespace, name, sub, options, run)
        code = 201 if created else 200
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
        attrs = self._attributes(resource, "delete", "DELETE", namespace, name, "", write)
        if self.admission.interested(attrs):
            old = self.registry.get(resource, name, attrs.namespace)
            if old is not None:
                for mutating in (True, False):
                    await self.admission.admit(attrs, None, old, write.warnings, mutating=mutating)
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
