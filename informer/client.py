"""The writes client: get, create, replace, patch, apply and delete any resource.

Requests go through the aiohttp session and auth of the same ``kubernetes_asyncio`` ``ApiClient``
the informers use (TLS, tokens, exec plugins and their refresh), with bodies encoded and decoded by
msgspec: a write is one HTTP request, no generated model classes. Results are ``KubeObject``s;
failures are the typed errors of ``informer.errors`` (``Conflict``, ``NotFound``,
``AlreadyExists``, ``Forbidden``, ``Invalid``, ...).

Every successful write (not a dry run) is announced to the callbacks registered with
``observe_writes`` as a ``WriteRecord``: that is how a controller learns the resource version of
its own writes and waits until its cache has seen them before it reconciles again.

A request the server throttled is sent again by itself, as client-go's REST client does
(``RetryPolicy``): a 429 for every verb (the server refused it before running it), a 5xx that
carries ``Retry-After`` for requests that are safe to repeat, each after the server's Retry-After
(and a GET whose connection dropped, after 1 s), a bounded number of times, never past the
caller's deadline (``request_deadline``); counted in ``Client.statistics()`` and
``rest_client_request_retries_total``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import enum
import errno
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import msgspec

from informer import _checks
from informer._lazy import lazy_module
from informer._log import get_logger
from informer._requests import observe_request, observe_retry, request_info
from informer.backoff import WaitClock
from informer.errors import ApiError, MalformedResponse, TransportError, status_error
from informer.objects import KubeObject
from informer.ownership import has_finalizer
from informer.resource import Resource

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_module("aiohttp")

__all__ = ["Client", "ClientStats", "PatchType", "RetryPolicy", "WriteRecord", "request_deadline"]

log = get_logger("informer.client")

_ERROR_BODY_LIMIT = 64 * 1024
_encoder = msgspec.json.Encoder()


class PatchType(enum.StrEnum):
    """The patch formats of the API, by their ``Content-Type``."""

    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """One successful write, as its observers see it.

    ``resource_version`` is the RV of the object the server returned (None when a delete
    returned a Status); ``deleted`` is True for a delete whose object is gone (not merely marked
    for deletion behind finalizers or a grace period).
    """

    resource: Resource
    verb: str  # "create" | "replace" | "patch" | "apply" | "delete"
    name: str
    namespace: str | None
    uid: str | None
    resource_version: str | None
    deleted: bool
    # the labels the object has after the write (None for a Status): read-your-own-writes waits
    # only on informers whose label selector can hold the object
    labels: Mapping[str, str] | None = field(default=None, compare=False)


WriteObserver = Callable[[WriteRecord], None]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When the writes ``Client`` sends a request again by itself (client-go's REST client rules).

    Retried, at most ``max_retries`` times a request (client-go: 10), each after the server's
    Retry-After capped at ``max_retry_after`` (``default_retry_after`` for a 429 without one):

    - a 429, for every verb: the server (API Priority and Fairness, max-in-flight) refused the
      request before running it, so sending it again cannot apply it twice;
    - a 5xx that carries Retry-After (an API server shutting down, an etcd timeout), for requests
      that are safe to repeat even if the first one ran: reads, PUT and DELETE, and the patches
      whose result does not depend on how often they apply (merge, strategic merge, apply). Not
      a create (a ``generateName`` one would create twice) nor a JSON patch (an ``add`` to a list
      adds twice): client-go retries those too; here the caller sees the error instead.

    A GET whose connection was reset or cut (a pooled connection the server had closed) is sent
    again after ``default_retry_after``, as client-go does; a timeout or a write never.

    A retry whose wait would end past the caller's ``request_deadline`` is not made: the error
    is raised at once. ``max_retries=0`` turns retries off.
    """

    max_retries: int = 10
    max_retry_after: float = 60.0
    default_retry_after: float = 1.0

    def __post_init__(self) -> None:
        o = "RetryPolicy"
        _checks.integer(o, "max_retries", self.max_retries, minimum=0)
        _checks.non_negative(o, "max_retry_after", self.max_retry_after, infinite=True)
        _checks.non_negative(o, "default_retry_after", self.default_retry_after)


