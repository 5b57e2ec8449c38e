"""Log lines never carry object data (a Secret's data), whatever the renderer."""

from __future__ import annotations

import io
import logging
from typing import Any

import structlog
from aiohttp import web
from conftest import FAST, running_informer, wait_until
from kubernetes_asyncio.client import ApiClient, Configuration

from informer._log import capture_logs
from informer.informer import Informer
from informer.objects import KubeObject
from informer.resource import SECRETS
from informer.testing import ApiServer
from informer.transport import Transport


async def test_malformed_watch_line_of_a_secret_logs_no_data() -> None:
    # MalformedWatchLine quotes the first 120 bytes of the line, and reflector.connection_error
    # logged str(exc): a Secret event whose data comes early (here: no metadata.resourceVersion,
    # so the line is refused) put the Secret's data in the log. An odd server: a raw aiohttp app.
    secret_line = (
        b'{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1",'
        b'"data":{"password":"aHVudGVyMg=="},"metadata":{"name":"s","namespace":"d"}}}\n'
    )

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            body = {"kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}}
            return web.json_response({**body, "items": []})
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        await resp.write(secret_line)
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/secrets", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    api = ApiClient(Configuration(host=f"http://127.0.0.1:{port}"))
    try:
        with capture_logs() as logs:
            async with Informer(Transport(api), SECRETS, options=FAST):

                def logged() -> bool:
                    return any(e["event"] == "reflector.connection_error" for e in logs)

                await wait_until(logged)
    finally:
        await api.close()
        await runner.cleanup()
    errors = [e for e in logs if e["event"] == "reflector.connection_error"]
    assert errors and errors[0]["error"] == "MalformedWatchLine" and errors[0]["offset"] == 0
    assert errors[0]["why"] == "object has no metadata.resourceVersion"
    assert "aHVudGVyMg" not in repr(logs) and "password" not in repr(logs)


async def test_transform_failing_on_a_secret_logs_no_data() -> None:
    # reflector.transform_failed was logged with the traceback; structlog's default console
    # renderer (with rich installed) prints every frame's locals: the transform's argument, the
    # whole Secret as a dict, landed in the log. The same for an index function's message.
    def broken(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "data": {"n": int(obj["data"]["password"])}}  # ValueError naming it

    def bad_index(obj: KubeObject) -> list[str]:
        return [str(int(obj["data"]["password"]))]

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(processor=structlog.dev.ConsoleRenderer(colors=False))
    )
    root = logging.getLogger("informer")
    root.addHandler(handler)
    try:
        async with ApiServer(too_large_wait=0.01) as server:
            secret = {"metadata": {"name": "s", "namespace": "d"}, "data": {"password": "aHVudGVy"}}
            server.create(SECRETS, secret)
            async with running_informer(server, SECRETS, transform=broken) as inf:
                inf.store.add_index("n", bad_index)
                assert inf.statistics().errors == 1 and inf.store.stats.index_errors == 1
    finally:
        root.removeHandler(handler)
    text = out.getvalue()
    assert "reflector.transform_failed" in text and "store.index_error" in text
    assert "ValueError" in text  # what failed is still said
    assert "aHVudGVy" not in text
