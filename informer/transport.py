"""Raw LIST pages and WATCH streams for any resource, over aiohttp, with no state.

Auth, TLS and the server URL come from a ``kubernetes_asyncio`` ``ApiClient`` (kubeconfig,
in-cluster config, exec plugins, token refresh); requests go through its aiohttp session with
streaming bodies. Objects come back as ``KubeObject`` (raw JSON + decoded metadata). HTTP errors
and watch ``ERROR`` events become the typed errors of ``informer.errors``.
"""

from __future__ import annotations

import asyncio
import copy
import math
import weakref
from collections.abc import AsyncGenerator, Callable
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp
import msgspec

from informer import _checks
from informer._log import get_logger
from informer.errors import (
    ConfigurationError,
    MalformedResponse,
    MalformedWatchLine,
    TransportError,
    WatchIdleTimeout,
    WatchLineTooLong,
    WatchStreamError,
    status_error,
)
from informer.objects import Known, KubeObject, Trim
from informer.resource import Resource

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "INITIAL_EVENTS_END",
    "ListPage",
    "Transport",
    "WatchEvent",
    "WatchStream",
]

log = get_logger("informer.transport")

DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_ERROR_BODY_LIMIT = 64 * 1024

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
_EVENT_TYPES: frozenset[str] = frozenset(("ADDED", "MODIFIED", "DELETED", "BOOKMARK"))