@dataclass(frozen=True, slots=True)
class ClientStats:
    """What a ``Client`` did about throttling: ``retries`` requests sent again (after a 429 or a
    5xx with Retry-After), ``throttled`` 429 answers received, ``retry_wait_seconds`` waited in
    all before retries, ``retries_exhausted`` retryable errors raised to the caller (out of
    retries, or the wait would have passed its deadline); ``observer_errors`` write observers
    that raised."""

    retries: int
    throttled: int
    retry_wait_seconds: float
    retries_exhausted: int
    observer_errors: int


_deadline: contextvars.ContextVar[float] = contextvars.ContextVar(
    "informer_request_deadline", default=math.inf
)


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """Requests of the writes ``Client`` made in this block (this task and the tasks it starts)
    are not retried past ``seconds`` from now: a throttled request whose Retry-After would end
    later raises at once, for the caller to decide (a leader renewing its Lease before its renew
    deadline). Nested blocks keep the earliest deadline. It bounds retries, not one request in
    flight: cancel (``asyncio.timeout``) to cut that."""
    deadline = min(_deadline.get(), asyncio.get_running_loop().time() + seconds)
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


_IDEMPOTENT = frozenset(("GET", "HEAD", "PUT", "DELETE"))


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


def _connection_dropped(exc: TransportError) -> bool:
    """Whether the connection was reset or closed under the request (client-go's
    ``IsConnectionReset``/``IsProbableEOF``), not refused nor timed out."""
    cause = exc.__cause__
    if isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return True
    if isinstance(cause, aiohttp.ClientConnectorError):  # refused, DNS, TLS: not a reset
        return False
    if isinstance(cause, ConnectionResetError | BrokenPipeError):
        return True
    return isinstance(cause, aiohttp.ClientOSError) and cause.errno in (
        errno.ECONNRESET,
        errno.EPIPE,
    )


