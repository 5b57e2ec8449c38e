"""How a ``Fault`` changes an answer: a canned error response, or a watch stream that stalls,
duplicates, replays, cuts or ends early."""

from __future__ import annotations

from aiohttp import web

from informer.testing import _status as st
from informer.testing._serving.content import encode, respond
from informer.testing._storage.history import History
from informer.testing.faults import Fault, RecordedRequest

__all__ = ["StreamCut", "StreamEnd", "WatchWriter", "fault_response", "replaces_response"]

_MALFORMED_LINE = b'{"type":"MODIFIED","object":{"kind": this is not json\n'
_OVERSIZED_FRAME = b'{"type":"MODIFIED","object":"*"}\n'
_PARTIAL_LINE = b'{"type":"MODIFIED","object":{"kind":"Con'  # then the connection drops


class StreamEnd(Exception):
    """A fault (or the server) asks to end the watch stream cleanly."""


class StreamCut(Exception):
    """The connection was dropped in the middle of a line."""


async def cut_response(
    request: web.Request, record: RecordedRequest, body: bytes
) -> web.StreamResponse:
    """Announce ``body`` in full, send half of it, then drop the connection."""
    response = web.StreamResponse(status=200)
    response.content_type = "application/json"
    response.content_length = len(body)
    await response.prepare(request)
    record.status = 200
    await response.write(body[: len(body) // 2])
    transport = request.transport
    if transport is not None:
        transport.close()
    return response


def replaces_response(fault: Fault | None) -> bool:
    """Whether ``fault`` answers the request itself (a status or body) instead of the server."""
    return fault is not None and bool(
        fault.status or fault.text_body is not None or fault.status_body is not None
    )


def fault_response(request: web.Request, record: RecordedRequest, fault: Fault) -> web.Response:
    """The response a status/body fault sends instead of the server's."""
    code = fault.status or 500
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        headers["Retry-After"] = str(fault.retry_after)
    if fault.text_body is not None:
        return web.Response(
            text=fault.text_body, status=code, headers=headers, content_type="text/plain"
        )
    if fault.status_body is not None:
        return respond(request, encode(fault.status_body), code, headers)
    if code == 410 and record.verb == "watch":
        error = st.expired(st.WATCH_TOO_OLD)
    else:
        error = st.generic(code, fault.message, fault.retry_after)
    if fault.reason is not None:
        error.status["reason"] = fault.reason
    if fault.message is not None and code != 500:
        error.status["message"] = fault.message
    return respond(request, encode(error.status), code, {**error.headers, **headers})


class WatchWriter:
    """Writes watch lines, applying a stream fault when there is one."""

    def __init__(
        self,
        history: History,
        request: web.Request,
        response: web.StreamResponse,
        fault: Fault | None,
    ) -> None:
        self.history = history
        self.request = request
        self.response = response
        self.fault = fault
        self.sent = 0
        self.first: bytes | None = None
        self.done: set[str] = set()

    async def write(self, data: bytes) -> None:
        await self.response.write(data)

    async def begin(self) -> None:
        if self.fault is not None:
            await self._actions()

    async def disrupt(self, fault: Fault) -> None:
        """Apply ``fault`` to this open stream from now on (``after_events`` counts from now)."""
        self.fault, self.sent, self.done = fault, 0, set()
        if fault.cut_mid_line and not fault.after_events:
            await self.response.write(_PARTIAL_LINE)
            self._drop_connection()
            raise StreamCut
        await self._actions()

    def _drop_connection(self) -> None:
        transport = self.request.transport
        if transport is not None:
            transport.close()

    async def send(self, events: list[bytes], trailer: bytes | None = None) -> None:
        if self.fault is None:
            if trailer is not None:
                events = [*events, trailer]
            if events:
                await self.response.write(b"".join(events))
            return
        fault = self.fault
        for line in events:
            if fault.cut_mid_line and self.sent >= fault.after_events:
                await self.response.write(line[: max(len(line) // 2, 1)])
                self._drop_connection()
                raise StreamCut
            await self.response.write(line)
            self.sent += 1
            if self.first is None:
                self.first = line
            if fault.duplicate_events and self.sent > fault.after_events:
                await self.response.write(line)
            await self._actions()
        if trailer is not None:
            await self.response.write(trailer)

    async def _actions(self) -> None:
        fault = self.fault
        assert fault is not None
        reached = self.sent >= fault.after_events
        if fault.stall and reached and "stall" not in self.done:
            self.done.add("stall")
            await self.history.sleep(fault.stall)
        if fault.oversized_line and reached and "oversized" not in self.done:
            self.done.add("oversized")
            filler = max(fault.oversized_line - len(_OVERSIZED_FRAME) + 1, 0)
            await self.response.write(_OVERSIZED_FRAME.replace(b"*", b"x" * filler, 1))
        if fault.malformed_line and reached and "malformed" not in self.done:
            self.done.add("malformed")
            await self.response.write(_MALFORMED_LINE)
        if fault.replay_stale and reached and self.first is not None and "replay" not in self.done:
            self.done.add("replay")
            await self.response.write(self.first)
        if fault.error_event is not None and reached:
            line = encode({"type": "ERROR", "object": fault.error_event}) + b"\n"
            await self.response.write(line)
            raise StreamEnd
        if fault.close_after_events is not None and self.sent >= fault.close_after_events:
            raise StreamEnd
