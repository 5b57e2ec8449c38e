"""What every request the library sends leaves behind: client-go's request metrics, one DEBUG
record, and a description of the request for the errors it raises.

The two places that talk HTTP (``Transport._send``: lists, watches, discovery; ``Client._request``:
reads by name and writes) call ``observe_request`` once per request, when its status is known
(the response headers: for a watch, when it is open) or when it failed without one. That feeds:

- ``REQUESTS``: process-wide counts by ``(code, method, host)`` (``code`` = ``"<error>"`` without
  an HTTP answer) and latency histograms by ``(verb, host)`` in client-go's bucket layout: what
  ``informer.metrics`` exports as ``rest_client_requests_total`` and
  ``rest_client_request_duration_seconds``, as client-go's REST client does (process-wide, not
  per client; a list's latency ends with its body, a watch's when it is open).
- one ``transport.request`` record at DEBUG on the ``informer.transport`` logger (verb, path with
  its query, status, duration): client-go's ``-v=6``. The host's user info and the request's
  headers (its token) are never in it; a path holds names, never object data.

``RequestInfo`` describes a request as the API server's ``RequestInfo`` does (Kubernetes verb,
resource, namespace, name, subresource), parsed from its method and URL: the typed API errors
carry it (``ApiError.request``), so a failed reconcile's record says which request failed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from informer._histogram import REQUEST_BUCKETS, Histogram, HistogramSnapshot

__all__ = [
    "REQUESTS",
    "RequestInfo",
    "RequestStats",
    "observe_latency",
    "observe_request",
    "observe_retry",
    "request_info",
]

_logger = logging.getLogger("informer.transport")
_NAMESPACE_SUBRESOURCES = frozenset(("status", "finalize"))
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """One API request as the API server names it. ``verb`` is the Kubernetes verb (``get``,
    ``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``, ``deletecollection``),
    ``resource`` is ``plural.group`` (``configmaps`` for core; ``""`` for a path that names no
    resource, e.g. discovery), ``method`` and ``path`` the HTTP ones (no query)."""

    method: str
    path: str
    verb: str
    resource: str = ""
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None

    def log_fields(self) -> dict[str, str]:
        """The fields a log record carries for this request (names, never object data)."""
        fields = {"verb": self.verb, "resource": self.resource}
        if self.namespace:
            fields["namespace"] = self.namespace
        if self.name:
            fields["name"] = self.name
        if self.subresource:
            fields["subresource"] = self.subresource
        return fields


def request_info(method: str, path: str, query: str | list[tuple[str, str]] = "") -> RequestInfo:
    """Describe a request from its HTTP method, URL path and query (as the API server's
    ``RequestInfoFactory`` does: ``/api/v1/namespaces/ns/pods/name/status`` is ``pods`` in
    ``ns``, object ``name``, subresource ``status``)."""
    method = method.upper()
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/") if p]
    group = ""
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:  # discovery, /version, /healthz: a read of a document
        return RequestInfo(method, path, "get" if method == "GET" else method.lower())
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            namespace = None  # the namespace object itself (or its status/finalize)
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else None
    subresource = "/".join(rest[2:]) or None
    if method == "GET":
        pairs = parse_qsl(query) if isinstance(query, str) else query
        watching = any(k == "watch" and v.lower() in ("true", "1") for k, v in pairs)
        verb = "watch" if watching else ("get" if name is not None else "list")
    elif method == "DELETE":
        verb = "delete" if name is not None else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    resource = f"{plural}.{group}" if group else plural
    return RequestInfo(method, path, verb, resource, namespace, name, subresource)


class RequestStats:
    """Counts and latencies of every request sent (see the module docstring)."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, str, str], int] = {}
        self._latencies: dict[tuple[str, str], Histogram] = {}
        self._retries: dict[tuple[str, str, str], int] = {}

    def count(self, method: str, host: str, code: str) -> None:
        key = (code, method, host)
        self._results[key] = self._results.get(key, 0) + 1

    def observe(self, method: str, host: str, seconds: float) -> None:
        latency = self._latencies.get((method, host))
        if latency is None:
            latency = self._latencies[(method, host)] = Histogram(REQUEST_BUCKETS)
        latency.observe(seconds)

    def observe_retry(self, method: str, host: str, code: str) -> None:
        key = (code, method, host)
        self._retries[key] = self._retries.get(key, 0) + 1

    def retries(self) -> dict[tuple[str, str, str], int]:
        """Requests sent again by ``(code, method, host)``, ``code`` the answer that made the
        client retry (client-go's ``rest_client_request_retries_total``)."""
        return dict(self._retries)

    def results(self) -> dict[tuple[str, str, str], int]:
        """Requests by ``(code, method, host)``, since the process started."""
        return dict(self._results)

    def latencies(self) -> dict[tuple[str, str], HistogramSnapshot]:
        """Latency histograms by ``(verb, host)`` (the HTTP method, as client-go's ``verb``)."""
        return {key: h.snapshot() for key, h in list(self._latencies.items())}


REQUESTS = RequestStats()


def _host(base_url: str) -> str:
    """``host:port`` of the API server's URL (without user info, which may hold a password)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port is not None else host


_hosts: dict[str, str] = {}


def _host_of(base_url: str) -> str:
    host = _hosts.get(base_url)
    if host is None:
        host = _hosts[base_url] = _host(base_url)
    return host


def observe_request(
    method: str,
    base_url: str,
    path: str,
    status: int | None,
    seconds: float,
    *,
    error: BaseException | None = None,
    latency: bool = True,
) -> None:
    """Count one request (``status`` None: no HTTP answer, ``error`` says why) and log it at
    DEBUG (``seconds``: until its status, as client-go's ``-v=6``). ``base_url`` is the API
    server's URL (``Configuration.host``); ``path`` may carry the query. ``latency=False``: the
    caller reads a body and calls ``observe_latency`` once it has (client-go's request latency
    of a LIST includes its body; a watch's ends when it is open)."""
    host = _host_of(base_url)
    REQUESTS.count(method, host, "<error>" if status is None else str(status))
    if latency or status is None:
        REQUESTS.observe(method, host, seconds)
    if _logger.isEnabledFor(logging.DEBUG):
        from informer._log import get_logger  # lazy: this module stays a leaf

        fields: dict[str, object] = {
            "verb": method,
            "host": host,
            "path": path,
            "duration": round(seconds, 6),
        }
        if status is not None:
            fields["status"] = status
        if error is not None:
            fields["error"] = type(error).__name__
        get_logger("informer.transport").debug("transport.request", **fields)


def observe_latency(method: str, base_url: str, seconds: float) -> None:
    """The latency of a request counted by ``observe_request(..., latency=False)``."""
    REQUESTS.observe(method, _host_of(base_url), seconds)


def observe_retry(method: str, base_url: str, code: str) -> None:
    """Count one request sent again after the answer ``code`` (a 429, a 5xx; ``<error>``: the
    connection dropped)."""
    REQUESTS.observe_retry(method, _host_of(base_url), code)
