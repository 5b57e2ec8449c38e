"""Content negotiation: how bodies are decoded and answered.

Requests: JSON, YAML (``application/yaml``; apply patches are YAML or JSON), or protobuf for the
types ``protobuf`` decodes (kubectl's typed commands send it); other types are 415 with a
Status listing the accepted ones. Responses: JSON, indented for humans' tools; ``Warning``
headers as ``299 - "text"``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any, Final

import msgspec
from aiohttp import web
from multidict import CIMultiDict

from informer.testing import _status as st
from informer.testing._serving.protobuf import PROTOBUF, decode_protobuf
from informer.testing._status import StatusError

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "OBJECT_TYPES",
    "PATCH_TYPES",
    "STRATEGIC_PATCH",
    "decode",
    "decode_body",
    "encode",
    "error_response",
    "prefers",
    "respond",
]

encode = msgspec.json.Encoder().encode
decode = msgspec.json.decode
_decode = decode
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla")

JSON: Final = "application/json"
YAML: Final = "application/yaml"
JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
OBJECT_TYPES: Final = (JSON, YAML, PROTOBUF)
"""What create and update accept."""
PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
"""What patch accepts."""


def respond(
    request: web.Request,
    body: bytes,
    status: int = 200,
    headers: dict[str, str] | None = None,
    warnings: Iterable[str] = (),
) -> web.Response:
    """A JSON response; indented for curl, wget and browsers, as the real server does."""
    agent = request.headers.get("User-Agent", "")
    if agent.startswith(_PRETTY_AGENTS):
        body = msgspec.json.format(body, indent=2) + b"\n"
    elif not body.endswith(b"\n"):
        body += b"\n"  # every apiserver JSON answer ends with one (json.Encoder's)
    all_headers: CIMultiDict[str] = CIMultiDict(headers or {})
    for text in warnings:
        if any(unicodedata.category(char) == "Cc" for char in text):
            continue  # NewWarningHeader refuses control characters: the warning is dropped
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        all_headers.add("Warning", f'299 - "{escaped}"')
    return web.Response(
        body=body, status=status, headers=all_headers, content_type="application/json"
    )


def error_response(request: web.Request, error: StatusError) -> web.Response:
    """The Status body of ``error`` with its code and headers."""
    return respond(request, encode(error.status), error.code, error.headers)


async def decode_body(request: web.Request, accepted: tuple[str, ...] = OBJECT_TYPES) -> Any:
    """The request body (None when empty) in one of the ``accepted`` content types.

    415 for any other content type; 400 when the body is not what its type says.
    """
    ctype = request.content_type
    if request.headers.get("Content-Type") is None and JSON in accepted:
        ctype = JSON  # aiohttp reports application/octet-stream for a missing header
    if ctype not in accepted:
        raise st.unsupported_media_type(ctype, list(accepted))
    raw = await request.read()
    if not raw:
        return None
    if ctype == PROTOBUF:
        return decode_protobuf(raw)
    if ctype in (YAML, APPLY_PATCH):
        return _yaml(raw)
    try:
        return _decode(raw)
    except msgspec.DecodeError as error:
        raise st.bad_request(f"the request body is not valid JSON: {error}") from None


_loader: Any = None


def _yaml(raw: bytes) -> Any:
    """YAML (JSON is YAML) as sigs.k8s.io/yaml reads it: timestamps stay strings."""
    global _loader
    import yaml  # PyYAML comes with kubernetes_asyncio

    if _loader is None:

        class Loader(yaml.SafeLoader):
            pass

        Loader.yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":timestamp")]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        _loader = Loader
    try:
        return yaml.load(raw, Loader=_loader)
    except yaml.YAMLError as error:
        raise st.bad_request(f"error converting YAML to JSON: {error}") from None


def prefers(accept: str, as_kind: str, group: str, version: str) -> bool:
    """Whether an ``Accept`` header asks first for ``application/json;as=KIND;g=GROUP;v=V``
    (Table, APIGroupDiscoveryList), skipping other versions of that same form before it."""
    for choice in accept.split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in choice.split(";")[1:])
        }
        if params.get("as") == as_kind and params.get("g") == group:
            if params.get("v") == version:
                return True
            continue
        return False
    return False
