"""Transport through real HTTP on 127.0.0.1: paths, LIST params and pages, WATCH streams,
typed errors, cancellation, auth and logging.

Every test talks to small aiohttp handlers defined here (``FakeApi``), on an ephemeral port,
through a ``kubernetes_asyncio`` ``ApiClient``; the handlers record what they received. No test
synchronises by sleeping (``asyncio.Event`` instead) and none asserts timings.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import random
import socket
import ssl
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import incluster_config
from multidict import CIMultiDict

from informer._log import capture_logs
from informer.connect import connect
from informer.errors import (
    ApiError,
    MalformedResponse,
    MalformedWatchLine,
    ResourceExpired,
    TooLargeResourceVersion,
    TooManyRequests,
    TransportError,
    WatchIdleTimeout,
    WatchLineTooLong,
    WatchStreamError,
)
from informer.resource import CONFIGMAPS, LEASES, NAMESPACES, PODS, Resource
from informer.transport import (
    DEFAULT_MAX_LINE_BYTES,
    ListPage,
    Transport,
    WatchEvent,
    WatchStream,
)

# -- the fake API server ------------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

GUARD = 10.0  # a hang guard for waits in tests, never a timing assertion


@dataclass
class Received:
    """One request as the fake API server saw it."""

    method: str
    path: str
    raw_path: str
    query: list[tuple[str, str]]
    headers: CIMultiDict[str]


async def let_client_read() -> None:
    """Yield to the event loop (client and server share it) so a written chunk is read alone.

    Only makes network chunks smaller; no test's correctness depends on it.
    """
    for _ in range(3):
        await asyncio.sleep(0)


async def wait_for(event: asyncio.Event, what: str) -> None:
    try:
        async with asyncio.timeout(GUARD):
            await event.wait()
    except TimeoutError:
        pytest.fail(f"hang guard: {what} did not happen")


class FakeApi:
    """An aiohttp app on 127.0.0.1:<ephemeral> answering every path with ``handler``.

    ``release`` is set at teardown (handlers that hold a response open wait on it);
    ``disconnected`` is set when a handler sees the client go away (its task is cancelled, or a
    write fails).
    """

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[Received] = []
        self.release = asyncio.Event()
        self.disconnected = asyncio.Event()
        self.handler: Handler = self._not_found

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(status_body(404, "NotFound", "no handler"), status=404)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(
            Received(
                request.method,
                request.path,
                request.raw_path,
                list(request.query.items()),
                CIMultiDict(request.headers),
            )
        )
        try:
            return await self.handler(request)
        except (asyncio.CancelledError, ConnectionResetError):
            self.disconnected.set()
            raise

    # -- canned handlers ------------------------------------------------------------------------
    def respond_raw(
        self,
        body: bytes,
        *,
        status: int = 200,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(
                body=body, status=status, headers={"Content-Type": content_type, **(headers or {})}
            )

        self.handler = handler

    def respond_json(
        self, body: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.respond_raw(json.dumps(body).encode(), status=status, headers=headers)

    def respond_slowly(self, body: bytes, *, status: int, split: int) -> None:
        """A body with a Content-Length, in two writes with loop turns between them."""

        async def handler(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse(status=status, headers={"Content-Type": "application/json"})
            resp.content_length = len(body)
            await resp.prepare(request)
            await resp.write(body[:split])
            for _ in range(10):
                await let_client_read()
            await resp.write(body[split:])
            return resp

        self.handler = handler

    def respond_stream(
        self,
        chunks: list[bytes],
        *,
        end: str = "eof",
        status: int = 200,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """A chunked body written piece by piece; then ``end``:

        ``eof`` ends the body cleanly, ``hold`` keeps the connection open and silent until
        teardown, ``cut`` closes the TCP connection without ending the chunked body.
        """

        async def handler(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse(
                status=status, headers={"Content-Type": content_type, **(headers or {})}
            )
            await resp.prepare(request)
            for chunk in chunks:
                await resp.write(chunk)
                await let_client_read()
            if end == "hold":
                await self.release.wait()
            elif end == "cut":
                assert request.transport is not None
                request.transport.abort()
            return resp

        self.handler = handler

    def hold_headers(self) -> None:
        """Accept the request and never answer (not even the status line) until teardown."""

        async def handler(request: web.Request) -> web.StreamResponse:
            await self.release.wait()
            return web.Response(status=503)

        self.handler = handler


@pytest.fixture
async def api() -> AsyncIterator[FakeApi]:
    fake = FakeApi()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.dispatch)
    # handler_cancellation: a handler is cancelled when its client disconnects, which is how
    # the tests observe that the transport closed a connection.
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}"
    try:
        yield fake
    finally:
        fake.release.set()
        await runner.cleanup()


@pytest.fixture
async def transport(api: FakeApi) -> AsyncIterator[Transport]:
    client = ApiClient(Configuration(host=api.url))
    try:
        yield Transport(client)
    finally:
        await client.close()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port that is bound but not listening: connecting to it is refused."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def configmap(
    name: str, rv: str, ns: str = "default", data: dict[str, str] | None = None
) -> dict[str, Any]:
    """A ConfigMap as a list item (no kind/apiVersion)."""
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": rv}
    }
    if data is not None:
        obj["data"] = data
    return obj


def status_body(
    code: int, reason: str, message: str, *, continue_: str | None = None
) -> dict[str, Any]:
    meta = {"continue": continue_} if continue_ else {}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": meta,
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


WIDGETS = Resource("example.com", "v1alpha1", "widgets", "Widget")
CLUSTER_WIDGETS = Resource("example.com", "v1", "clusterwidgets", "ClusterWidget", namespaced=False)

PATH_CASES = [
    pytest.param(CONFIGMAPS, "default", "/api/v1/namespaces/default/configmaps", id="core-ns"),
    pytest.param(CONFIGMAPS, None, "/api/v1/configmaps", id="core-all-ns"),
    pytest.param(PODS, "kube-system", "/api/v1/namespaces/kube-system/pods", id="core-pods"),
    pytest.param(NAMESPACES, None, "/api/v1/namespaces", id="core-cluster"),
    pytest.param(
        LEASES,
        "kube-system",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        id="group-ns",
    ),
    pytest.param(LEASES, None, "/apis/coordination.k8s.io/v1/leases", id="group-all-ns"),
    pytest.param(
        WIDGETS, "team-a", "/apis/example.com/v1alpha1/namespaces/team-a/widgets", id="crd-ns"
    ),
    pytest.param(WIDGETS, None, "/apis/example.com/v1alpha1/widgets", id="crd-all-ns"),
    pytest.param(CLUSTER_WIDGETS, None, "/apis/example.com/v1/clusterwidgets", id="crd-cluster"),
]


def list_body(
    items: list[dict[str, Any]] | None,
    rv: str = "100",
    cont: str | None = None,
    remaining: int | None = None,
    kind: str = "ConfigMapList",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont is not None:
        meta["continue"] = cont
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    return {"kind": kind, "apiVersion": "v1", "metadata": meta, "items": items}


# -- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("resource", "namespace", "path"), PATH_CASES)
async def test_list_page_path(
    api: FakeApi, transport: Transport, resource: Resource, namespace: str | None, path: str
) -> None:
    api.respond_json(list_body([], kind=f"{resource.kind}List"))
    page = await transport.list_page(resource, namespace=namespace)
    assert page.items == []
    [req] = api.requests
    assert req.method == "GET"
    assert req.path == path
    assert req.query == []
    assert "application/json" in req.headers.get("Accept", "")


@pytest.mark.parametrize(("resource", "namespace", "path"), PATH_CASES)
async def test_watch_path(
    api: FakeApi, transport: Transport, resource: Resource, namespace: str | None, path: str
) -> None:
    api.respond_stream([])
    async with transport.watch(resource, namespace=namespace) as events:
        assert [e async for e in events] == []
    [req] = api.requests
    assert req.method == "GET"
    assert req.path == path
    assert ("watch", "true") in req.query


async def test_cluster_scoped_resource_refuses_a_namespace(
    api: FakeApi, transport: Transport
) -> None:
    with pytest.raises(ValueError, match="cluster-scoped"):
        await transport.list_page(NAMESPACES, namespace="default")
    with pytest.raises(ValueError, match="cluster-scoped"):
        transport.watch(CLUSTER_WIDGETS, namespace="default")
    assert api.requests == []


async def test_namespace_is_escaped_in_the_path(api: FakeApi, transport: Transport) -> None:
    api.respond_json(list_body([]))
    await transport.list_page(CONFIGMAPS, namespace="a/b c")
    [req] = api.requests
    assert req.raw_path.startswith("/api/v1/namespaces/a%2Fb%20c/configmaps")


# -- list_page parameters ---------------------------------------------------------------------

TOKEN = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTgsInN0YXJ0IjoiY20tMDVcdTAwMDAifQ=="


async def test_list_page_sends_exactly_the_given_params(api: FakeApi, transport: Transport) -> None:
    api.respond_json(list_body([]))
    await transport.list_page(
        CONFIGMAPS,
        namespace="default",
        resource_version="98",
        resource_version_match="NotOlderThan",
        limit=5,
        continue_=TOKEN,
        label_selector="app in (a,b),tier!=db,!legacy",
        field_selector="metadata.name=cm-1,status.phase!=Running",
    )
    [req] = api.requests
    assert sorted(req.query) == sorted(
        [
            ("resourceVersion", "98"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("limit", "5"),
            ("continue", TOKEN),
            ("labelSelector", "app in (a,b),tier!=db,!legacy"),
            ("fieldSelector", "metadata.name=cm-1,status.phase!=Running"),
        ]
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, []),
        ({"resource_version": "0"}, [("resourceVersion", "0")]),
        ({"resource_version": ""}, [("resourceVersion", "")]),
        (
            {"resource_version": "7", "resource_version_match": "Exact"},
            [("resourceVersion", "7"), ("resourceVersionMatch", "Exact")],
        ),
        ({"limit": 500}, [("limit", "500")]),
        ({"limit": 0}, [("limit", "0")]),
        ({"continue_": "abc"}, [("continue", "abc")]),
        ({"label_selector": "a=b"}, [("labelSelector", "a=b")]),
        ({"field_selector": "metadata.namespace!=x"}, [("fieldSelector", "metadata.namespace!=x")]),
        (
            {
                "resource_version": None,
                "resource_version_match": None,
                "limit": None,
                "continue_": None,
                "label_selector": None,
                "field_selector": None,
            },
            [],
        ),
    ],
)
async def test_list_page_params_absent_when_none(
    api: FakeApi,
    transport: Transport,
    kwargs: dict[str, Any],
    expected: list[tuple[str, str]],
) -> None:
    api.respond_json(list_body([]))
    await transport.list_page(CONFIGMAPS, **kwargs)
    [req] = api.requests
    assert sorted(req.query) == sorted(expected)


# -- list_page responses ----------------------------------------------------------------------


async def test_list_page_returns_items_meta_continue_and_remaining(
    api: FakeApi, transport: Transport
) -> None:
    with_kind = {"kind": "ConfigMap", "apiVersion": "v1", **configmap("cm-2", "91")}
    api.respond_json(
        list_body([configmap("cm-1", "90", data={"k": "é"}), with_kind], "98", TOKEN, 17)
    )
    page = await transport.list_page(CONFIGMAPS, namespace="default", limit=2)
    assert isinstance(page, ListPage)
    assert page.resource_version == "98"
    assert page.continue_ == TOKEN
    assert page.remaining_item_count == 17
    assert [o.name for o in page.items] == ["cm-1", "cm-2"]
    assert [o.resource_version for o in page.items] == ["90", "91"]
    first = page.items[0]
    # kind/apiVersion added to a list item that lacks them, in the attributes and the JSON.
    assert (first.kind, first.api_version) == ("ConfigMap", "v1")
    assert first["kind"] == "ConfigMap"
    assert first["apiVersion"] == "v1"
    assert json.loads(first.raw)["kind"] == "ConfigMap"
    assert first["data"]["k"] == "é"
    assert first.key == "default/cm-1"
    assert first.to_dict() == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        **configmap("cm-1", "90", data={"k": "é"}),
    }
    assert page.items[1] == with_kind


async def test_list_page_adds_group_kind_and_api_version_for_a_crd(
    api: FakeApi, transport: Transport
) -> None:
    api.respond_json(
        list_body([{"metadata": {"name": "w", "resourceVersion": "3"}}], kind="WidgetList")
    )
    [item] = (await transport.list_page(WIDGETS)).items
    assert (item.kind, item.api_version) == ("Widget", "example.com/v1alpha1")
    assert item.to_dict() == {
        "kind": "Widget",
        "apiVersion": "example.com/v1alpha1",
        "metadata": {"name": "w", "resourceVersion": "3"},
    }


async def test_list_page_last_page_has_no_continue(api: FakeApi, transport: Transport) -> None:
    api.respond_json(list_body([configmap("cm-1", "5")], "6", cont=""))
    page = await transport.list_page(CONFIGMAPS)
    assert page.continue_ is None
    assert page.remaining_item_count is None
    assert page.resource_version == "6"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(list_body(None, "42"), id="items-null"),
        pytest.param(
            {"kind": "ConfigMapList", "metadata": {"resourceVersion": "42"}}, id="no-items"
        ),
        pytest.param(list_body([], "42"), id="items-empty"),
    ],
)
async def test_list_page_without_items(
    api: FakeApi, transport: Transport, body: dict[str, Any]
) -> None:
    api.respond_json(body)
    page = await transport.list_page(CONFIGMAPS)
    assert page == ListPage([], "42", None, None)


async def test_list_page_pretty_printed_body(api: FakeApi, transport: Transport) -> None:
    # A real apiserver pretty-prints for curl/Wget/Mozilla user agents: parse, never compare bytes.
    items = [configmap("cm-1", "10", data={"a": "1"}), {}, configmap("cm-2", "11")]
    body = json.dumps(list_body(items, "12", "tok", 3), indent=2).encode()
    assert b"\n" in body
    api.respond_raw(body)
    page = await transport.list_page(CONFIGMAPS)
    assert (page.resource_version, page.continue_, page.remaining_item_count) == ("12", "tok", 3)
    assert [o.to_dict() for o in page.items] == [
        {"kind": "ConfigMap", "apiVersion": "v1", **item} for item in items
    ]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html><body>hello from a proxy</body></html>", id="html"),
        pytest.param(b'{"kind":"ConfigMapList","items":[{"metadata":', id="truncated-json"),
        pytest.param(b"", id="empty"),
        pytest.param(b"[1, 2, 3]", id="json-array"),
        pytest.param(b'{"items": [1, 2]}', id="items-not-objects"),
        pytest.param(b'{"items": {"a": 1}}', id="items-not-a-list"),
    ],
)
async def test_list_page_2xx_body_that_is_not_a_list(
    api: FakeApi, transport: Transport, body: bytes
) -> None:
    api.respond_raw(body, content_type="text/html" if body.startswith(b"<") else "application/json")
    with pytest.raises(MalformedResponse):
        page = await transport.list_page(CONFIGMAPS)
        assert page.items  # items are built when read: a malformed one raises there


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (410, "Expired", ResourceExpired),
        (410, "Gone", ResourceExpired),
        (504, "Timeout", ApiError),
        (500, "InternalError", ApiError),
    ],
)
async def test_list_page_2xx_status_body_is_its_typed_error(
    api: FakeApi, transport: Transport, code: int, reason: str, expected: type[ApiError]
) -> None:
    """A proxy or an odd server answers 200 with a Status: an error, never an empty list."""
    api.respond_json(status_body(code, reason, "not a list", continue_="tok"))
    with pytest.raises(ApiError) as info:
        await transport.list_page(CONFIGMAPS)
    assert type(info.value) is expected
    assert (info.value.code, info.value.reason, info.value.message) == (code, reason, "not a list")


async def test_list_page_2xx_status_success_body_is_malformed(
    api: FakeApi, transport: Transport
) -> None:
    api.respond_json({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200})
    with pytest.raises(MalformedResponse):
        await transport.list_page(CONFIGMAPS)


# -- typed errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["list", "watch"])
async def test_429_with_an_http_date_retry_after(
    api: FakeApi, transport: Transport, verb: str
) -> None:
    """RFC 7231 allows Retry-After as an HTTP date: never a crash, the error stays typed."""
    api.respond_json(
        status_body(429, "TooManyRequests", "slow down"),
        status=429,
        headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
    )
    with pytest.raises(TooManyRequests) as info:
        if verb == "list":
            await transport.list_page(CONFIGMAPS)
        else:
            await drain(transport.watch(CONFIGMAPS))
    assert info.value.retry_after is None


async def test_list_410_expired_continue_token(api: FakeApi, transport: Transport) -> None:
    inconsistent = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9"
    body = status_body(
        410, "Expired", "The provided continue parameter is too old.", continue_=inconsistent
    )
    api.respond_json(body, status=410)
    with pytest.raises(ResourceExpired) as info:
        await transport.list_page(CONFIGMAPS, limit=5, continue_="old")
    err = info.value
    assert err.code == 410
    assert err.reason == "Expired"
    assert err.continue_token == inconsistent
    assert "too old" in err.message


async def test_list_410_without_continue_token(api: FakeApi, transport: Transport) -> None:
    api.respond_json(
        status_body(410, "Expired", "The resourceVersion for the provided list is too old."),
        status=410,
    )
    with pytest.raises(ResourceExpired) as info:
        await transport.list_page(CONFIGMAPS, resource_version="5", resource_version_match="Exact")
    assert info.value.continue_token is None


TOO_LARGE = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Timeout: Too large resource version: 999999, current: 100",
    "reason": "Timeout",
    "details": {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    },
    "code": 504,
}


async def test_list_504_too_large_resource_version(api: FakeApi, transport: Transport) -> None:
    api.respond_json(TOO_LARGE, status=504, headers={"Retry-After": "1"})
    with pytest.raises(TooLargeResourceVersion) as info:
        await transport.list_page(CONFIGMAPS, resource_version="999999")
    assert info.value.code == 504
    assert info.value.retry_after == 1.0


async def test_list_504_too_large_retry_after_from_header_only(
    api: FakeApi, transport: Transport
) -> None:
    body = {**TOO_LARGE, "details": {"causes": TOO_LARGE["details"]["causes"]}}
    api.respond_json(body, status=504, headers={"Retry-After": "2"})
    with pytest.raises(TooLargeResourceVersion) as info:
        await transport.list_page(CONFIGMAPS, resource_version="999999")
    assert info.value.retry_after == 2.0


async def test_list_504_too_large_without_retry_hint(api: FakeApi, transport: Transport) -> None:
    body = {**TOO_LARGE, "details": {"causes": TOO_LARGE["details"]["causes"]}}
    api.respond_json(body, status=504)
    with pytest.raises(TooLargeResourceVersion) as info:
        await transport.list_page(CONFIGMAPS, resource_version="999999", limit=5)
    assert info.value.retry_after is None


async def test_list_504_other_timeout_is_a_plain_api_error(
    api: FakeApi, transport: Transport
) -> None:
    api.respond_json(status_body(504, "Timeout", "request timed out"), status=504)
    with pytest.raises(ApiError) as info:
        await transport.list_page(CONFIGMAPS)
    assert type(info.value) is ApiError
    assert info.value.code == 504


async def test_list_429_text_plain_with_retry_after(api: FakeApi, transport: Transport) -> None:
    api.respond_raw(
        b"Too many requests, please try again later.\n",
        status=429,
        content_type="text/plain",
        headers={"Retry-After": "3"},
    )
    with pytest.raises(TooManyRequests) as info:
        await transport.list_page(CONFIGMAPS)
    err = info.value
    assert err.code == 429
    assert err.retry_after == 3.0
    assert "Too many requests" in err.message


async def test_list_500_html_is_an_api_error(api: FakeApi, transport: Transport) -> None:
    html = b"<html><head><title>500 Internal Server Error</title></head><body>oops</body></html>"
    api.respond_raw(html, status=500, content_type="text/html")
    with pytest.raises(ApiError) as info:
        await transport.list_page(CONFIGMAPS)
    err = info.value
    assert type(err) is ApiError
    assert err.code == 500
    assert "500 Internal Server Error" in err.message


async def test_list_422_status_is_an_api_error_with_reason(
    api: FakeApi, transport: Transport
) -> None:
    msg = 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
    api.respond_json(status_body(422, "Invalid", msg), status=422)
    with pytest.raises(ApiError) as info:
        await transport.list_page(CONFIGMAPS, resource_version="0", resource_version_match="Exact")
    assert (info.value.code, info.value.reason, info.value.message) == (422, "Invalid", msg)


@pytest.mark.parametrize("split", [1, 40, -20, -1])
async def test_list_410_status_body_split_across_chunks(
    api: FakeApi, transport: Transport, split: int
) -> None:
    """A Status body that arrives in two network chunks is still classified from its JSON."""
    body = json.dumps(status_body(410, "Expired", "too old", continue_="tok")).encode()
    api.respond_slowly(body, status=410, split=split % len(body))
    with pytest.raises(ResourceExpired) as info:
        await transport.list_page(CONFIGMAPS, continue_="old")
    assert info.value.continue_token == "tok"
    assert info.value.reason == "Expired"


@pytest.mark.parametrize("split", [1, 40, -20, -1])
async def test_list_504_too_large_body_split_across_chunks(
    api: FakeApi, transport: Transport, split: int
) -> None:
    body = json.dumps(TOO_LARGE).encode()
    api.respond_slowly(body, status=504, split=split % len(body))
    with pytest.raises(TooLargeResourceVersion) as info:
        await transport.list_page(CONFIGMAPS, resource_version="999999")
    assert info.value.retry_after == 1.0


async def test_list_connection_refused(refused_url: str) -> None:
    async with ApiClient(Configuration(host=refused_url)) as client:
        with pytest.raises(TransportError):
            await Transport(client).list_page(CONFIGMAPS)


async def test_watch_connection_refused(refused_url: str) -> None:
    async with ApiClient(Configuration(host=refused_url)) as client:
        with pytest.raises(TransportError):
            async with Transport(client).watch(CONFIGMAPS) as events:
                async for _ in events:
                    pass


def test_default_max_line_bytes() -> None:
    assert DEFAULT_MAX_LINE_BYTES == 32 * 1024 * 1024


# -- watch: query parameters ------------------------------------------------------------------


def event(type_: str, obj: dict[str, Any]) -> bytes:
    """One watch line, as the apiserver frames it: compact JSON and a newline."""
    return (
        json.dumps(
            {"type": type_, "object": obj}, separators=(",", ":"), ensure_ascii=False
        ).encode()
        + b"\n"
    )


def cm_obj(name: str, rv: str, **data: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "apiVersion": "v1", **configmap(name, rv, data=data or None)}


def bookmark(rv: str, *, end: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv, "creationTimestamp": None}
    if end is not None:
        meta["annotations"] = {"k8s.io/initial-events-end": end}
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta}


async def drain(stream: WatchStream) -> list[WatchEvent]:
    async with stream as events:
        return [e async for e in events]


async def test_watch_default_query(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([])
    await drain(transport.watch(CONFIGMAPS))
    [req] = api.requests
    assert sorted(req.query) == [("allowWatchBookmarks", "true"), ("watch", "true")]


async def test_watch_sends_all_params(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([])
    await drain(
        transport.watch(
            CONFIGMAPS,
            namespace="default",
            resource_version="",
            resource_version_match="NotOlderThan",
            allow_watch_bookmarks=True,
            send_initial_events=True,
            timeout_seconds=300,
            label_selector="app=web,tier in (a,b)",
            field_selector="metadata.name!=x",
        )
    )
    [req] = api.requests
    assert req.path == "/api/v1/namespaces/default/configmaps"
    assert sorted(req.query) == sorted(
        [
            ("watch", "true"),
            ("resourceVersion", ""),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
            ("sendInitialEvents", "true"),
            ("timeoutSeconds", "300"),
            ("labelSelector", "app=web,tier in (a,b)"),
            ("fieldSelector", "metadata.name!=x"),
        ]
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"allow_watch_bookmarks": False}, [("watch", "true")]),
        (
            {"allow_watch_bookmarks": False, "resource_version": "103"},
            [("watch", "true"), ("resourceVersion", "103")],
        ),
        (
            {"allow_watch_bookmarks": False, "send_initial_events": False},
            [("watch", "true"), ("sendInitialEvents", "false")],
        ),
        (
            {"allow_watch_bookmarks": False, "timeout_seconds": 0},
            [("watch", "true"), ("timeoutSeconds", "0")],
        ),
        (
            {"allow_watch_bookmarks": False, "resource_version_match": "NotOlderThan"},
            [("watch", "true"), ("resourceVersionMatch", "NotOlderThan")],
        ),
    ],
)
async def test_watch_params_absent_when_none(
    api: FakeApi,
    transport: Transport,
    kwargs: dict[str, Any],
    expected: list[tuple[str, str]],
) -> None:
    api.respond_stream([])
    await drain(transport.watch(CONFIGMAPS, **kwargs))
    [req] = api.requests
    assert sorted(req.query) == sorted(expected)


# -- watch: events ----------------------------------------------------------------------------


async def test_watch_event_types(api: FakeApi, transport: Transport) -> None:
    api.respond_stream(
        [
            event("ADDED", cm_obj("a", "101", k="1")),
            event("MODIFIED", cm_obj("a", "102", k="2")),
            event("BOOKMARK", bookmark("103")),
            event("DELETED", cm_obj("a", "104", k="2")),
        ]
    )
    events = await drain(transport.watch(CONFIGMAPS, resource_version="100"))
    assert [(e.type, e.object.resource_version) for e in events] == [
        ("ADDED", "101"),
        ("MODIFIED", "102"),
        ("BOOKMARK", "103"),
        ("DELETED", "104"),
    ]
    assert all(isinstance(e, WatchEvent) for e in events)
    assert [e.initial_events_end for e in events] == [False] * 4
    added, modified, _, deleted = events
    assert added.object.key == "default/a"
    assert added.object["data"] == {"k": "1"}
    assert modified.object == cm_obj("a", "102", k="2")
    assert (deleted.object.kind, deleted.object.api_version) == ("ConfigMap", "v1")


@pytest.mark.parametrize(
    ("value", "end"), [("true", True), ("false", False), (None, False), ("True", False)]
)
async def test_watch_bookmark_initial_events_end(
    api: FakeApi, transport: Transport, value: str | None, end: bool
) -> None:
    api.respond_stream(
        [
            event("ADDED", cm_obj("a", "7")),
            event("ADDED", cm_obj("b", "9")),
            event("BOOKMARK", bookmark("12", end=value)),
            event("ADDED", cm_obj("c", "13")),
        ]
    )
    events = await drain(
        transport.watch(CONFIGMAPS, send_initial_events=True, resource_version_match="NotOlderThan")
    )
    assert [e.type for e in events] == ["ADDED", "ADDED", "BOOKMARK", "ADDED"]
    assert [e.initial_events_end for e in events] == [False, False, end, False]
    assert events[2].object.resource_version == "12"


async def test_watch_annotation_on_a_non_bookmark_is_not_the_end(
    api: FakeApi, transport: Transport
) -> None:
    obj = cm_obj("a", "5")
    obj["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
    api.respond_stream([event("ADDED", obj)])
    [e] = await drain(transport.watch(CONFIGMAPS))
    assert e.initial_events_end is False


# -- watch: framing ---------------------------------------------------------------------------

SPLIT_EVENTS = [
    event("ADDED", cm_obj("a", "101", text="naïve café ☕ 𝄞")),
    event("MODIFIED", cm_obj("a", "102", text="x" * 300)),
    event("BOOKMARK", bookmark("103", end="true")),
    event("DELETED", cm_obj("a", "104")),
]
SPLIT_BODY = b"".join(SPLIT_EVENTS)
SPLIT_EXPECTED = [
    ("ADDED", "101", False),
    ("MODIFIED", "102", False),
    ("BOOKMARK", "103", True),
    ("DELETED", "104", False),
]


def cut(body: bytes, points: set[int] | list[int]) -> list[bytes]:
    edges = [0, *sorted(p for p in points if 0 < p < len(body)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges) if b > a]


def _split_cases() -> list[Any]:
    first = len(SPLIT_EVENTS[0])
    utf8 = SPLIT_BODY.index("☕".encode()) + 1  # inside a multi-byte character
    cases = [
        pytest.param(list(range(1, len(SPLIT_BODY))), id="1-byte-chunks"),
        pytest.param([first - 1], id="before-newline"),
        pytest.param([first], id="after-newline"),
        pytest.param([first - 1, first], id="newline-alone"),
        pytest.param([3], id="inside-type-key"),
        pytest.param([utf8], id="inside-utf8-char"),
        pytest.param([b for b in range(len(SPLIT_BODY)) if b % 2 == 0], id="2-byte-chunks"),
    ]
    for seed in range(6):
        rng = random.Random(seed)
        points: list[int] = []
        at = 0
        while at < len(SPLIT_BODY):
            at += rng.randint(1, 97)
            points.append(at)
        cases.append(pytest.param(points, id=f"random-{seed}"))
    return cases


@pytest.mark.parametrize("points", _split_cases())
async def test_watch_lines_split_across_chunks(
    api: FakeApi, transport: Transport, points: list[int]
) -> None:
    chunks = cut(SPLIT_BODY, points)
    assert b"".join(chunks) == SPLIT_BODY
    api.respond_stream(chunks)
    stream = transport.watch(CONFIGMAPS)
    events = await drain(stream)
    assert [(e.type, e.object.resource_version, e.initial_events_end) for e in events] == (
        SPLIT_EXPECTED
    )
    assert events[0].object["data"]["text"] == "naïve café ☕ 𝄞"
    assert stream.bytes_read == len(SPLIT_BODY)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(points=st.sets(st.integers(min_value=1, max_value=len(SPLIT_BODY) - 1), max_size=60))
async def test_watch_lines_split_anywhere(
    api: FakeApi, transport: Transport, points: set[int]
) -> None:
    api.respond_stream(cut(SPLIT_BODY, points))
    events = await drain(transport.watch(CONFIGMAPS))
    assert [(e.type, e.object.resource_version, e.initial_events_end) for e in events] == (
        SPLIT_EXPECTED
    )


async def test_watch_chunks_really_arrive_split(
    api: FakeApi, transport: Transport, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checks the test method: 1-byte writes reach the client as many small reads."""
    sizes: list[int] = []
    original = WatchStream._read_chunk

    async def spy(self: WatchStream, resp: Any) -> bytes:
        chunk = await original(self, resp)
        sizes.append(len(chunk))
        return chunk

    monkeypatch.setattr(WatchStream, "_read_chunk", spy)
    api.respond_stream(cut(SPLIT_BODY, range(1, len(SPLIT_BODY))))
    assert len(await drain(transport.watch(CONFIGMAPS))) == 4
    assert len(sizes) > 2 * len(SPLIT_EVENTS)