class _ListMeta(msgspec.Struct, gc=False, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(name="continue", default="")
    remaining_item_count: int | None = None


class _ListBody(msgspec.Struct, gc=False):
    kind: str = ""
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


class _Envelope(msgspec.Struct, gc=False):
    type: str
    object: msgspec.Raw


class _BookmarkMeta(msgspec.Struct, gc=False, rename="camel"):
    resource_version: str = ""
    annotations: dict[str, str] | None = None


class _BookmarkObject(msgspec.Struct, gc=False):
    metadata: _BookmarkMeta = msgspec.field(default_factory=_BookmarkMeta)


class _Bookmark(msgspec.Struct, gc=False):
    object: _BookmarkObject


# what decoding server bytes may raise: RecursionError for JSON nested deeper than msgspec's limit
_DECODE_ERRORS = (msgspec.DecodeError, UnicodeError, RecursionError)

_list_decoder = msgspec.json.Decoder(_ListBody)
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_bookmark_decoder = msgspec.json.Decoder(_Bookmark)


class ListPage:
    """One page of a LIST: items, the ListMeta RV, ``continue`` and ``remainingItemCount``.

    A page read from a server builds its items from the page's JSON when ``items`` is first
    read (a malformed item raises ``MalformedResponse`` there), so a pager can send the request
    for the next page before doing that work; ``item_count`` needs no build.
    """

    __slots__ = (
        "_build",
        "_count",
        "_items",
        "continue_",
        "remaining_item_count",
        "resource_version",
    )

    def __init__(
        self,
        items: list[KubeObject],
        resource_version: str,
        continue_: str | None,
        remaining_item_count: int | None,
    ) -> None:
        self._items: list[KubeObject] | None = items
        self._build: Callable[[], list[KubeObject]] | None = None
        self._count = len(items)
        self.resource_version = resource_version
        self.continue_ = continue_
        self.remaining_item_count = remaining_item_count

    @classmethod
    def _deferred(
        cls,
        build: Callable[[], list[KubeObject]],
        count: int,
        resource_version: str,
        continue_: str | None,
        remaining_item_count: int | None,
    ) -> ListPage:
        page = cls([], resource_version, continue_, remaining_item_count)
        page._items, page._build, page._count = None, build, count
        return page

    @property
    def items(self) -> list[KubeObject]:
        items = self._items
        if items is None:
            assert self._build is not None
            items = self._items = self._build()
            self._build = None
        return items

    @property
    def item_count(self) -> int:
        """How many items the page holds (without building them)."""
        return self._count

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ListPage):
            return NotImplemented
        return (self.resource_version, self.continue_, self.remaining_item_count, self.items) == (
            other.resource_version,
            other.continue_,
            other.remaining_item_count,
            other.items,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ListPage({self._count} items, resource_version={self.resource_version!r}, "
            f"continue_={self.continue_!r}, remaining_item_count={self.remaining_item_count!r})"
        )


class WatchEvent(msgspec.Struct, frozen=True, gc=False):
    """One watch event. For a BOOKMARK only ``object.resource_version`` is meaningful."""

    type: EventType
    object: KubeObject
    initial_events_end: bool = False


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


class _Pool:
    """How our watches use one ApiClient's connection pool, shared by every Transport on it.

    Over HTTP/1.1 a watch holds its connection for minutes (client-go multiplexes watches over
    HTTP/2; aiohttp cannot). A bounded pool (kubernetes_asyncio's default: 100) would make the
    watches beyond its limit wait, silently, for one of the others to end. So watches take at
    most ``limit - reserve`` of its connections (the reserve serves lists and the application's
    own calls); the others go through ``beyond``: a client with the same configuration and an
    unbounded pool, created when first needed and closed with its last watch.
    """

    def __init__(self, api_client: Any, limit: int) -> None:
        self.api_client = api_client
        self.limit = limit
        self.watch_limit = limit - max(1, limit // 10) if limit else 0
        self.watches = 0  # our watches holding one of the pool's connections
        self.beyond: Any = None
        self.beyond_watches = 0

    async def acquire(self) -> tuple[Any, bool]:
        """The client for a new watch, and whether it is the one beyond the pool."""
        if not self.limit or self.watches < self.watch_limit:
            self.watches += 1
            return self.api_client, False
        if self.beyond is None:
            from kubernetes_asyncio.client import ApiClient

            cfg = copy.copy(self.api_client.configuration)
            cfg.connection_pool_maxsize = 0  # aiohttp: no limit
            beyond = ApiClient(cfg)
            beyond.default_headers = dict(self.api_client.default_headers)
            beyond.cookie = self.api_client.cookie
            self.beyond = beyond
            log.warning(
                "transport.watches_beyond_pool",
                pool_limit=self.limit,
                watches=self.watches,
                detail="each watch holds a connection: the pool of this ApiClient cannot serve "
                "more, so further watches use an unbounded pool of their own; set "
                "Configuration.connection_pool_maxsize = 0 or use informer.connect()",
            )
        self.beyond_watches += 1
        return self.beyond, True

    async def release(self, beyond: bool) -> None:
        if not beyond:
            self.watches -= 1
            return
        self.beyond_watches -= 1
        if self.beyond_watches == 0 and self.beyond is not None:
            client, self.beyond = self.beyond, None
            await client.close()


_pools: weakref.WeakKeyDictionary[Any, _Pool] = weakref.WeakKeyDictionary()


def _pool_of(api_client: Any) -> _Pool:
    """The shared accounting of ``api_client``'s pool (unbounded when it cannot be read)."""
    try:
        pool = _pools.get(api_client)
    except TypeError:  # not weak-referenceable: not an ApiClient we can account for
        return _Pool(api_client, 0)
    if pool is None:
        try:
            limit = int(api_client.rest_client.pool_manager.connector.limit or 0)
        except (AttributeError, TypeError, ValueError):
            limit = 0
        pool = _pools[api_client] = _Pool(api_client, limit)
    return pool


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
    ) -> aiohttp.ClientResponse:
        try:
            resp: aiohttp.ClientResponse = await (client or self.api_client).call_api(
                path,
                method,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
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
        raise status_error(resp.status, body, retry_after_header=resp.headers.get("Retry-After"))

    async def get_json(self, path: str) -> Any:
        """GET a JSON document that is not a resource list (discovery: ``/api``, ``/apis/G/V``).

        HTTP errors raise the typed errors of ``informer.errors``; a body that is not JSON raises
        ``MalformedResponse``.
        """
        timeout = aiohttp.ClientTimeout(total=self.request_timeout, connect=self.connect_timeout)
        resp = await self._send("GET", path, [], timeout)
        await self._raise_for_status(resp)
        try:
            body = await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(f"GET {path}: reading the body: {exc}") from exc
        finally:
            resp.release()
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
    ) -> ListPage:
        """One LIST request; parameters are sent exactly as given (None = absent).

        ``known`` and ``trim``: see ``KubeObject.from_list_item`` (reuse of cached objects,
        byte-level transform), applied to each item as the page is decoded.
        """
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
            limit=limit,
            **{"continue": continue_},
        )
        path = resource.path(namespace)
        timeout = aiohttp.ClientTimeout(total=self.request_timeout, connect=self.connect_timeout)
        resp = await self._send("GET", path, query, timeout)
        await self._raise_for_status(resp)
        try:
            body = await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(f"GET {path}: reading the list: {exc}") from exc
        finally:
            resp.release()
        return _decode_list(body, resource, path, known, trim)

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
    ) -> WatchStream:
        """A WATCH stream; use as ``async with transport.watch(...) as events: async for ...``.

        ``idle_timeout`` defaults to ``timeout_seconds`` plus ``idle_margin`` (none without
        ``timeout_seconds``): a stream silent for longer raises ``WatchIdleTimeout``.
        ``on_open(beyond_pool)`` is called when the request is sent (see ``WatchStream``).
        ``trim``: a byte-level transform (``informer.transforms.DropFields``) applied to the
        object of every ADDED, MODIFIED and DELETED event, in the decode of its line.
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
        )
        if idle_timeout is None and timeout_seconds is not None:
            idle_timeout = timeout_seconds + self.idle_margin
        return WatchStream(self, resource.path(namespace), query, idle_timeout, on_open, trim)


class WatchStream:
    """An open WATCH: an async iterator of ``WatchEvent``; closing it closes the connection."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        query: list[tuple[str, str]],
        idle_timeout: float | None,
        on_open: Callable[[bool], None] | None = None,
        trim: Trim | None = None,
    ) -> None:
        self._transport = transport
        self._on_open = on_open
        self.trim = trim
        self.path = path
        self.query = query
        self.idle_timeout = idle_timeout
        self._resp: aiohttp.ClientResponse | None = None
        self._chunks = self._run()
        self._buffer: list[WatchEvent] = []  # decoded, not yet handed out (newest last)
        self.bytes_read = 0
        # opened through the pool beyond the ApiClient's, which had no connection to spare
        self.beyond_pool = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        buffer = self._buffer
        while not buffer:
            buffer.extend(await self._chunks.__anext__())
        return buffer.pop(0)

    async def batches(self) -> AsyncGenerator[list[WatchEvent], None]:
        """The events as they arrive, one list per network read (the reflector's hot path:
        no per-event await). ``unread`` puts events back in front of the next batch."""
        while True:
            if self._buffer:
                batch, self._buffer = self._buffer, []
                yield batch
                continue
            try:
                batch = await self._chunks.__anext__()
            except StopAsyncIteration:
                return
            if batch:
                yield batch

    def unread(self, events: list[WatchEvent]) -> None:
        """Hand ``events`` out again, first (what a consumer took but leaves to the next one)."""
        self._buffer[:0] = events

    async def aclose(self) -> None:
        """Stop reading and close the connection."""
        await self._chunks.aclose()
        if self._resp is not None:
            self._resp.close()

    async def _read_chunk(self, resp: aiohttp.ClientResponse) -> bytes:
        try:
            if self.idle_timeout is None:
                return await resp.content.readany()
            async with asyncio.timeout(self.idle_timeout):
                return await resp.content.readany()
        except TimeoutError as exc:
            raise WatchIdleTimeout(self.idle_timeout or math.inf) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise TransportError(f"watch {self.path}: {type(exc).__name__}: {exc}") from exc

    async def _open(self) -> aiohttp.ClientResponse:
        """Send the WATCH (through the pool our watches may use) and check its status."""
        t = self._transport
        client, self.beyond_pool = await t._pool.acquire()
        if self._on_open is not None:
            self._on_open(self.beyond_pool)
        try:
            timeout = aiohttp.ClientTimeout(total=None, connect=t.connect_timeout)
            try:
                async with asyncio.timeout(self.idle_timeout):
                    resp = self._resp = await t._send("GET", self.path, self.query, timeout, client)
            except TimeoutError as exc:
                raise WatchIdleTimeout(self.idle_timeout or math.inf) from exc
            await t._raise_for_status(resp)
        except BaseException:
            await t._pool.release(self.beyond_pool)
            raise
        return resp

    async def _run(self) -> AsyncGenerator[list[WatchEvent], None]:
        """The events of each network read, as one list (a line split across reads belongs
        to the read that completes it). A bad line raises after the events before it."""
        t = self._transport
        resp = await self._open()
        limit = t.max_line_bytes
        trim = self.trim
        parts: list[bytes] = []
        pending = 0  # bytes in parts
        offset = 0  # stream offset of the line being assembled
        try:
            while True:
                chunk = await self._read_chunk(resp)
                if not chunk:
                    # A clean end after a last line without its newline: keep that line when
                    # it is a complete event (as client-go's JSON framer does).
                    last = _decode_last_line(b"".join(parts), offset, self.path, trim)
                    if last is not None:
                        yield [last]
                    return
                self.bytes_read += len(chunk)
                start = 0
                batch: list[WatchEvent] = []
                while True:
                    nl = chunk.find(b"\n", start)
                    if nl < 0:
                        rest = len(chunk) - start
                        if rest:
                            parts.append(chunk[start:])
                            pending += rest
                            if pending > limit:
                                if batch:
                                    yield batch
                                raise WatchLineTooLong(offset, limit)
                        break
                    if pending + nl - start > limit:
                        if batch:
                            yield batch
                        raise WatchLineTooLong(offset, limit)
                    if parts:
                        parts.append(chunk[start:nl])
                        line = b"".join(parts)
                        parts.clear()
                        pending = 0
                    else:
                        line = chunk[start:nl]
                    try:
                        event = _decode_line(line, offset, trim)
                    except BaseException:
                        if batch:
                            yield batch  # the events before the bad line are good
                        raise
                    offset += len(line) + 1
                    start = nl + 1
                    if event is not None:
                        batch.append(event)
                if batch:
                    yield batch
        finally:
            resp.close()
            await t._pool.release(self.beyond_pool)


