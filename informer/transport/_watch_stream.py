"""An open WATCH: the connection, its reads, and the lines split out of them as ``WatchEvent``.

``WatchStream`` sends the request through the pool our watches may use (``_pool``), reads the
body a network read at a time (bounded by an idle timeout), splits it into lines (bounded by
``max_line_bytes``) and decodes each (``_decode``), handing out the events of each read as one
batch.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from informer._lazy import lazy_module
from informer.errors import TransportError, WatchIdleTimeout, WatchLineTooLong
from informer.objects import Trim
from informer.transport._decode import WatchEvent, _decode_last_line, _decode_line
from informer.transport._pool import _Pool

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_module("aiohttp")

__all__ = ["WatchStream"]


class _Requests(Protocol):
    """What a ``WatchStream`` uses of the ``Transport`` that opened it (a Protocol, so this
    module does not import the module of ``Transport``, which imports this one)."""

    _pool: _Pool
    max_line_bytes: int
    connect_timeout: float

    async def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        timeout: aiohttp.ClientTimeout,
        client: Any = None,
    ) -> aiohttp.ClientResponse: ...

    async def _raise_for_status(self, resp: aiohttp.ClientResponse) -> None: ...


class WatchStream:
    """An open WATCH: an async iterator of ``WatchEvent``; closing it closes the connection."""

    def __init__(
        self,
        transport: _Requests,
        path: str,
        query: list[tuple[str, str]],
        idle_timeout: float | None,
        on_open: Callable[[bool], None] | None = None,
        trim: Trim | None = None,
        pack: bool = False,
    ) -> None:
        self._transport = transport
        self._on_open = on_open
        self.trim = trim
        self.pack = pack  # for a store that packs its objects (``_decode_line``)
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
        pack = self.pack
        parts: list[bytes] = []
        line: bytes | memoryview
        pending = 0  # bytes in parts
        offset = 0  # stream offset of the line being assembled
        try:
            while True:
                chunk = await self._read_chunk(resp)
                if not chunk:
                    # A clean end after a last line without its newline: keep that line when
                    # it is a complete event (as client-go's JSON framer does).
                    last = _decode_last_line(b"".join(parts), offset, self.path, trim, pack)
                    if last is not None:
                        yield [last]
                    return
                self.bytes_read += len(chunk)
                start = 0
                batch: list[WatchEvent] = []
                # for a packing store a line is a view of the read (its object copies its own
                # member out of it: one copy of the bytes, not the line's and then the object's)
                view = memoryview(chunk) if pack and trim is None else None
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
                    elif view is not None:
                        line = view[start:nl]
                    else:
                        line = chunk[start:nl]
                    try:
                        event = _decode_line(line, offset, trim, pack)
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
