"""Content negotiation: how bodies are encoded and answered (JSON; indented for humans' tools)."""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import web

from informer.testing import _status as st
from informer.testing._status import StatusError

__all__ = ["decode", "decode_body", "encode", "error_response", "respond"]

encode = msgspec.json.Encoder().encode
decode = msgspec.json.decode
_decode = decode
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla")


def respond(
    request: web.Request, body: bytes, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON response; indented for curl, wget and browsers, as the real server does."""
    agent = request.headers.get("User-Agent", "")
    if agent.startswith(_PRETTY_AGENTS):
        body = msgspec.json.format(body, indent=2) + b"\n"
    return web.Response(body=body, status=status, headers=headers, content_type="application/json")


def error_response(request: web.Request, error: StatusError) -> web.Response:
    """The Status body of ``error`` with its code and headers."""
    return respond(request, encode(error.status), error.code, error.headers)


async def decode_body(request: web.Request) -> Any:
    """The JSON request body (None when empty); 400 when it is not JSON."""
    raw = await request.read()
    try:
        return _decode(raw) if raw else None
    except msgspec.DecodeError as error:
        raise st.bad_request(f"the request body is not valid JSON: {error}") from None