async def test_watch_line_of_several_mib(api: FakeApi, transport: Transport) -> None:
    big = "x" * (5 * 1024 * 1024)
    line = event("MODIFIED", cm_obj("big", "201", blob=big))
    assert len(line) > 5 * 1024 * 1024
    api.respond_stream(
        [event("ADDED", cm_obj("small", "200")), line, event("BOOKMARK", bookmark("202"))]
    )
    events = await drain(transport.watch(CONFIGMAPS))
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "BOOKMARK"]
    assert len(events[1].object["data"]["blob"]) == len(big)
    assert events[1].object.resource_version == "201"


async def test_watch_line_longer_than_the_bound_is_an_error_while_streaming(
    api: FakeApi, transport: Transport
) -> None:
    """An endless line: the transport gives up at its bound instead of buffering forever."""
    first = event("ADDED", cm_obj("a", "1"))

    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(first)
        await resp.write(b'{"type":"ADDED","object":{"data":"')
        while not api.release.is_set():
            await resp.write(b"y" * 4096)
        return resp

    api.handler = endless
    small = Transport(transport.api_client, max_line_bytes=64 * 1024)
    seen: list[WatchEvent] = []
    with pytest.raises(WatchLineTooLong) as info:
        async with small.watch(CONFIGMAPS) as events:
            async for e in events:
                seen.append(e)
    assert [e.object.name for e in seen] == ["a"]
    assert info.value.offset == len(first)
    assert info.value.limit == 64 * 1024
    assert isinstance(info.value, WatchStreamError)
    await wait_for(api.disconnected, "server seeing the client close the endless stream")


