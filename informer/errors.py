"""Typed errors: Kubernetes ``Status`` bodies, watch stream failures, stale caches.

``status_error`` classifies by HTTP status first, then by the body, and never fails on a body
that is not a Status (a proxy's HTML page, an empty body, a rate limiter's ``text/plain``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from informer._requests import RequestInfo

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ConfigurationError",
    "Conflict",
    "Forbidden",
    "Invalid",
    "MalformedResponse",
    "MalformedWatchLine",
    "NotFound",
    "ResourceExpired",
    "ShardSelectorRejected",
    "ShutdownTimeout",
    "StaleCacheError",
    "TooLargeResourceVersion",
    "TooManyRequests",
    "TransportError",
    "WatchIdleTimeout",
    "WatchLineTooLong",
    "WatchStreamError",
    "status_error",
]

_TEXT_LIMIT = 512
_RETRY_AFTER_MAX = 1e9  # seconds; callers cap it much lower (BackoffPolicy.max_retry_after)
_RETRY_AFTER = re.compile(r"[0-9]{1,9}(\.[0-9]+)?")
_REASON = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
# where the part of a MalformedWatchLine's ``why`` that is ours ends (what follows can be the
# line's text: ``unknown event type 'X'``)
_WHY_END = re.compile(r"[:'\"`(\[{]")
# The code a Status reason implies when the body carries no usable one.
_REASON_CODES = {"Expired": 410, "Gone": 410, "TooManyRequests": 429}


class ApiError(Exception):
    """A Kubernetes API failure: HTTP ``code``, Status ``reason``, ``message`` and ``details``;
    ``request`` describes the request that failed (verb, resource, namespace, name) when the
    library sent it.

    ``retry_after``: the seconds the server asked to wait before trying again (``Retry-After``
    or ``details.retryAfterSeconds``), kept for a 429 and a 5xx only (client-go's ``checkWait``
    honours it for those alone); None when it gave none.

    ``str()`` of the error (what a traceback or a log prints) is its code, reason and request
    (``403 Forbidden: list configmaps in namespace d``), never the ``message``: that is the
    server's text, and it can quote object data (a validation error quotes the field's value,
    an admission webhook answers any text). Read ``message`` for it.
    """

    request: RequestInfo | None = None

    def __init__(
        self,
        code: int,
        reason: str = "",
        message: str = "",
        details: Mapping[str, Any] | None = None,
        *,
        status: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(_summary(code, reason))
        self.code = code
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.status: Mapping[str, Any] = status or {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        text = _summary(self.code, self.reason)
        request = self.request
        if request is None:
            return text
        what = request.resource or request.path
        if request.name:
            what = f"{what}/{request.name}"
        if request.subresource:
            what = f"{what}/{request.subresource}"
        where = f" in namespace {request.namespace}" if request.namespace else ""
        return f"{text}: {request.verb} {what}{where}"


def _summary(code: int, reason: str) -> str:
    """``403 Forbidden``: the reason only when it is one (a webhook may answer any text)."""
    return f"{code} {reason}" if _REASON.fullmatch(reason) else str(code)


class NotFound(ApiError):
    """404: the object (or the resource type, or the namespace) does not exist."""


class Conflict(ApiError):
    """409 Conflict: a precondition failed (``resourceVersion`` or ``uid``): read, then retry."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: a create for a name that is taken (not a precondition conflict)."""


class Forbidden(ApiError):
    """403: RBAC (or an admission webhook) refused the request."""


class Invalid(ApiError):
    """422: the object failed validation; ``details.causes`` names the fields."""


class ResourceExpired(ApiError):
    """410 Gone: the resource version (or continue token) is older than the server keeps."""

    @property
    def continue_token(self) -> str | None:
        """The inconsistent continue token a server may offer with an expired one."""
        meta = self.status.get("metadata")
        token = meta.get("continue") if isinstance(meta, Mapping) else None
        return token if isinstance(token, str) and token else None


class ShardSelectorRejected(ApiError):
    """500 ``invalid shard selector: ...``: the server refused the request's ``shardSelector``.

    A v1.36 server answers a malformed selector with a 500 and no reason; it is the client's
    own error, the same on every retry: never retried as transient.
    """


class TooLargeResourceVersion(ApiError):
    """504: the requested resource version is newer than the server has seen."""


class TooManyRequests(ApiError):
    """429: the server asks the client to slow down for ``retry_after`` seconds."""


class ConfigurationError(ValueError, TypeError):
    """Wrong use of the API, found at construction (a namespace for a cluster-scoped resource,
    options that cannot work): raised at once instead of failing inside a loop retried forever.
    A ``ValueError`` and a ``TypeError``, as what each check replaces."""


class TransportError(Exception):
    """The connection failed (refused, reset, TLS, DNS): no HTTP answer to classify;
    ``request`` describes the request when the library sent it."""

    request: RequestInfo | None = None


class MalformedResponse(Exception):
    """A 2xx response whose body is not what the API promises (e.g. a list that is not JSON)."""


class WatchStreamError(Exception):
    """A watch stream could not be read to the end."""


class MalformedWatchLine(WatchStreamError):
    """A watch line that is not a JSON watch event; ``offset`` is its byte offset in the stream,
    ``why`` what is wrong with it, ``line`` its first 120 bytes. ``str()`` quotes neither the
    line nor the part of ``why`` taken from it: the line can be a Secret's data."""

    def __init__(self, offset: int, why: str, line: bytes = b"") -> None:
        ours = _WHY_END.split(why, 1)[0].strip()
        super().__init__(f"malformed watch line at byte {offset}: {ours or 'not an event'}")
        self.offset = offset
        self.why = why
        self.line = line[:120]