def _decode_list(
    body: bytes,
    resource: Resource,
    path: str,
    known: Known | None = None,
    trim: Trim | None = None,
) -> ListPage:
    """A 2xx LIST body: a ``ListPage``, else ``MalformedResponse`` (or the ``ApiError`` of a
    Status in its place). The envelope is decoded here, the items when the page's ``items`` is
    read."""
    try:
        decoded = _list_decoder.decode(body)
    except _DECODE_ERRORS as exc:
        raise MalformedResponse(f"GET {path}: list body is not a list: {exc}") from exc
    if decoded.kind == "Status":
        # A 2xx Status (a proxy, an odd server) is not an empty list at RV "".
        err = status_error(None, body)
        if err.status.get("status") == "Success" or 200 <= err.code < 300:
            raise MalformedResponse(f"GET {path}: a {err.code} Status instead of a list")
        raise err
    raws = decoded.items or []

    def build() -> list[KubeObject]:
        try:
            return KubeObject._from_list_items(
                raws, resource.kind, resource.api_version, known, trim
            )
        except _DECODE_ERRORS as exc:
            raise MalformedResponse(f"GET {path}: list body is not a list: {exc}") from exc

    meta = decoded.metadata
    return ListPage._deferred(
        build, len(raws), meta.resource_version, meta.continue_ or None, meta.remaining_item_count
    )