@pytest.mark.parametrize("chunked", [False, True], ids=["one-write", "1-byte-writes"])
async def test_watch_line_at_exactly_the_bound(
    api: FakeApi, transport: Transport, chunked: bool
) -> None:
    line = event("ADDED", cm_obj("a", "1"))
    bound = len(line) - 1  # without its newline
    body = line + line
    api.respond_stream(cut(body, range(1, len(body))) if chunked else [body])
    events = await drain(Transport(transport.api_client, max_line_bytes=bound).watch(CONFIGMAPS))
    assert len(events) == 2

    api.respond_stream(cut(body, range(1, len(body))) if chunked else [body])
    tight = Transport(transport.api_client, max_line_bytes=bound - 1)
    with pytest.raises(WatchLineTooLong) as info:
        await drain(tight.watch(CONFIGMAPS))
    assert info.value.offset == 0


MALFORMED = [
    pytest.param(b"this is not json\n", "", id="not-json"),
    pytest.param(b'{"type":"ADDED","object":{"metadata":\n', "", id="truncated-json"),
    pytest.param(b'{"object":{"metadata":{"resourceVersion":"5"}}}\n', "", id="no-type"),
    pytest.param(b'{"type":"ADDED"}\n', "", id="no-object"),
    pytest.param(b'{"type":"ADDED","object":[1,2]}\n', "", id="object-not-a-dict"),
    pytest.param(
        b'{"type":"ADDED","object":{"metadata":{"name":"x"}}}\n',
        "resourceVersion",
        id="no-resource-version",
    ),
    pytest.param(
        b'{"type":"SYNC","object":{"metadata":{"resourceVersion":"5"}}}\n',
        "unknown event type",
        id="unknown-type",
    ),
    pytest.param(
        b'{"type":"added","object":{"metadata":{"resourceVersion":"5"}}}\n',
        "unknown event type",
        id="lowercase-type",
    ),
]


