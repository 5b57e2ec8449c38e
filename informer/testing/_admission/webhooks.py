"""Calling admission webhooks as the apiserver does.

The webhooks are those of the stored ``admissionregistration.k8s.io/v1``
MutatingWebhookConfigurations and ValidatingWebhookConfigurations (configurations in name
order, webhooks in their order). A request meets a webhook when its ``rules``,
``namespaceSelector`` and ``objectSelector`` match (see ``matching``); it is sent an
``admission.k8s.io/v1`` AdmissionReview (uid, kind, resource, subResource, request kind and
resource, name, namespace, operation, userInfo, object, oldObject, dryRun, options) by HTTPS POST
to ``clientConfig.url``, or to a ``clientConfig.service`` through ``services`` (below), with
``?timeout=Ns`` as the apiserver adds it, verifying the server against ``clientConfig.caBundle``
(the system's roots without one).

- Mutating webhooks run first: an answer's ``patchType: JSONPatch`` patch is applied to the
  object; with ``reinvocationPolicy: IfNeeded`` a webhook is called once more when a later one
  changed the object. Validating webhooks then see the final object.
- ``allowed: false`` refuses the request: ``admission webhook "NAME" denied the request:
  MESSAGE`` with the code the webhook gave in ``status.code`` (400 when below 400).
- A webhook that cannot be called, times out (``timeoutSeconds``, default 10) or answers
  something that is not an AdmissionReview of the request's uid fails the request with 500
  (``failurePolicy: Fail``, the default) or is skipped (``Ignore``).
- A dry-run request fails with 400 (``admission webhook "NAME" does not support dry run``) when a
  webhook it meets declares ``sideEffects`` other than ``None`` or ``NoneOnDryRun``.
- ``warnings`` of an answer become ``Warning`` headers of the response.

``services``: the test server has no Services to route to, so ``clientConfig.service``
references are resolved through ``ApiServer.webhook_services``, a mapping of
``(namespace, name)`` (or ``(namespace, name, port)``) to a base URL such as
``"https://127.0.0.1:8443"``; the reference's ``path`` is appended. An unmapped service is a call
failure (as an unreachable one is).

- ``matchConditions`` (CEL) are evaluated once rules and selectors matched, against the object
  as it is when the webhook's turn comes (see ``conditions``): a false one skips the webhook, one
  that fails to evaluate refuses the request (403) or skips it (``failurePolicy: Ignore``).

Not done: ``matchPolicy: Equivalent`` does not match other versions of a resource, and writes
made by the server's own controllers (garbage collector, namespace deletion) are not admitted.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ssl
import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp
import msgspec

from informer.resource import NAMESPACES, Resource
from informer.testing import _status as st
from informer.testing._admission.conditions import conditions_met
from informer.testing._admission.matching import Attributes, matches_rules, selector_matches
from informer.testing._catalog.specs import MUTATINGWEBHOOKS as MUTATING
from informer.testing._catalog.specs import VALIDATINGWEBHOOKS as VALIDATING
from informer.testing._patches.json_patches import json_patch
from informer.testing._registry.registry import Registry

__all__ = ["MUTATING", "VALIDATING", "AdmissionWebhooks", "Attributes"]

Json = dict[str, Any]

_GROUP = MUTATING.group
_NOT_ADMITTED = frozenset({_GROUP})
"""Groups whose objects no webhook is called for (a webhook cannot lock itself in)."""
_DRY_RUN_SAFE = ("None", "NoneOnDryRun")


class _CallFailed(Exception):
    """The webhook could not be called or answered nonsense (failurePolicy decides)."""


def _labels(obj: Json | None) -> Mapping[str, str]:
    if not isinstance(obj, Mapping):
        return {}
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


class AdmissionWebhooks:
    """The admission webhooks of one server and how to call them."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.services: dict[tuple[str, ...], str] = {}
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- which webhooks --------------------------------------------------------------------

    def _configured(self, kind: Resource) -> list[Json]:
        try:
            configurations = self.registry.list_objects(kind)
        except KeyError:  # not served here
            return []
        hooks = []
        for configuration in configurations:
            for hook in configuration.get("webhooks") or []:
                if isinstance(hook, Mapping) and hook.get("name"):
                    hooks.append(dict(hook))
        return hooks

    def _namespace_matches(self, hook: Json, attrs: Attributes, obj: Json | None) -> bool:
        selector = hook.get("namespaceSelector")
        if attrs.resource == NAMESPACES:
            return selector_matches(selector, _labels(obj))
        if not attrs.resource.namespaced or not attrs.namespace:
            return True
        namespace = self.registry.get(NAMESPACES, attrs.namespace)
        return selector_matches(selector, _labels(namespace))

    def _meets(self, hook: Json, attrs: Attributes, obj: Json | None, old: Json | None) -> bool:
        if not matches_rules(hook.get("rules"), attrs):
            return False
        if not self._namespace_matches(hook, attrs, obj or old):
            return False
        selector = hook.get("objectSelector")
        return selector_matches(selector, _labels(obj)) or (
            old is not None and selector_matches(selector, _labels(old))
        )

    def interested(self, attrs: Attributes) -> bool:
        """Whether a webhook's rules cover the request (before its objects are known)."""
        if attrs.resource.group in _NOT_ADMITTED:
            return False
        return any(
            matches_rules(hook.get("rules"), attrs)
            for kind in (MUTATING, VALIDATING)
            for hook in self._configured(kind)
        )

    # -- admission ---------------------------------------------------------------------------

    async def admit(
        self,
        attrs: Attributes,
        obj: Json | None,
        old: Json | None,
        warnings: list[str],
        *,
        mutating: bool,
    ) -> Json | None:
        """Run the mutating (or validating) webhooks the request meets; the object as they
        left it. Raises the ``StatusError`` the apiserver answers for a refusal or failure."""
        if attrs.resource.group in _NOT_ADMITTED:
            return obj
        hooks = [
            h
            for h in self._configured(MUTATING if mutating else VALIDATING)
            if self._meets(h, attrs, obj, old)
        ]
        if not mutating:
            called = [h for h in hooks if self._to_call(h, attrs, obj, old, warnings)]
            await asyncio.gather(*(self._call(h, attrs, obj, old, warnings) for h in called))
            return obj
        changed_by: dict[int, bool] = {}
        called_at: set[int] = set()
        for index, hook in enumerate(hooks):
            if not self._to_call(hook, attrs, obj, old, warnings):
                continue
            called_at.add(index)
            patched = await self._call(hook, attrs, obj, old, warnings)
            if patched is not None and patched != obj:
                obj = patched
                for earlier in range(index):
                    changed_by[earlier] = True
        for index, hook in enumerate(hooks):  # reinvocationPolicy: IfNeeded, at most once more
            if (
                index in called_at
                and changed_by.get(index)
                and hook.get("reinvocationPolicy") == "IfNeeded"
                and self._to_call(hook, attrs, obj, old, warnings)
            ):
                patched = await self._call(hook, attrs, obj, old, warnings)
                if patched is not None:
                    obj = patched
        return obj

    def _to_call(
        self, hook: Json, attrs: Attributes, obj: Json | None, old: Json | None, warnings: list[str]
    ) -> bool:
        """Whether a webhook whose rules and selectors matched is called for the object as it
        is now: its ``matchConditions`` (a 403 when they fail to evaluate under Fail), then the
        dry-run check (400 for a webhook with side effects)."""
        variables = {"object": obj, "oldObject": old, "request": _request(attrs)}
        if not conditions_met(hook, attrs, variables, warnings):
            return False
        if attrs.dry_run and hook.get("sideEffects") not in _DRY_RUN_SAFE:
            raise st.bad_request(f'admission webhook "{hook["name"]}" does not support dry run')
        return True

    async def _call(
        self,
        hook: Json,
        attrs: Attributes,
        obj: Json | None,
        old: Json | None,
        warnings: list[str],
    ) -> Json | None:
        """One call; the patched object (mutating), None when nothing changes."""
        name = str(hook["name"])
        try:
            response = await self._review(hook, attrs, obj, old)
        except _CallFailed as failure:
            if hook.get("failurePolicy") == "Ignore":
                return None
            text = f'failed calling webhook "{name}": {failure}'
            raise st.StatusError(
                st.status(
                    500,
                    "InternalError",
                    f"Internal error occurred: {text}",
                    {"causes": [{"message": text}]},
                )
            ) from None
        for warning in response.get("warnings") or []:
            warnings.append(str(warning))
        if not response.get("allowed"):
            raise _denied(name, response.get("status"))
        patch = response.get("patch")
        if not patch or obj is None:
            return None
        try:
            operations = msgspec.json.decode(base64.b64decode(patch))
        except (binascii.Error, ValueError, msgspec.DecodeError) as error:
            raise self._invalid(hook, name, f"the patch is not base64 JSON: {error}") from None
        if not isinstance(operations, list):
            raise self._invalid(hook, name, "the patch is not a JSON Patch")
        try:
            patched = json_patch(msgspec.json.decode(msgspec.json.encode(obj)), operations)
        except st.StatusError as error:
            raise self._invalid(hook, name, error.message) from None
        return patched if isinstance(patched, dict) else None

    @staticmethod
    def _invalid(hook: Json, name: str, why: str) -> st.StatusError:
        text = f'failed calling webhook "{name}": {why}'
        return st.StatusError(st.status(500, "InternalError", f"Internal error occurred: {text}"))

    def _url(self, hook: Json) -> str:
        config = hook.get("clientConfig") or {}
        if config.get("url"):
            return str(config["url"])
        service = config.get("service") or {}
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port = str(service.get("port", 443))
        base = self.services.get((namespace, name, port)) or self.services.get((namespace, name))
        if base is None:
            raise _CallFailed(
                f'failed to call webhook: service "{namespace}/{name}" is not mapped '
                "(ApiServer.webhook_services)"
            )
        return base.rstrip("/") + "/" + str(service.get("path") or "").lstrip("/")

    async def _review(
        self, hook: Json, attrs: Attributes, obj: Json | None, old: Json | None
    ) -> Json:
        timeout = int(hook.get("timeoutSeconds") or 10)
        url = self._url(hook)
        url += ("&" if "?" in url else "?") + f"timeout={timeout}s"
        versions = list(hook.get("admissionReviewVersions") or ["v1"])
        version = "v1" if "v1" in versions else "v1beta1"
        uid = str(uuid.uuid4())
        described = _request(attrs)
        last = {key: described.pop(key) for key in ("dryRun", "options")}
        # AdmissionReview and AdmissionRequest in their Go structs' field order
        request: Json = {"uid": uid, **described, "object": obj, "oldObject": old, **last}
        review = {
            "kind": "AdmissionReview",
            "apiVersion": f"admission.k8s.io/{version}",
            "request": request,
        }
        ssl_context = self._ssl(hook)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.post(
                url,
                data=msgspec.json.encode(review),
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                ssl=ssl_context if url.startswith("https:") else False,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as answer:
                body = await answer.read()
                if answer.status != 200:
                    raise _CallFailed(
                        f"failed to call webhook: the server responded with HTTP {answer.status}"
                    )
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            why = str(error) or type(error).__name__
            if isinstance(error, TimeoutError):
                why = "context deadline exceeded"
            raise _CallFailed(f'failed to call webhook: Post "{url}": {why}') from None
        try:
            decoded = msgspec.json.decode(body)
        except msgspec.DecodeError as error:
            raise _CallFailed(f"received invalid webhook response: {error}") from None
        response = decoded.get("response") if isinstance(decoded, dict) else None
        if not isinstance(response, dict):
            raise _CallFailed("received invalid webhook response: no response")
        if response.get("uid") != uid:
            raise _CallFailed(
                f'received invalid webhook response: expected response.uid="{uid}", '
                f'got "{response.get("uid", "")}"'
            )
        return response

    @staticmethod
    def _ssl(hook: Json) -> ssl.SSLContext:
        bundle = (hook.get("clientConfig") or {}).get("caBundle")
        if not bundle:
            return ssl.create_default_context()
        try:
            pem = base64.b64decode(bundle).decode()
            return ssl.create_default_context(cadata=pem)
        except (binascii.Error, ValueError, ssl.SSLError) as error:
            raise _CallFailed(f"failed to call webhook: invalid caBundle: {error}") from None


def _request(attrs: Attributes) -> Json:
    """The AdmissionRequest of ``attrs`` without uid and objects (``request`` in CEL)."""
    resource = attrs.resource
    kind = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    gvr = {"group": resource.group, "version": resource.version, "resource": resource.plural}
    request: Json = {"kind": kind, "resource": gvr}  # in the Go struct's field order
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = dict(kind)
    request["requestResource"] = dict(gvr)
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request["operation"] = attrs.operation
    request["userInfo"] = attrs.user_info
    request["dryRun"] = attrs.dry_run
    request["options"] = attrs.options
    return request


def _denied(name: str, result: Any) -> st.StatusError:
    """The apiserver's ``webhookerrors.ToStatusErr``: the webhook's Status, its code at least
    400, its message prefixed with who denied the request."""
    status: Json = dict(result) if isinstance(result, Mapping) else {}
    code = int(status.get("code") or 0)
    if code < 400:
        code = 400
    denied = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied}: {status['reason']}"
    else:
        message = f"{denied} without explanation"
    body = st.status(code, str(status.get("reason") or ""), message, status.get("details") or None)
    return st.StatusError(body)