class WatchLineTooLong(WatchStreamError):
    """A watch line longer than the configured bound (protects memory)."""

    def __init__(self, offset: int, limit: int) -> None:
        super().__init__(f"watch line at byte {offset} exceeds {limit} bytes")
        self.offset = offset
        self.limit = limit


class WatchIdleTimeout(WatchStreamError):
    """The watch stream was silent for longer than the idle timeout: presumed dead."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"watch stream silent for {seconds:g}s")
        self.seconds = seconds


class ShutdownTimeout(TimeoutError):
    """A ``Manager``'s graceful stop passed its ``shutdown_timeout`` (controller-runtime's "failed
    waiting for all runnables to end within grace period"): ``not_stopped`` names the parts that
    had been asked to stop and had not ended then (``runnable:<name>``, ``controller:<name>``,
    ``leader-election``, ``informers``)."""

    def __init__(self, timeout: float, not_stopped: Sequence[str]) -> None:
        self.timeout = timeout
        self.not_stopped = tuple(not_stopped)
        names = ", ".join(self.not_stopped) or "nothing named"
        super().__init__(
            f"failed waiting for all runnables to end within grace period of {timeout:g}s "
            f"(not stopped: {names})"
        )


class StaleCacheError(Exception):
    """The cache did not reach the wanted resource version in time."""

    def __init__(self, cache_rv: str, wanted_rv: str, timeout: float | None) -> None:
        super().__init__(
            f"cache at resource version {cache_rv!r} has not reached {wanted_rv!r}"
            + (f" within {timeout:g}s" if timeout is not None else "")
        )
        self.cache_rv = cache_rv
        self.wanted_rv = wanted_rv
        self.timeout = timeout


def _parse_retry_after(header: str | None, details: Mapping[str, Any]) -> float | None:
    seconds = details.get("retryAfterSeconds")
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds >= 0:
        return float(min(seconds, _RETRY_AFTER_MAX))  # 10**400 does not fit a float
    if isinstance(seconds, float) and math.isfinite(seconds) and seconds >= 0:
        return min(seconds, _RETRY_AFTER_MAX)
    if header:
        text = header.strip()
        if not _RETRY_AFTER.fullmatch(text):
            return None
        return float(text)
    return None


def _is_too_large(status: Mapping[str, Any], details: Mapping[str, Any]) -> bool:
    causes = details.get("causes")
    if isinstance(causes, list):
        for cause in causes:
            if not isinstance(cause, Mapping):
                continue
            if cause.get("reason") == "ResourceVersionTooLarge":
                return True
            if "Too large resource version" in str(cause.get("message", "")):
                return True
    return "Too large resource version" in str(status.get("message", ""))


def _decode_status(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if isinstance(body, Mapping):
        return body
    if not body:
        return None
    try:
        value = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeError, RecursionError):  # deep nesting: not a Status
        return None
    return value if isinstance(value, dict) else None


def _text(body: bytes | str | Mapping[str, Any] | None) -> str:
    if body is None or isinstance(body, Mapping):
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + "..."


def status_error(
    http_status: int | None,
    body: bytes | str | Mapping[str, Any] | None,
    *,
    retry_after_header: str | None = None,
) -> ApiError:
    """The typed error for an HTTP error response or a watch ERROR event's object.

    ``http_status`` is None for a watch ERROR event (the Status ``code`` is used then).
    """
    status = _decode_status(body)
    if status is not None and (
        status.get("kind") not in (None, "Status")
        or not any(k in status for k in ("code", "reason", "message", "status"))
    ):
        status = None  # JSON, but not a Status: keep it as text
    raw: Mapping[str, Any] = {}
    details: Mapping[str, Any] = {}
    if status is None:
        code = http_status or 500
        reason, message = "", _text(body)
    else:
        raw = status
        reason = str(status.get("reason") or "")
        body_code = status.get("code")
        if http_status:
            code = http_status
        elif (
            isinstance(body_code, int)
            and not isinstance(body_code, bool)
            and 100 <= body_code <= 599
        ):
            code = body_code
        else:  # no usable code: the reason decides, as client-go's IsResourceExpired/IsGone do
            code = _REASON_CODES.get(reason, 500)
        message = str(status.get("message") or "")
        d = status.get("details")
        details = d if isinstance(d, Mapping) else {}
    if code == 410:
        return ResourceExpired(code, reason, message, details, status=raw)
    retry = _parse_retry_after(retry_after_header, details) if code == 429 or code >= 500 else None
    if code == 429:
        return TooManyRequests(code, reason, message, details, status=raw, retry_after=retry)
    if code == 504 and _is_too_large(raw, details):
        return TooLargeResourceVersion(
            code, reason, message, details, status=raw, retry_after=retry
        )
    if code == 500 and message.startswith(_SHARD_SELECTOR_REFUSED):
        return ShardSelectorRejected(code, reason, message, details, status=raw)
    typed = _BY_CODE.get(code)
    if code == 409 and reason == "AlreadyExists":
        typed = AlreadyExists
    if typed is not None:
        return typed(code, reason, message, details, status=raw)
    return ApiError(code, reason, message, details, status=raw, retry_after=retry)


_SHARD_SELECTOR_REFUSED = "invalid shard selector:"
_BY_CODE: dict[int, type[ApiError]] = {404: NotFound, 409: Conflict, 403: Forbidden, 422: Invalid}
