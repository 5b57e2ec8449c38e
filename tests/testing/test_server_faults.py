"""Fault injection and request recording."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault

from .server_helpers import CM_PATH, READ_GUARD, Client, cm, names

pytestmark = pytest.mark.asyncio


async def seeded(factory: Any, count: int = 3, **kwargs: Any) -> ApiServer:
    server: ApiServer = await factory(**{"too_large_wait": 0.01, **kwargs})
    for i in range(count):
        server.create(CONFIGMAPS, cm(f"cm-{i}"))
    return server


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (410, "Expired"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
        (504, "Timeout"),
        (429, "TooManyRequests"),
    ],
)
async def test_status_faults_have_status_bodies(
    api_server_factory: Any, client: Client, code: int, reason: str
) -> None:
    server = await seeded(api_server_factory)
    fault = server.faults.add(Fault(verb="list", resource="configmaps", status=code))
    reply = await client.get(server, CM_PATH)
    assert reply.status == code
    assert reply.body["kind"] == "Status" and reply.body["code"] == code
    assert reply.body["reason"] == reason
    assert fault.fired == 1
    again = await client.get(server, CM_PATH)  # one-shot by default
    assert again.status == 200


async def test_text_429_with_retry_after(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    server.faults.add(
        Fault(
            verb="list",
            status=429,
            retry_after=2,
            text_body="Too many requests, please try again later.\n",
        )
    )
    reply = await client.get(server, CM_PATH)
    assert reply.status == 429
    assert reply.headers["Content-Type"].startswith("text/plain")
    assert reply.headers["Retry-After"] == "2"
    assert reply.text == "Too many requests, please try again later.\n"


async def test_retry_after_in_status_details(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    server.faults.add(Fault(verb="get", status=503, retry_after=3))
    reply = await client.get(server, CM_PATH + "/cm-0")
    assert reply.status == 503
    assert reply.body["details"]["retryAfterSeconds"] == 3
    assert reply.headers["Retry-After"] == "3"


async def test_nth_times_and_page(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    second_page = server.faults.add(Fault(verb="list", page=2, status=410, times=None))
    first = await client.get(server, CM_PATH, limit=1)
    assert first.status == 200
    token = {"continue": first.body["metadata"]["continue"]}
    assert (await client.get(server, CM_PATH, limit=1, **token)).status == 410
    assert (await client.get(server, CM_PATH, limit=1, **token)).status == 410
    assert second_page.fired == 2
    server.faults.clear()
    third = server.faults.add(Fault(verb="get", nth=3, status=500))
    statuses = [(await client.get(server, CM_PATH + "/cm-0")).status for _ in range(4)]
    assert statuses == [200, 200, 500, 200]
    assert third.fired == 1 and third.matched == 4


async def test_latency_and_list_lag(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=5)
    fault = server.faults.add(Fault(verb="list", latency=0.01, list_lag=2))
    reply = await client.get(server, CM_PATH)
    assert fault.fired == 1
    assert reply.body["metadata"]["resourceVersion"] == str(server.revision - 2)
    assert names(reply.body) == ["cm-0", "cm-1", "cm-2"]


async def test_close_after_events(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    server.faults.add(Fault(verb="watch", close_after_events=2))
    async with client.watch(server, CM_PATH) as watch:
        events = await watch.rest()
    assert [e["object"]["metadata"]["name"] for e in events] == ["cm-0", "cm-1"]


async def test_cut_mid_line(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    server.faults.add(Fault(verb="watch", cut_mid_line=True, after_events=1))
    async with client.watch(server, CM_PATH) as watch:
        first = await watch.line()
        assert first.endswith(b"}\n")
        with pytest.raises(aiohttp.ClientPayloadError):
            async with asyncio.timeout(READ_GUARD):
                partial = await watch.response.content.readline()
                assert not partial.endswith(b"\n")  # aiohttp may return the torn piece first
                await watch.response.content.readline()


async def test_stall_then_resume(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=2)
    fault = server.faults.add(Fault(verb="watch", stall=0.05, after_events=1))
    async with client.watch(server, CM_PATH) as watch:
        events = await watch.take(2)
    assert [e["object"]["metadata"]["name"] for e in events] == ["cm-0", "cm-1"]
    assert fault.fired == 1


async def test_malformed_line(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=2)
    server.faults.add(Fault(verb="watch", malformed_line=True, after_events=1))
    async with client.watch(server, CM_PATH) as watch:
        assert (await watch.line()).startswith(b'{"type":"ADDED"')
        bad = await watch.line()
        with pytest.raises(ValueError):
            __import__("json").loads(bad)
        assert (await watch.next())["object"]["metadata"]["name"] == "cm-1"  # type: ignore[index]


async def test_replay_stale_and_duplicates(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=3)
    server.faults.add(Fault(verb="watch", replay_stale=True, after_events=2))
    async with client.watch(server, CM_PATH) as watch:
        events = await watch.take(4)
    assert [e["object"]["metadata"]["name"] for e in events] == ["cm-0", "cm-1", "cm-0", "cm-2"]
    server.faults.add(Fault(verb="watch", duplicate_events=True, after_events=1))
    async with client.watch(server, CM_PATH) as watch:
        events = await watch.take(5)
    assert [e["object"]["metadata"]["name"] for e in events] == [
        "cm-0",
        "cm-1",
        "cm-1",
        "cm-2",
        "cm-2",
    ]


async def test_error_event(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=2)
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "too old resource version: 1 (2)",
        "reason": "Expired",
        "code": 410,
    }
    server.faults.add(Fault(verb="watch", error_event=status, after_events=1))
    async with client.watch(server, CM_PATH) as watch:
        events = await watch.rest()
    assert [e["type"] for e in events] == ["ADDED", "ERROR"]
    assert events[1]["object"] == status


async def test_watch_status_fault(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    server.faults.add(Fault(verb="watch", status=410))
    reply = await client.get(server, CM_PATH, watch="true", resourceVersion="2")
    assert reply.status == 410
    assert reply.body["message"] == "The resourceVersion for the provided watch is too old."


async def test_requests_are_recorded(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory)
    await client.get(server, CM_PATH, limit=2, labelSelector="a=b")
    await client.get(server, "/apis/coordination.k8s.io/v1/namespaces/kube/leases/x")
    listed, got = server.requests[-2:]
    assert (listed.method, listed.path, listed.verb, listed.resource, listed.namespace) == (
        "GET",
        CM_PATH,
        "list",
        "configmaps",
        "default",
    )
    assert listed.query == {"limit": "2", "labelSelector": "a=b"}
    assert (listed.status, listed.page) == (200, 1)
    assert (got.verb, got.resource, got.namespace, got.name, got.status) == (
        "get",
        "leases",
        "kube",
        "x",
        404,
    )
    task = asyncio.create_task(server.wait_for_requests(lambda r: r.verb == "delete", count=2))
    await client.request(server, "DELETE", CM_PATH + "/cm-0")
    await client.request(server, "DELETE", CM_PATH + "/cm-1")
    found = await task
    assert [r.name for r in found] == ["cm-0", "cm-1"]
    with pytest.raises(TimeoutError):
        await server.wait_for_requests(lambda r: r.verb == "patch", timeout=0.01)


async def test_disrupt_cuts_an_open_watch_mid_line(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=1)
    async with client.watch(server, CM_PATH) as watch:
        assert (await watch.line()).startswith(b'{"type":"ADDED"')
        fault = Fault(cut_mid_line=True)
        assert server.disrupt_watches(fault, CONFIGMAPS) == 1
        with pytest.raises(aiohttp.ClientPayloadError):
            async with asyncio.timeout(READ_GUARD):
                partial = await watch.response.content.readline()
                assert not partial.endswith(b"\n")
                await watch.response.content.readline()
    assert fault.fired == 1
    await server.wait_for_watchers_closed()


async def test_disrupt_reaches_only_open_watches_of_the_resource(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=1)
    async with client.watch(server, CM_PATH) as watch:
        await watch.line()
        assert server.disrupt_watches(Fault(close_after_events=0), "secrets") == 0
        fault = Fault(error_event={"kind": "Status", "code": 410, "reason": "Expired"})
        assert server.disrupt_watches(fault, "configmaps") == 1
        events = await watch.rest()
    assert [e["type"] for e in events] == ["ERROR"]
    server.create(CONFIGMAPS, cm("later"))
    async with client.watch(server, CM_PATH) as watch:  # a later watch is not disrupted
        assert len(await watch.take(2)) == 2


async def test_disrupt_needs_a_stream_fault(api_server_factory: Any) -> None:
    server = await seeded(api_server_factory, count=0)
    with pytest.raises(ValueError, match="stream fault"):
        server.disrupt_watches(Fault(status=500))


async def test_cut_mid_page_drops_the_connection_inside_a_list(
    api_server_factory: Any, client: Client
) -> None:
    server = await seeded(api_server_factory, count=3)
    fault = server.faults.add(Fault(verb="list", cut_mid_line=True))
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientPayloadError):
            async with http.get(server.url + CM_PATH) as response:
                assert response.status == 200
                await response.read()
    assert fault.fired == 1
    assert (await client.get(server, CM_PATH)).status == 200  # the next list is whole


async def test_oversized_line_then_resume(api_server_factory: Any, client: Client) -> None:
    server = await seeded(api_server_factory, count=2)
    server.faults.add(Fault(verb="watch", oversized_line=100_000, after_events=1))
    async with client.watch(server, CM_PATH) as watch:
        assert (await watch.line()).startswith(b'{"type":"ADDED"')
        big = await watch.response.content.readuntil(b"\n")
        assert len(big) == 100_000 and big.startswith(b'{"type":"MODIFIED","object":"xxx')
        assert (await watch.line()).startswith(b'{"type":"ADDED"')