def _decode_last_line(
    line: bytes, offset: int, path: str, trim: Trim | None = None
) -> WatchEvent | None:
    """The unterminated line a stream ended with: an event when complete, else an error."""
    if not line.strip():
        return None
    try:
        msgspec.json.decode(line)
    except _DECODE_ERRORS as exc:
        raise WatchStreamError(
            f"watch {path}: stream ended inside a line at byte {offset}"
        ) from exc
    return _decode_line(line, offset, trim)


def _decode_line(line: bytes, offset: int, trim: Trim | None = None) -> WatchEvent | None:
    """One watch line, decoded once into the event type and the object the store keeps
    (``trim``: cut from the object's bytes in that decode)."""
    try:
        if trim is None:
            kind, obj = KubeObject.from_event_line(line)
        else:
            kind, obj = KubeObject.from_trimmed_event_line(line, trim)
    except _DECODE_ERRORS as exc:
        if not line.strip():
            return None
        return _decode_bad_line(line, offset, exc)
    if kind not in _EVENT_TYPES:
        if kind == "ERROR":
            raise status_error(None, obj.raw)
        raise MalformedWatchLine(offset, f"unknown event type {kind!r}", line)
    if not obj._rv:
        raise MalformedWatchLine(offset, "object has no metadata.resourceVersion", line)
    if kind == "BOOKMARK":
        try:
            meta = _bookmark_decoder.decode(line).object.metadata
        except _DECODE_ERRORS as exc:
            raise MalformedWatchLine(offset, f"bad object: {exc}", line) from exc
        end = (meta.annotations or {}).get(INITIAL_EVENTS_END) == "true"
        return WatchEvent("BOOKMARK", obj, end)
    return WatchEvent(kind, obj)  # type: ignore[arg-type]


def _decode_bad_line(line: bytes, offset: int, exc: Exception) -> WatchEvent | None:
    """A line the one-pass decode refused: classify it (rare, so decoded again step by step)."""
    try:
        env = _envelope_decoder.decode(line)
    except _DECODE_ERRORS as exc2:
        if isinstance(exc2, msgspec.ValidationError) and _is_status(line):
            # A Status where an event belongs (an odd server or proxy): classify it.
            raise status_error(None, line) from None
        raise MalformedWatchLine(offset, str(exc2), line) from exc2
    if env.type == "ERROR":
        raise status_error(None, bytes(env.object))
    if env.type not in _EVENT_TYPES:
        raise MalformedWatchLine(offset, f"unknown event type {env.type!r}", line)
    raise MalformedWatchLine(offset, f"bad object: {exc}", line) from exc


class _Kind(msgspec.Struct):
    kind: str | None = None


_kind_decoder = msgspec.json.Decoder(_Kind)


def _is_status(line: bytes) -> bool:
    try:
        return _kind_decoder.decode(line).kind == "Status"
    except _DECODE_ERRORS:
        return False