def _query(**params: str | int | bool | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None or value is False:
            continue
        out.append((key, "true" if value is True else str(value)))
    return out


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _is_gone(obj: KubeObject) -> bool:
    """Whether a DELETE's answer means the object no longer exists."""
    if obj.kind == "Status":
        return True
    meta = _metadata(obj)
    if meta.get("finalizers"):
        return False
    grace = meta.get("deletionGracePeriodSeconds")
    return not (isinstance(grace, int) and grace > 0)


class Client:
    """Writes (and reads by name) for any resource, over an ``ApiClient``'s session and auth.

    ``field_manager`` names this client in ``managedFields`` (required by server-side apply);
    ``request_timeout`` bounds each request (each try). ``retry``: when a throttled request is
    sent again (see ``RetryPolicy``); ``clock`` is what its waits run on (the event loop's by
    default; a test passes a virtual one).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        field_manager: str = "informer",
        request_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        clock: WaitClock | None = None,
    ) -> None:
        self.api_client = api_client
        self.field_manager = field_manager
        self.request_timeout = request_timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self._sleep = clock.sleep if clock is not None else asyncio.sleep
        self._observers: list[WriteObserver] = []
        self.observer_errors = 0
        self._retries = 0
        self._throttled = 0
        self._retry_wait = 0.0
        self._retries_exhausted = 0

    def statistics(self) -> ClientStats:
        return ClientStats(
            retries=self._retries,
            throttled=self._throttled,
            retry_wait_seconds=self._retry_wait,
            retries_exhausted=self._retries_exhausted,
            observer_errors=self.observer_errors,
        )

    # -- observers ----------------------------------------------------------------------------

    def observe_writes(self, callback: WriteObserver) -> Callable[[], None]:
        """Call ``callback`` after every successful write; returns the unsubscribe function.

        Callbacks run synchronously, before the write returns, so a reconcile's next step already
        sees its write recorded. One that raises is logged and counted, never fails the write.
        """
        self._observers.append(callback)

        def unsubscribe() -> None:
            if callback in self._observers:
                self._observers.remove(callback)

        return unsubscribe

    def _announce(
        self,
        resource: Resource,
        verb: str,
        result: KubeObject,
        name: str,
        namespace: str | None,
    ) -> None:
        status = result.kind == "Status"
        uid = result.uid or None
        if status:
            details = result.get("details")
            uid = (str(details.get("uid") or "") or None) if isinstance(details, Mapping) else None
        record = WriteRecord(
            resource=resource,
            verb=verb,
            name=result.name or name,
            namespace=result.namespace or namespace,
            uid=uid,
            resource_version=result.resource_version or None,
            deleted=verb == "delete" and _is_gone(result),
            labels=None if status else result.labels,
        )
        for callback in list(self._observers):
            try:
                callback(record)
            except Exception as exc:
                self.observer_errors += 1
                log.error(
                    "client.observer_failed",
                    resource=resource.group_resource,
                    verb=verb,
                    error=type(exc).__name__,
                )

    # -- HTTP ---------------------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> KubeObject:
        """One API call: sent, and sent again while the server throttles it (``RetryPolicy``)."""
        tries = 0
        while True:
            try:
                return await self._send(method, path, query, body, content_type)
            except (ApiError, TransportError) as exc:
                if isinstance(exc, ApiError) and exc.code == 429:
                    self._throttled += 1
                wait = self._retry_wait_for(exc, method, content_type)
                if wait is None:
                    raise
                if tries >= self.retry.max_retries or wait > _deadline.get() - _loop_time():
                    self._retries_exhausted += 1
                    raise
                tries += 1
                self._retries += 1
                self._retry_wait += wait
                code = str(exc.code) if isinstance(exc, ApiError) else "<error>"
                observe_retry(method, self.api_client.configuration.host, code)
                log.debug(
                    "client.retry",
                    **request_info(method, path, query).log_fields(),
                    code=code,
                    retry=tries,
                    wait=round(wait, 3),
                )
                await self._sleep(wait)

    def _retry_wait_for(
        self, exc: ApiError | TransportError, method: str, content_type: str
    ) -> float | None:
        """How long to wait before sending this request again, or None: not to be retried."""
        policy = self.retry
        if isinstance(exc, TransportError):
            # client-go retries a GET whose connection was reset or cut (a pooled connection
            # the server had closed), as if told "Retry-After: 1"; never a timeout (that would
            # multiply request_timeout), never a write (it may have been applied)
            if method != "GET" or not _connection_dropped(exc):
                return None
            return min(policy.default_retry_after, policy.max_retry_after)
        if exc.code == 429:
            wait = policy.default_retry_after if exc.retry_after is None else exc.retry_after
        elif 500 <= exc.code <= 599 and exc.retry_after is not None:
            repeatable = method in _IDEMPOTENT or (
                method == "PATCH" and content_type != PatchType.JSON.value
            )
            if not repeatable:
                return None
            wait = exc.retry_after
        else:
            return None
        return min(wait, policy.max_retry_after)

    async def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> KubeObject:
        """One request through the ``ApiClient``'s aiohttp session with its auth headers.

        ``ApiClient.call_api`` would re-encode the body with ``json.dumps``; the session and the
        auth settings it uses are taken as they are instead.
        """
        api = self.api_client
        headers: dict[str, str] = {**api.default_headers, "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        await api.update_params_for_auth(headers, query, ["BearerToken"])
        rest = api.rest_client
        url = api.configuration.host + path
        if query:
            url += "?" + urlencode(query)
        extra: dict[str, Any] = {}
        if getattr(rest, "proxy", None):
            extra["proxy"] = rest.proxy
            if getattr(rest, "proxy_headers", None):
                extra["proxy_headers"] = rest.proxy_headers
        if getattr(rest, "server_hostname", None):
            extra["server_hostname"] = rest.server_hostname
        timeout = aiohttp.ClientTimeout(total=self.request_timeout)
        session: aiohttp.ClientSession = rest.pool_manager
        target = url[len(api.configuration.host) :]
        started = time.monotonic()
        try:
            async with session.request(
                method, url, data=body, headers=headers, timeout=timeout, **extra
            ) as resp:
                data = await resp.read()
                status = resp.status
                retry_after = resp.headers.get("Retry-After")
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            elapsed = time.monotonic() - started
            observe_request(method, api.configuration.host, target, None, elapsed, error=exc)
            failed = TransportError(f"{method} {path}: {type(exc).__name__}: {exc}")
            failed.request = request_info(method, path, query)
            del headers, body, extra  # not in the traceback's locals (see below)
            raise failed from exc.with_traceback(None)  # aiohttp's frames hold the headers
        observe_request(method, api.configuration.host, target, status, time.monotonic() - started)
        # not locals of a frame in the traceback of what this raises: a renderer that prints
        # locals (rich's, structlog's dict_tracebacks) would show the token, the object sent
        del headers, body, extra
        if not 200 <= status < 300:
            error = status_error(status, data[:_ERROR_BODY_LIMIT], retry_after_header=retry_after)
            error.request = request_info(method, path, query)
            del data  # the Status: the server's text
            raise error
        try:
            return KubeObject.from_raw(data)
        except (msgspec.DecodeError, UnicodeError, RecursionError) as exc:
            raise MalformedResponse(f"{method} {path}: the answer is not an object") from exc

    @staticmethod
    def _namespace(resource: Resource, namespace: str | None, obj: Mapping[str, Any]) -> str | None:
        if not resource.namespaced:
            if namespace:
                raise ValueError(f"{resource.plural} is cluster-scoped: no namespace")
            return None
        ns = namespace or _metadata(obj).get("namespace")
        if not ns:
            raise ValueError(f"{resource.plural} are namespaced: give a namespace")
        return str(ns)

    @staticmethod
    def _body(resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """A mutable copy of ``obj``, ``kind`` and ``apiVersion`` defaulted from ``resource``."""
        body = KubeObject.from_dict(obj).to_dict()
        body.setdefault("kind", resource.kind)
        body.setdefault("apiVersion", resource.api_version)
        return body

    @staticmethod
    def _path(resource: Resource, namespace: str | None, name: str, subresource: str | None) -> str:
        path = resource.path(namespace, name)
        return f"{path}/{subresource}" if subresource else path

    # -- verbs --------------------------------------------------------------------------------

    async def get(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> KubeObject:
        """The object as the server has it now (a consistent read); ``NotFound`` if absent."""
        ns = self._namespace(resource, namespace, {})
        return await self._request("GET", self._path(resource, ns, name, subresource), [])

    async def create(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> KubeObject:
        """Create ``obj`` (namespace from the argument or its metadata); ``AlreadyExists`` if the
        name is taken. ``generateName`` works: the result carries the generated name."""
        ns = self._namespace(resource, namespace, obj)
        body = self._body(resource, obj)
        query = _query(
            dryRun="All" if dry_run else None, fieldManager=field_manager or self.field_manager
        )
        name = str(_metadata(body).get("name") or "")
        try:
            result = await self._request(
                "POST", resource.path(ns), query, _encoder.encode(body), "application/json"
            )
        except (ApiError, TransportError) as exc:  # a create's URL names no object: the body's
            if exc.request is not None and name:
                exc.request = dataclasses.replace(exc.request, name=name)
            raise
        if not dry_run:
            self._announce(resource, "create", result, name, ns)
        return result

    async def replace(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        unconditional: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> KubeObject:
        """Replace the object by ``obj`` (PUT), with optimistic concurrency by default.

        ``obj`` must carry the ``metadata.resourceVersion`` it was read at: the server refuses
        with ``Conflict`` when the object changed since. ``unconditional=True`` overwrites
        whatever is there (the RV is dropped from the body).
        """
        body = self._body(resource, obj)
        meta = body.setdefault("metadata", {})
        name = meta.get("name")
        if not name:
            raise ValueError("replace needs metadata.name")
        if unconditional:
            meta.pop("resourceVersion", None)
        elif not meta.get("resourceVersion"):
            raise ValueError(
                "replace needs metadata.resourceVersion (optimistic concurrency); "
                "pass unconditional=True to overwrite whatever the server has"
            )
        ns = self._namespace(resource, namespace, body)
        query = _query(
            dryRun="All" if dry_run else None, fieldManager=field_manager or self.field_manager
        )
        result = await self._request(
            "PUT", self._path(resource, ns, name, subresource), query, _encoder.encode(body)
        )
        if not dry_run:
            self._announce(resource, "replace", result, name, ns)
        return result

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        type: PatchType = PatchType.MERGE,
        resource_version: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> KubeObject:
        """Patch the object: JSON merge patch (default), JSON patch (a list of operations),
        strategic merge patch, or server-side apply (see ``apply``).

        ``resource_version`` makes the patch conditional: for merge and strategic patches it is
        sent as ``metadata.resourceVersion`` (the server answers ``Conflict`` if it moved on),
        for a JSON patch as a leading ``test`` operation (``Invalid`` if it moved on).
        """
        ns = self._namespace(resource, namespace, {})
        body: Any
        if type is PatchType.JSON:
            if isinstance(patch, Mapping):
                raise TypeError("a JSON patch is a list of operations")
            body = [KubeObject.from_dict(op).to_dict() for op in patch]
            if resource_version is not None:
                test = {
                    "op": "test",
                    "path": "/metadata/resourceVersion",
                    "value": resource_version,
                }
                body.insert(0, test)
        else:
            if not isinstance(patch, Mapping):
                raise TypeError(f"a {type.name.lower()} patch is an object")
            body = KubeObject.from_dict(patch).to_dict()
            if resource_version is not None:
                body.setdefault("metadata", {})["resourceVersion"] = resource_version
        query = _query(
            dryRun="All" if dry_run else None,
            fieldManager=field_manager or self.field_manager,
            force=force if type is PatchType.APPLY else None,
        )
        result = await self._request(
            "PATCH",
            self._path(resource, ns, name, subresource),
            query,
            _encoder.encode(body),
            type.value,
        )
        if not dry_run:
            verb = "apply" if type is PatchType.APPLY else "patch"
            self._announce(resource, verb, result, name, ns)
        return result

    async def apply(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> KubeObject:
        """Server-side apply ``obj`` (the fields this manager owns); ``force`` takes fields owned
        by other managers instead of failing with ``Conflict``. Creates the object if absent."""
        body = self._body(resource, obj)
        name = _metadata(body).get("name")
        if not name:
            raise ValueError("apply needs metadata.name")
        ns = self._namespace(resource, namespace, body)
        return await self.patch(
            resource,
            str(name),
            body,
            namespace=ns,
            type=PatchType.APPLY,
            subresource=subresource,
            field_manager=field_manager,
            force=force,
            dry_run=dry_run,
        )

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        status: Mapping[str, Any],
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
    ) -> KubeObject:
        """Merge ``status`` into the object's ``status`` through the ``/status`` subresource."""
        return await self.patch(
            resource,
            name,
            {"status": status},
            namespace=namespace,
            subresource="status",
            resource_version=resource_version,
        )

    async def add_finalizer(
        self, resource: Resource, obj: KubeObject, finalizer: str
    ) -> KubeObject:
        """Add ``finalizer`` to ``obj`` unless it has it (then ``obj`` is returned, nothing sent).

        A merge patch of ``metadata.finalizers`` conditional on ``obj``'s resourceVersion: the
        list is replaced as a whole, so a concurrent change must fail (``Conflict``) rather than
        be overwritten; the reconcile is retried on a fresher object.
        """
        if has_finalizer(obj, finalizer):
            return obj
        return await self._set_finalizers(resource, obj, [*self._finalizers(obj), finalizer])

    async def remove_finalizer(
        self, resource: Resource, obj: KubeObject, finalizer: str
    ) -> KubeObject:
        """Remove ``finalizer`` from ``obj`` if present (conditional, as ``add_finalizer``).
        Removing the last finalizer of an object being deleted lets it go."""
        if not has_finalizer(obj, finalizer):
            return obj
        kept = [f for f in self._finalizers(obj) if f != finalizer]
        return await self._set_finalizers(resource, obj, kept)

    @staticmethod
    def _finalizers(obj: KubeObject) -> list[str]:
        return [str(f) for f in _metadata(obj).get("finalizers") or ()]

    async def _set_finalizers(
        self, resource: Resource, obj: KubeObject, finalizers: list[str]
    ) -> KubeObject:
        return await self.patch(
            resource,
            obj.name,
            {"metadata": {"finalizers": finalizers or None}},
            namespace=obj.namespace or None,
            resource_version=obj.resource_version,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> KubeObject:
        """Delete the object; the answer is the object (marked for deletion, or as last stored
        for kinds that return it) or the API's ``Status``.

        ``uid`` and ``resource_version`` are preconditions (``Conflict`` when they do not match:
        the name now belongs to another object, or the object changed);
        ``propagation_policy`` is ``Orphan``, ``Background`` or ``Foreground``.
        """
        ns = self._namespace(resource, namespace, {})
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {
            k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v is not None
        }
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        query = _query(dryRun="All" if dry_run else None)
        result = await self._request(
            "DELETE", resource.path(ns, name), query, _encoder.encode(options)
        )
        if not dry_run:
            self._announce(resource, "delete", result, name, ns)
        return result