@pytest.mark.parametrize(("bad", "why"), MALFORMED)
@pytest.mark.parametrize("chunked", [False, True], ids=["one-write", "1-byte-writes"])
async def test_watch_malformed_line_names_its_offset(
    api: FakeApi, transport: Transport, bad: bytes, why: str, chunked: bool
) -> None:
    good = [event("ADDED", cm_obj("a", "1")), event("MODIFIED", cm_obj("a", "2"))]
    body = b"".join(good) + bad + event("DELETED", cm_obj("a", "3"))
    api.respond_stream(cut(body, range(1, len(body))) if chunked else [body])
    seen: list[WatchEvent] = []
    with pytest.raises(MalformedWatchLine) as info:
        async with transport.watch(CONFIGMAPS) as events:
            async for e in events:
                seen.append(e)
    assert [e.type for e in seen] == ["ADDED", "MODIFIED"]
    assert info.value.offset == len(good[0]) + len(good[1])
    assert f"at byte {info.value.offset}" in str(info.value)
    assert why in info.value.why
    assert isinstance(info.value, WatchStreamError)


async def test_watch_unknown_event_type(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([event("RESYNC", cm_obj("a", "1"))])
    with pytest.raises(MalformedWatchLine) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert info.value.offset == 0
    assert "RESYNC" in info.value.why


async def test_watch_pretty_printed_json_is_not_watch_framing(
    api: FakeApi, transport: Transport
) -> None:
    """One event per line is the framing; a multi-line event is malformed (first line)."""
    api.respond_stream(
        [json.dumps({"type": "ADDED", "object": cm_obj("a", "1")}, indent=2).encode()]
    )
    with pytest.raises(MalformedWatchLine) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert info.value.offset == 0


# -- watch: errors ----------------------------------------------------------------------------


async def test_watch_error_event_410_is_resource_expired(
    api: FakeApi, transport: Transport
) -> None:
    expired = status_body(410, "Expired", "The resourceVersion for the provided watch is too old.")
    api.respond_stream(
        [
            event("ADDED", cm_obj("a", "99")),
            event("ERROR", expired),
            event("ADDED", cm_obj("b", "1")),
        ]
    )
    seen: list[WatchEvent] = []
    with pytest.raises(ResourceExpired) as info:
        async with transport.watch(CONFIGMAPS, resource_version="98") as events:
            async for e in events:
                seen.append(e)
    assert [e.object.name for e in seen] == ["a"]
    assert info.value.code == 410
    assert info.value.reason == "Expired"
    assert "too old" in info.value.message


async def test_watch_error_event_other_code(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([event("ERROR", status_body(500, "InternalError", "etcd is sad"))])
    with pytest.raises(ApiError) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert type(info.value) is ApiError
    assert (info.value.code, info.value.reason) == (500, "InternalError")


async def test_watch_error_event_too_many_requests(api: FakeApi, transport: Transport) -> None:
    body = {**status_body(429, "TooManyRequests", "slow down"), "details": {"retryAfterSeconds": 4}}
    api.respond_stream([event("ERROR", body)])
    with pytest.raises(TooManyRequests) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert info.value.retry_after == 4.0


async def test_watch_http_410(api: FakeApi, transport: Transport) -> None:
    api.respond_json(status_body(410, "Expired", "too old resource version: 98 (103)"), status=410)
    with pytest.raises(ResourceExpired):
        await drain(transport.watch(CONFIGMAPS, resource_version="98"))


async def test_watch_http_429_text_plain(api: FakeApi, transport: Transport) -> None:
    api.respond_raw(
        b"Too many requests, please try again later.\n",
        status=429,
        content_type="text/plain",
        headers={"Retry-After": "2"},
    )
    with pytest.raises(TooManyRequests) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert info.value.retry_after == 2.0


async def test_watch_http_422(api: FakeApi, transport: Transport) -> None:
    api.respond_json(
        status_body(422, "Invalid", "resourceVersionMatch is forbidden for watch"), status=422
    )
    with pytest.raises(ApiError) as info:
        await drain(transport.watch(CONFIGMAPS, resource_version_match="NotOlderThan"))
    assert (info.value.code, info.value.reason) == (422, "Invalid")


async def test_watch_clean_end_stops_iteration(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([event("ADDED", cm_obj("a", "1")), b"\n"])
    events = await drain(transport.watch(CONFIGMAPS, timeout_seconds=1))
    assert [e.object.name for e in events] == ["a"]


@pytest.mark.parametrize("chunked", [False, True], ids=["one-write", "1-byte-writes"])
async def test_watch_stream_ending_inside_a_line(
    api: FakeApi, transport: Transport, chunked: bool
) -> None:
    body = event("ADDED", cm_obj("a", "1")) + event("ADDED", cm_obj("b", "2"))[:-10]
    api.respond_stream(cut(body, range(1, len(body))) if chunked else [body])
    seen: list[WatchEvent] = []
    with pytest.raises(WatchStreamError):
        async with transport.watch(CONFIGMAPS) as events:
            async for e in events:
                seen.append(e)
    assert [e.object.name for e in seen] == ["a"]


@pytest.mark.parametrize("chunked", [False, True], ids=["one-write", "1-byte-writes"])
@pytest.mark.parametrize("ending", [b"", b"\r", b"  "], ids=["bare", "cr", "spaces"])
async def test_watch_stream_ending_after_a_complete_line_without_newline(
    api: FakeApi, transport: Transport, chunked: bool, ending: bytes
) -> None:
    """A body that ends cleanly after a complete event without its newline: the event is kept
    (as client-go's JSON framer does), neither dropped nor turned into a stream error."""
    body = event("ADDED", cm_obj("a", "1")) + event("ADDED", cm_obj("b", "2"))[:-1] + ending
    api.respond_stream(cut(body, range(1, len(body))) if chunked else [body])
    stream = transport.watch(CONFIGMAPS)
    events = await drain(stream)
    assert [(e.type, e.object.name) for e in events] == [("ADDED", "a"), ("ADDED", "b")]
    assert stream.bytes_read == len(body)


async def test_watch_stream_ending_after_a_malformed_line_without_newline(
    api: FakeApi, transport: Transport
) -> None:
    first = event("ADDED", cm_obj("a", "1"))
    api.respond_stream([first + b'{"type":"ADDED","object":{"metadata":{}}}'])
    with pytest.raises(MalformedWatchLine) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert info.value.offset == len(first)


@pytest.mark.parametrize("chunked", [False, True], ids=["one-write", "1-byte-writes"])
async def test_watch_crlf_line_endings(api: FakeApi, transport: Transport, chunked: bool) -> None:
    """Lines ended by CRLF (a proxy rewriting line endings) decode, and offsets count the CR."""
    crlf = [e[:-1] + b"\r\n" for e in SPLIT_EVENTS]
    bad = b"not json\r\n"
    body = b"".join(crlf) + b"\r\n" + bad
    api.respond_stream(cut(body, range(1, len(body))) if chunked else [body])
    seen: list[WatchEvent] = []
    with pytest.raises(MalformedWatchLine) as info:
        async with transport.watch(CONFIGMAPS) as events:
            async for e in events:
                seen.append(e)
    assert [(e.type, e.object.resource_version, e.initial_events_end) for e in seen] == (
        SPLIT_EXPECTED
    )
    assert info.value.offset == len(body) - len(bad)


@pytest.mark.parametrize("chunked", [False, True], ids=["one-write", "1-byte-writes"])
async def test_watch_lines_ending_exactly_at_chunk_ends(
    api: FakeApi, transport: Transport, chunked: bool
) -> None:
    """Every chunk ends with a newline: no empty or merged lines, offsets stay exact."""
    bad = b'{"type":"ADDED","object":{"metadata":{"name":"x"}}}\n'
    chunks = [*SPLIT_EVENTS, b"\n", bad]
    api.respond_stream(cut(b"".join(chunks), range(1, 10**6)) if chunked else chunks)
    seen: list[WatchEvent] = []
    with pytest.raises(MalformedWatchLine) as info:
        async with transport.watch(CONFIGMAPS) as events:
            async for e in events:
                seen.append(e)
    assert len(seen) == 4
    assert info.value.offset == len(SPLIT_BODY) + 1


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (410, "Expired", ResourceExpired),
        (410, "Gone", ResourceExpired),
        (500, "InternalError", ApiError),
    ],
)
async def test_watch_bare_status_line_is_its_typed_error(
    api: FakeApi, transport: Transport, code: int, reason: str, expected: type[ApiError]
) -> None:
    """A 200 stream whose line is a Status, not an event: classified like an ERROR event."""
    first = event("ADDED", cm_obj("a", "1"))
    line = json.dumps(status_body(code, reason, "too old")).encode() + b"\n"
    api.respond_stream([first, line])
    with pytest.raises(ApiError) as info:
        await drain(transport.watch(CONFIGMAPS))
    assert type(info.value) is expected
    assert (info.value.code, info.value.reason) == (code, reason)


async def test_watch_connection_cut_inside_a_line(api: FakeApi, transport: Transport) -> None:
    body = event("ADDED", cm_obj("a", "1")) + b'{"type":"ADDED","obj'
    api.respond_stream([body], end="cut")
    with pytest.raises((WatchStreamError, TransportError)):
        await drain(transport.watch(CONFIGMAPS))


# -- watch: idle timeout ----------------------------------------------------------------------


async def test_watch_idle_timeout_after_events(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([event("ADDED", cm_obj("a", "1"))], end="hold")
    seen: list[WatchEvent] = []
    with pytest.raises(WatchIdleTimeout) as info:
        async with transport.watch(CONFIGMAPS, idle_timeout=5.0) as events:
            async for e in events:
                seen.append(e)
                events.idle_timeout = 0.05  # after the first event: silence is the failure
    assert [e.object.name for e in seen] == ["a"]
    assert info.value.seconds == 0.05
    assert isinstance(info.value, WatchStreamError)
    await wait_for(api.disconnected, "server seeing the idle watch closed")


async def test_watch_idle_timeout_with_no_event_at_all(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([], end="hold")
    with pytest.raises(WatchIdleTimeout):
        await drain(transport.watch(CONFIGMAPS, idle_timeout=0.05))


async def test_watch_idle_timeout_before_response_headers(
    api: FakeApi, transport: Transport
) -> None:
    """A server that accepts the connection but never answers is as dead as a silent stream."""
    api.hold_headers()
    try:
        async with asyncio.timeout(GUARD):
            with pytest.raises(WatchIdleTimeout):
                await drain(transport.watch(CONFIGMAPS, idle_timeout=0.05))
    except TimeoutError:
        pytest.fail("watch hung waiting for response headers despite idle_timeout=0.05")


def test_watch_default_idle_timeout(transport: Transport) -> None:
    assert transport.idle_margin == 30.0
    assert transport.watch(CONFIGMAPS, timeout_seconds=300).idle_timeout == 330.0
    assert transport.watch(CONFIGMAPS).idle_timeout is None
    assert transport.watch(CONFIGMAPS, timeout_seconds=300, idle_timeout=7).idle_timeout == 7
    custom = Transport(transport.api_client, idle_margin=2.5)
    assert custom.watch(PODS, timeout_seconds=10).idle_timeout == 12.5


# -- watch: closing ---------------------------------------------------------------------------


async def test_cancelling_the_consumer_closes_the_connection(
    api: FakeApi, transport: Transport
) -> None:
    api.respond_stream([event("ADDED", cm_obj("a", "1"))], end="hold")
    got_first = asyncio.Event()

    async def consume() -> None:
        async with transport.watch(CONFIGMAPS) as events:
            async for _ in events:
                got_first.set()

    task = asyncio.create_task(consume())
    await wait_for(got_first, "first event")
    assert not api.disconnected.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for(api.disconnected, "server seeing the cancelled watch's connection close")


async def test_cancelling_a_consumer_without_async_with_closes_the_connection(
    api: FakeApi, transport: Transport
) -> None:
    api.respond_stream([event("ADDED", cm_obj("a", "1"))], end="hold")
    got_first = asyncio.Event()

    async def consume() -> None:
        async for _ in transport.watch(CONFIGMAPS):
            got_first.set()

    task = asyncio.create_task(consume())
    await wait_for(got_first, "first event")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for(api.disconnected, "server seeing the cancelled watch's connection close")


async def test_leaving_async_with_early_closes_the_connection(
    api: FakeApi, transport: Transport
) -> None:
    api.respond_stream(
        [event("ADDED", cm_obj("a", "1")), event("ADDED", cm_obj("b", "2"))], end="hold"
    )
    async with transport.watch(CONFIGMAPS) as events:
        async for e in events:
            assert e.object.name == "a"
            break
    await wait_for(api.disconnected, "server seeing the watch closed after break")


async def test_aclose_closes_the_connection(api: FakeApi, transport: Transport) -> None:
    api.respond_stream([event("ADDED", cm_obj("a", "1"))], end="hold")
    stream = transport.watch(CONFIGMAPS)
    first = await anext(stream)
    assert first.object.name == "a"
    await stream.aclose()
    await wait_for(api.disconnected, "server seeing aclose()")
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_closing_an_unstarted_watch_sends_nothing(api: FakeApi, transport: Transport) -> None:
    async with transport.watch(CONFIGMAPS):
        pass
    assert api.requests == []


# -- auth and logging -------------------------------------------------------------------------

SECRET = "sha256~s3cr3t-BEARER-t0ken-d0-not-log-me"


async def kubeconfig_client(tmp_path: Path, server: str) -> ApiClient:
    """An ApiClient configured by kubernetes_asyncio from a kubeconfig with a bearer token."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
users:
- name: tester
  user:
    token: {SECRET}
contexts:
- name: test
  context:
    cluster: test
    user: tester
    namespace: default
current-context: test
"""
    )
    cfg = Configuration()
    await kube_config.load_kube_config(config_file=str(path), client_configuration=cfg)
    assert cfg.host == server
    return ApiClient(cfg)


async def test_bearer_token_from_kubeconfig_is_sent(api: FakeApi, tmp_path: Path) -> None:
    api.respond_json({"kind": "ConfigMapList", "metadata": {"resourceVersion": "1"}, "items": []})
    async with await kubeconfig_client(tmp_path, api.url) as client:
        t = Transport(client)
        await t.list_page(CONFIGMAPS)
        api.respond_stream([event("ADDED", cm_obj("a", "1"))])
        await drain(t.watch(CONFIGMAPS))
    assert [r.headers.get("Authorization") for r in api.requests] == [f"Bearer {SECRET}"] * 2


async def test_a_watch_beyond_a_bounded_pool_keeps_auth_and_headers(
    api: FakeApi, tmp_path: Path
) -> None:
    # A pool of one connection cannot spare any for a watch: the watch goes through a pool of
    # its own, built from the same configuration (token, headers), closed with the watch.
    api.respond_stream([event("ADDED", cm_obj("a", "1"))])
    async with await kubeconfig_client(tmp_path, api.url) as client:
        client.configuration.connection_pool_maxsize = 1
        await client.rest_client.close()
        client.rest_client = type(client.rest_client)(client.configuration)
        client.set_default_header("X-Caller", "operator-7")
        t = Transport(client)
        stream = t.watch(CONFIGMAPS)
        await drain(stream)
        assert stream.beyond_pool
        assert t._pool.beyond is None and t._pool.beyond_watches == 0
    [req] = api.requests
    assert req.headers.get("Authorization") == f"Bearer {SECRET}"
    assert req.headers.get("X-Caller") == "operator-7"


def everything_captured(
    caplog: pytest.LogCaptureFixture, structlogs: list[Any], errors: list[BaseException]
) -> str:
    texts = [caplog.text, repr(structlogs)]
    for record in caplog.records:
        texts += [record.getMessage(), repr(record.args), repr(record.__dict__)]
    for err in errors:
        texts.append("".join(traceback.format_exception(err)))
        chain: BaseException | None = err
        while chain is not None:
            texts += [str(chain), repr(chain), repr(chain.args), repr(vars(chain))]
            chain = chain.__cause__ or chain.__context__
    return "\n".join(texts)


async def test_bearer_token_never_logged_on_failures(
    api: FakeApi, tmp_path: Path, caplog: pytest.LogCaptureFixture, refused_url: str
) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    with capture_logs() as structlogs:
        async with await kubeconfig_client(tmp_path, api.url) as client:
            t = Transport(client)
            failures: list[tuple[Callable[[], None], Callable[[], Awaitable[Any]]]] = [
                (
                    lambda: api.respond_json(status_body(401, "Unauthorized", "nope"), status=401),
                    lambda: t.list_page(CONFIGMAPS),
                ),
                (
                    lambda: api.respond_raw(b"<html>500</html>", status=500),
                    lambda: drain(t.watch(CONFIGMAPS)),
                ),
                (
                    lambda: api.respond_raw(b"not json", status=200),
                    lambda: t.list_page(CONFIGMAPS),
                ),
                (
                    lambda: api.respond_stream([event("ADDED", cm_obj("a", "1")), b"garbage\n"]),
                    lambda: drain(t.watch(CONFIGMAPS)),
                ),
                (
                    lambda: api.respond_stream([], end="hold"),
                    lambda: drain(t.watch(CONFIGMAPS, idle_timeout=0.05)),
                ),
            ]
            for arrange, act in failures:
                arrange()
                with pytest.raises(Exception) as info:
                    await act()
                errors.append(info.value)
        (tmp_path / "refused").mkdir()
        async with await kubeconfig_client(tmp_path / "refused", refused_url) as client:
            with pytest.raises(TransportError) as refused:
                await Transport(client).list_page(CONFIGMAPS)
            errors.append(refused.value)
    assert all(r.headers.get("Authorization") == f"Bearer {SECRET}" for r in api.requests)
    assert len(errors) == 6
    captured = everything_captured(caplog, structlogs, errors)
    assert SECRET not in captured
    assert SECRET.split("~")[1] not in captured


# -- TLS: an https server with its own CA, a bearer token ----------------------------------

# A throwaway CA and a server certificate for 127.0.0.1 (valid 2000-2999), made for these tests
# only: checked in so that the suite needs no certificate tooling on a fresh machine.
TEST_CA_PEM = """-----BEGIN CERTIFICATE-----
MIIBaTCCAQ+gAwIBAgIBATAKBggqhkjOPQQDAjAbMRkwFwYDVQQDDBBpbmZvcm1l
ciB0ZXN0IENBMCAXDTAwMDEwMTAwMDAwMFoYDzI5OTkwMTAxMDAwMDAwWjAbMRkw
FwYDVQQDDBBpbmZvcm1lciB0ZXN0IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcD
QgAEeu8tyj4ljnFZiaEjeNVH3BN1JQINeS620d0AfKvBZS2eoXjf7W3K6Kc+K2Ap
LVpW67p23dsMwFdoNo7Kq7nqRqNCMEAwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8B
Af8EBAMCAQYwHQYDVR0OBBYEFIv7f4DzDff//jx3nGKN9qwnQP0zMAoGCCqGSM49
BAMCA0gAMEUCIQDxTgU6AZpz8YdkAyBGVadxyoW3VL/0j7bTiOv9S+dNJwIgMfwv
2CGSEoxqlHkA4Dw7WpfldwJGln6gYThl5q3zTns=
-----END CERTIFICATE-----
"""
TEST_SERVER_CERT_PEM = """-----BEGIN CERTIFICATE-----
MIIBtDCCAVmgAwIBAgIBAjAKBggqhkjOPQQDAjAbMRkwFwYDVQQDDBBpbmZvcm1l
ciB0ZXN0IENBMCAXDTAwMDEwMTAwMDAwMFoYDzI5OTkwMTAxMDAwMDAwWjAUMRIw
EAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASSBEtT
MgxxmN2H6Njigfc+n1bOojreVuM1v0rAYkvqALI1b1cl1knzDIaJ8LtRzVRgvokq
jMK4rXGeI/EuoayGo4GSMIGPMAwGA1UdEwEB/wQCMAAwDgYDVR0PAQH/BAQDAgWg
MBMGA1UdJQQMMAoGCCsGAQUFBwMBMBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9z
dDAfBgNVHSMEGDAWgBSL+3+A8w33//48d5xijfasJ0D9MzAdBgNVHQ4EFgQUxz9X
iecRwlemrQWZCFm8QVi2yNMwCgYIKoZIzj0EAwIDSQAwRgIhAJztXt6sKj2PMk4O
nLCn1c+GZ3PWmgtfll/zNRuo7ctXAiEAiSSdhOA7WGXZO6twcgtvoMhSFQ/+C07l
Gikp/W6cz/E=
-----END CERTIFICATE-----
"""
TEST_SERVER_KEY_PEM = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg4loZNu3K7DzNimby
LiCFvZWfSewUV2j13YDEeRY3OkChRANCAASSBEtTMgxxmN2H6Njigfc+n1bOojre
VuM1v0rAYkvqALI1b1cl1knzDIaJ8LtRzVRgvokqjMK4rXGeI/EuoayG
-----END PRIVATE KEY-----
"""


@pytest.fixture
async def tls_api(tmp_path: Path) -> AsyncIterator[FakeApi]:
    """``FakeApi`` over https on 127.0.0.1, with the test CA's server certificate."""
    (tmp_path / "server.crt").write_text(TEST_SERVER_CERT_PEM)
    (tmp_path / "server.key").write_text(TEST_SERVER_KEY_PEM)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    fake = FakeApi()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.dispatch)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"https://{host}:{port}"
    try:
        yield fake
    finally:
        fake.release.set()
        await runner.cleanup()


def respond_list_then_watch(api: FakeApi) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            await resp.write(event("ADDED", cm_obj("a", "2")))
            return resp
        return web.json_response(list_body([configmap("a", "1")], "1"))

    api.handler = handler


async def list_and_watch(client: ApiClient) -> tuple[ListPage, list[WatchEvent]]:
    t = Transport(client)
    return await t.list_page(CONFIGMAPS), await drain(t.watch(CONFIGMAPS))


async def test_https_with_a_ca_and_a_token_from_kubeconfig(
    tls_api: FakeApi, tmp_path: Path
) -> None:
    respond_list_then_watch(tls_api)
    ca_data = base64.b64encode(TEST_CA_PEM.encode()).decode()
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "tls",
                        "cluster": {"server": tls_api.url, "certificate-authority-data": ca_data},
                    }
                ],
                "users": [{"name": "u", "user": {"token": SECRET}}],
                "contexts": [{"name": "tls", "context": {"cluster": "tls", "user": "u"}}],
                "current-context": "tls",
            }
        )
    )
    cfg = Configuration()
    await kube_config.load_kube_config(config_file=str(path), client_configuration=cfg)
    async with ApiClient(cfg) as client:
        page, events = await list_and_watch(client)
    assert [o.name for o in page.items] == ["a"]
    assert [(e.type, e.object.resource_version) for e in events] == [("ADDED", "2")]
    assert [r.headers.get("Authorization") for r in tls_api.requests] == [f"Bearer {SECRET}"] * 2


