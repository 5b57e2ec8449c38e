"""``Transport``: raw LIST and WATCH requests for any resource, through a ``kubernetes_asyncio``
``ApiClient``, with no state.

It builds each request's query, sends it through the ApiClient's aiohttp session with a
streaming body, and turns an HTTP error into the typed error of ``informer.errors``. A LIST
body is decoded by ``_decode``; a WATCH is a ``WatchStream``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from informer import _checks
from informer._lazy import lazy_module
from informer._requests import observe_latency, observe_request, request_info
from informer.errors import (
    ConfigurationError,
    MalformedResponse,
    TransportError,
    status_error,
)
from informer.objects import Known, PagePacking, Trim
from informer.resource import Resource
from informer.shards import ShardSelector
from informer.transport._decode import _DECODE_ERRORS, ListPage, _decode_list
from informer.transport._pool import _pool_of
from informer.transport._watch_stream import WatchStream

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_module("aiohttp")

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Transport"]

DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024
_ERROR_BODY_LIMIT = 64 * 1024


def _query(**params: str | int | bool | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        else:
            out.append((key, str(value)))
    return out


def _base_url(api_client: Any) -> str:
    host = getattr(getattr(api_client, "configuration", None), "host", "")
    return host if isinstance(host, str) else ""


def _shard_param(selector: ShardSelector | None) -> str | None:
    if selector is None:
        return None
    if not isinstance(selector, ShardSelector):
        raise ConfigurationError(f"shard_selector must be a ShardSelector: {selector!r}")
    return str(selector)


class Transport:
    """Raw list/watch calls through a ``kubernetes_asyncio`` ``ApiClient``.

    ``max_line_bytes`` bounds one watch line (memory); ``idle_margin`` is added to a watch's
    ``timeoutSeconds`` to get its default client-side idle timeout.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        idle_margin: float = 30.0,
        request_timeout: float = 60.0,
        connect_timeout: float = 30.0,
    ) -> None:
        if not callable(getattr(api_client, "call_api", None)):
            raise ConfigurationError(
                f"a kubernetes_asyncio ApiClient is needed (see informer.connect): {api_client!r}"
            )
        _checks.integer("Transport", "max_line_bytes", max_line_bytes, minimum=1)
        _checks.non_negative("Transport", "idle_margin", idle_margin)
        _checks.positive("Transport", "request_timeout", request_timeout)
        _checks.positive("Transport", "connect_timeout", connect_timeout)
        self.api_client = api_client
        self._pool = _pool_of(api_client)
        self.max_line_bytes = max_line_bytes
        self.idle_margin = idle_margin
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout

    async def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        timeout: aiohttp.ClientTimeout,
        client: Any = None,
        latency: bool = True,
    ) -> aiohttp.ClientResponse:
        """Send one request; counted (and logged at DEBUG) when its status arrives, its latency
        observed then too unless ``latency`` is False (the caller reads the body first)."""
        api = client or self.api_client
        started = time.monotonic()
        try:
            resp: aiohttp.ClientResponse = await api.call_api(
                path,
                method,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            elapsed = time.monotonic() - started
            observe_request(method, _base_url(api), path, None, elapsed, error=exc)
            failed = TransportError(f"{method} {path}: {type(exc).__name__}: {exc}")
            failed.request = request_info(method, path, query)
            # the cause's frames (call_api's, aiohttp's) hold the request's headers as locals: a
            # renderer that prints locals (rich's, dict_tracebacks) would show the token
            raise failed from exc.with_traceback(None)
        url = resp.url
        target = f"{url.raw_path}?{url.raw_query_string}" if url.raw_query_string else path
        elapsed = time.monotonic() - started
        observe_request(method, _base_url(api), target, resp.status, elapsed, latency=latency)
        return resp

    async def _raise_for_status(self, resp: aiohttp.ClientResponse) -> None:
        if 200 <= resp.status < 300:
            return
        buf = bytearray()
        try:
            async with asyncio.timeout(self.request_timeout):
                while len(buf) < _ERROR_BODY_LIMIT:
                    chunk = await resp.content.read(_ERROR_BODY_LIMIT - len(buf))
                    if not chunk:
                        break
                    buf += chunk
        except (aiohttp.ClientError, OSError, TimeoutError):
            pass  # classify by what arrived
        finally:
            resp.close()
        body = bytes(buf)
        error = status_error(resp.status, body, retry_after_header=resp.headers.get("Retry-After"))
        error.request = request_info(resp.method, resp.url.raw_path, resp.url.raw_query_string)
        del buf, body  # the Status, the server's text: not a local of a frame in the traceback
        raise error

    async def _get(self, path: str, query: list[tuple[str, str]], what: str) -> bytes:
        """GET ``path`` and read its whole body (an HTTP error raises its typed error); the
        request's latency ends with the body, as client-go measures a LIST's."""
        timeout = aiohttp.ClientTimeout(total=self.request_timeout, connect=self.connect_timeout)
        started = time.monotonic()
        resp = await self._send("GET", path, query, timeout, latency=False)
        try:
            await self._raise_for_status(resp)
            try:
                return await resp.read()
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                raise TransportError(f"GET {path}: reading {what}: {exc}") from exc
            finally:
                resp.release()
        finally:
            observe_latency("GET", _base_url(self.api_client), time.monotonic() - started)

    async def get_json(self, path: str) -> Any:
        """GET a JSON document that is not a resource list (discovery: ``/api``, ``/apis/G/V``).

        HTTP errors raise the typed errors of ``informer.errors``; a body that is not JSON raises
        ``MalformedResponse``.
        """
        body = await self._get(path, [], "the body")
        try:
            return msgspec.json.decode(body)
        except _DECODE_ERRORS as exc:
            raise MalformedResponse(f"GET {path}: body is not JSON: {exc}") from exc

    async def list_page(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        known: Known | None = None,
        trim: Trim | None = None,
        shard_selector: ShardSelector | None = None,
        pack: PagePacking | None = None,
    ) -> ListPage:
        """One LIST request; parameters are sent exactly as given (None = absent).

        ``shard_selector`` (KEP-5866) is sent in the server's canonical spelling; whether the
        server applied it is ``ListPage.shard_info``. A ``ShardSelector`` is valid by
        construction: nothing malformed reaches the server (which would answer 500).

        ``known`` and ``trim``: see ``KubeObject.from_list_item`` (reuse of cached objects,
        byte-level transform), applied to each item as the page is decoded. ``pack``: the
        items are for a store that packs them (``PagePacking``): each new one keeps its slice
        of the page until the packer has compressed it.
        """
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
            limit=limit,
            shardSelector=_shard_param(shard_selector),
            **{"continue": continue_},
        )
        path = resource.path(namespace)
        body = await self._get(path, query, "the list")
        return _decode_list(body, resource, path, known, trim, pack)

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool | None = None,
        timeout_seconds: int | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        idle_timeout: float | None = None,
        on_open: Callable[[bool], None] | None = None,
        trim: Trim | None = None,
        shard_selector: ShardSelector | None = None,
        pack: bool = False,
    ) -> WatchStream:
        """A WATCH stream; use as ``async with transport.watch(...) as events: async for ...``.

        ``idle_timeout`` defaults to ``timeout_seconds`` plus ``idle_margin`` (none without
        ``timeout_seconds``): a stream silent for longer raises ``WatchIdleTimeout``.
        ``on_open(beyond_pool)`` is called when the request is sent (see ``WatchStream``).
        ``trim``: a byte-level transform (``informer.transforms.DropFields``) applied to the
        object of every ADDED, MODIFIED and DELETED event, in the decode of its line.
        ``shard_selector``: see ``list_page``; nothing on a watch says whether the server applied
        it (a server without its watch cache does not, for a watch with no label or field
        selector): check each event's hash. ``pack``: the events are for a store that packs
        its objects as they arrive: an ADDED or MODIFIED object keeps its slice of the line
        until the packer has compressed it (``KubeObject._from_event_line_to_pack``).
        """
        query = _query(
            watch=True,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
            allowWatchBookmarks=allow_watch_bookmarks or None,
            sendInitialEvents=send_initial_events,
            timeoutSeconds=timeout_seconds,
            shardSelector=_shard_param(shard_selector),
        )
        if idle_timeout is None and timeout_seconds is not None:
            idle_timeout = timeout_seconds + self.idle_margin
        return WatchStream(self, resource.path(namespace), query, idle_timeout, on_open, trim, pack)
