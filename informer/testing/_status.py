"""Kubernetes ``Status`` bodies worded as a real kube-apiserver words them, and typed errors.

Key order follows the Go structs (kind, apiVersion, metadata, status, message, reason, details,
code), so encoded bodies match what a real server sends byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

from informer.resource import Resource

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Invalid",
    "NotFound",
    "StatusError",
]

Json = dict[str, Any]

LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
WATCH_TOO_OLD = "The resourceVersion for the provided watch is too old."
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list."
)
FUTURE_REVISION = "etcdserver: mvcc: required revision is a future revision"


class StatusError(Exception):
    """A request the server refuses: ``status`` is the Status body, ``code`` its HTTP code."""

    def __init__(self, status: Json, headers: dict[str, str] | None = None) -> None:
        code, reason = status.get("code"), status.get("reason", "")
        super().__init__(f"{code} {reason}: {status.get('message')}")
        self.status = status
        self.code = int(status.get("code", 500))
        self.reason = str(status.get("reason", ""))
        self.message = str(status.get("message", ""))
        self.headers = headers or {}


class NotFound(StatusError):
    """404: the object does not exist."""


class AlreadyExists(StatusError):
    """409 AlreadyExists: create of an existing name."""


class Conflict(StatusError):
    """409 Conflict: a stale ``metadata.resourceVersion`` or precondition."""


class BadRequest(StatusError):
    """400: a malformed request (selector, continue token, resource version)."""


class Invalid(StatusError):
    """422: the request or object failed validation."""


def status(
    code: int,
    reason: str,
    message: str,
    details: Json | None = None,
    metadata: Json | None = None,
) -> Json:
    """A failure Status body; an empty ``reason`` is omitted like Go's ``omitempty``."""
    body: Json = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def _details(resource: Resource, name: str) -> Json:
    details: Json = {"name": name}
    if resource.group:
        details["group"] = resource.group
    details["kind"] = resource.plural
    return details


def not_found(resource: Resource, name: str) -> NotFound:
    return NotFound(
        status(
            404,
            "NotFound",
            f'{resource.group_resource} "{name}" not found',
            _details(resource, name),
        )
    )


def already_exists(resource: Resource, name: str) -> AlreadyExists:
    return AlreadyExists(
        status(
            409,
            "AlreadyExists",
            f'{resource.group_resource} "{name}" already exists',
            _details(resource, name),
        )
    )


def conflict(resource: Resource, name: str, why: str | None = None) -> Conflict:
    why = why or (
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    return Conflict(
        status(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {resource.group_resource} "{name}": {why}',
            _details(resource, name),
        )
    )


def bad_request(message: str) -> BadRequest:
    return BadRequest(status(400, "BadRequest", message))


def invalid_object(
    resource: Resource, kind: str, name: str, errs: list[tuple[str, str, str]]
) -> Invalid:
    """422 for an object; ``errs`` are (cause type, field, error body) like field.ErrorList."""
    return _invalid(resource.group, kind, name, errs)


def invalid_list_options(errs: list[tuple[str, str, str]]) -> Invalid:
    """422 for ListOptions: ``ListOptions.meta.k8s.io "" is invalid: ...``."""
    return _invalid("meta.k8s.io", "ListOptions", "", errs)


def invalid_options(kind: str, errs: list[tuple[str, str, str]]) -> Invalid:
    """422 for write options: ``CreateOptions.meta.k8s.io "" is invalid: ...``."""
    return _invalid("meta.k8s.io", kind, "", errs)


def _invalid(group: str, kind: str, name: str, errs: list[tuple[str, str, str]]) -> Invalid:
    messages: list[str] = []
    for _, field, body in errs:
        text = f"{field}: {body}"
        if text not in messages:  # utilerrors.NewAggregate dedups identical messages
            messages.append(text)
    aggregate = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details: Json = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [{"reason": t, "message": b, "field": f} for t, f, b in errs]
    return Invalid(status(422, "Invalid", f'{qualified} "{name}" is invalid: {aggregate}', details))


def invalid_patch(value: str, detail: str) -> Invalid:
    """422 for a patch whose result the strict decoder refused: ``errors.NewInvalid`` with an
    empty kind and name (`` "" is invalid: patch: Invalid value: "...": ...``)."""
    body = f"Invalid value: {json.dumps(value, ensure_ascii=False)}: {detail}"
    details: Json = {"causes": [{"reason": "FieldValueInvalid", "message": body, "field": "patch"}]}
    return Invalid(status(422, "Invalid", f' "" is invalid: patch: {body}', details))


def forbidden(field: str, detail: str) -> tuple[str, str, str]:
    return ("FieldValueForbidden", field, f"Forbidden: {detail}")


def not_supported(field: str, value: str, supported: list[str]) -> tuple[str, str, str]:
    values = ", ".join(f'"{v}"' for v in supported)
    body = f'Unsupported value: "{value}": supported values: {values}'
    return ("FieldValueNotSupported", field, body)


def required(field: str, detail: str) -> tuple[str, str, str]:
    return ("FieldValueRequired", field, f"Required value: {detail}")


def expired(message: str, continue_token: str | None = None) -> StatusError:
    metadata: Json = {"continue": continue_token} if continue_token else {}
    return StatusError(status(410, "Expired", message, metadata=metadata))


def too_large(requested: str, current: str, retry_after: int) -> StatusError:
    """504 "Too large resource version" (``storage.NewTooLargeResourceVersionError``)."""
    details: Json = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
    }
    headers: dict[str, str] = {}
    if retry_after > 0:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return StatusError(
        status(
            504,
            "Timeout",
            f"Timeout: Too large resource version: {requested}, current: {current}",
            details,
        ),
        headers,
    )