async def test_https_in_cluster_through_connect(
    tls_api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """connect() in a pod: the service account token and CA files, the service host and port."""
    respond_list_then_watch(tls_api)
    (tmp_path / "token").write_text(SECRET)
    (tmp_path / "ca.crt").write_text(TEST_CA_PEM)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    host, port = tls_api.url.removeprefix("https://").split(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    async with await connect() as client:
        page, events = await list_and_watch(client)
    assert [o.name for o in page.items] == ["a"]
    assert len(events) == 1
    assert [r.headers.get("Authorization") for r in tls_api.requests] == [f"Bearer {SECRET}"] * 2


async def test_https_with_an_unknown_ca_is_a_transport_error_without_the_token(
    tls_api: FakeApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    respond_list_then_watch(tls_api)
    cfg = Configuration(host=tls_api.url, api_key={"BearerToken": f"Bearer {SECRET}"})
    errors: list[BaseException] = []
    with capture_logs() as structlogs:
        async with ApiClient(cfg) as client:
            t = Transport(client)
            with pytest.raises(TransportError) as listed:
                await t.list_page(CONFIGMAPS)
            with pytest.raises(TransportError) as watched:
                await drain(t.watch(CONFIGMAPS))
            errors += [listed.value, watched.value]
    assert tls_api.requests == []  # the handshake failed: no request, so no token, was sent
    assert "certificate" in str(listed.value).lower()
    captured = everything_captured(caplog, structlogs, errors)
    assert SECRET not in captured