def future_revision() -> StatusError:
    """500 from etcd for an Exact read beyond the current revision (no reason, as observed)."""
    return StatusError(status(500, "", FUTURE_REVISION))


def generic(code: int, message: str | None = None, retry_after: int | None = None) -> StatusError:
    """A plausible Status for an injected HTTP failure ``code``."""
    reason, default = _GENERIC.get(code, ("", f"injected failure {code}"))
    details: Json | None = None
    headers: dict[str, str] = {}
    if code == 500:
        text = message or "injected fault"
        details = {"causes": [{"message": text}]}
        message = f"Internal error occurred: {text}"
    if retry_after is not None:
        details = details or {}
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return StatusError(status(code, reason, message or default, details), headers)


_GENERIC: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "injected bad request"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "forbidden: injected fault"),
    404: ("NotFound", "the server could not find the requested resource"),
    409: ("Conflict", "injected conflict"),
    410: ("Expired", LIST_TOO_OLD),
    422: ("Invalid", "injected validation failure"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: injected fault"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "Timeout: request did not complete within the allotted timeout"),
}


def no_such_path() -> StatusError:
    """404 for a path that names no resource."""
    return NotFound(status(404, "NotFound", "the server could not find the requested resource", {}))


def not_acceptable(accepted: list[str]) -> StatusError:
    """406: no media type of the ``Accept`` header can be produced."""
    return StatusError(
        status(
            406,
            "NotAcceptable",
            "only the following media types are accepted: " + ", ".join(accepted),
            {},
        )
    )


def method_not_allowed() -> StatusError:
    return StatusError(
        status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            {},
        )
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> StatusError:
    """415: a body in a format the endpoint does not decode (clients fall back to JSON)."""
    return StatusError(
        status(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(accepted)}",
            {},
        )
    )


class Forbidden(StatusError):
    """403: admission refused the request (a namespace being terminated, an immortal one)."""


def forbidden_object(
    resource: Resource, name: str, why: str, causes: list[Json] | None = None
) -> Forbidden:
    """403 ``<resource> "<name>" is forbidden: <why>`` (``errors.NewForbidden``)."""
    details = _details(resource, name) if name else _details(resource, "")
    if not name:
        details.pop("name")
    if causes:
        details["causes"] = causes
    subject = f'{resource.group_resource} "{name}"' if name else resource.group_resource
    return Forbidden(status(403, "Forbidden", f"{subject} is forbidden: {why}", details))


def namespace_terminating(resource: Resource, name: str, namespace: str) -> Forbidden:
    """403 from the NamespaceLifecycle admission plugin: no new content while terminating."""
    return forbidden_object(
        resource,
        name,
        f"unable to create new content in namespace {namespace} because it is being terminated",
        [
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ],
    )
