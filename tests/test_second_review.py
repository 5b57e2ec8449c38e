"""Second review: races, lifecycle, statistics, waiters across a restore, index consistency, logs.

Each test shows a bug found in the second review (it failed before its fix). Waits are on events
or counters; ``asyncio.timeout`` only bounds a hang, nothing asserts timing.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import msgspec
import pytest
import structlog
from aiohttp import web
from conftest import FAST, cm, running_informer, wait_until
from kubernetes_asyncio.client import ApiClient, Configuration
from structlog.testing import capture_logs

from informer.errors import StaleCacheError
from informer.informer import Informer, SharedInformerFactory
from informer.objects import KubeObject
from informer.resource import CONFIGMAPS, SECRETS
from informer.store import CacheWentBackwards, Store
from informer.testing import ApiServer, Fault
from informer.transport import Transport


# -- statistics -----------------------------------------------------------------------------------
async def test_one_restore_counts_one_backwards() -> None:
    # The probe after the watch ended finds the server behind (counted), then the consistent relist
    # comes back older as expected: that is the same restore, not a second one.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        backup = server.revision
        for i in range(3, 6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            server.restore(backup)
            await wait_until(lambda: inf.statistics().relists >= 1)
            assert inf.statistics().backwards == 1


async def test_consistent_list_410_counts_one_expired() -> None:
    # A 410 on a consistent list was counted by the list phase and again by the run loop.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=410, times=2))
        async with running_informer(server) as inf:
            stats = inf.statistics()
    assert [r.status for r in server.requests if r.verb == "list"] == [410, 410, 200]
    assert stats.expired == 2


# -- freshness waiters across a restore ----------------------------------------------------------
async def test_waiter_above_a_restored_cache_rv_gets_a_clear_outcome() -> None:
    # The cache relists at an older RV (etcd restore): an RV of the lost timeline will be reused by
    # other writes, so a pending wait for it must not hang, nor later claim it was reached.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        backup = server.revision
        for i in range(3, 6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            wanted = str(int(inf.store.resource_version) + 1)
            waiter = asyncio.create_task(inf.wait_for_resource_version(wanted))
            await asyncio.sleep(0)  # a yield: the waiter is registered
            server.restore(backup)
            await wait_until(lambda: inf.statistics().relists >= 1)
            async with asyncio.timeout(5):  # bounds a hang only
                with pytest.raises(StaleCacheError) as info:
                    await waiter
            assert info.value.wanted_rv == wanted
            assert info.value.cache_rv == inf.store.resource_version
            assert isinstance(info.value, CacheWentBackwards)
            assert "went back" in str(info.value)


# -- store indexes --------------------------------------------------------------------------------
def _obj(name: str, rv: str) -> KubeObject:
    body = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"u-{name}",
            "resourceVersion": rv,
        },
    }
    return KubeObject.from_raw(msgspec.json.encode(body))


def test_index_function_raising_midway_leaves_no_dangling_key() -> None:
    # An index function that yields a value and then raises left the key in that bucket; after
    # the object was deleted, by_index raised KeyError for every reader of that value.
    def values(obj: KubeObject) -> Any:
        yield "x"
        raise RuntimeError("broken index")

    store = Store()
    store.add_index("by-x", values)
    store.replace([], "1")
    with capture_logs():
        store.apply_event("ADDED", _obj("a", "2"))
        store.apply_event("DELETED", _obj("a", "3"))
        assert store.by_index("by-x", "x") == []
        assert store.index_values("by-x") == []
        store.replace([_obj("b", "4")], "4")
        assert store.by_index("by-x", "x") == []
        store.apply_event("DELETED", _obj("b", "5"))
        assert store.by_index("by-x", "x") == []


# -- informer lifecycle ---------------------------------------------------------------------------
async def test_run_while_running_is_refused() -> None:
    # A second run() started a second reflector on the same store; when either ended, it stopped
    # the handlers of the other one.
    async with ApiServer(too_large_wait=0.01) as server, running_informer(server) as inf:
        await server.wait_for_watchers(1)
        async with asyncio.timeout(5):  # bounds a hang only
            with pytest.raises(RuntimeError, match="already running"):
                await inf.run()
        assert server.watcher_count(CONFIGMAPS) == 1


async def test_stop_right_after_start_allows_a_new_start() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False) as inf:
            await inf.stop()  # the task never ran
            inf.start()
            await inf.wait_for_sync(timeout=10)
            assert inf.store.keys() == ["default/a"]


async def test_stop_then_start_redelivers_what_a_handler_was_interrupted_in() -> None:
    # stop() cancels a handler in the middle of a delivery: that change was taken off its queue
    # and, after a restart, never came again (the cache already holds it, so no relist delta).
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, sync=False) as inf:
            started = asyncio.Event()
            release = asyncio.Event()
            done: list[str] = []

            async def on_add(obj: Any, initial: bool) -> None:
                started.set()
                await release.wait()
                done.append(obj.name)

            handler = inf.add_handler(on_add)
            async with asyncio.timeout(10):
                await started.wait()
            await inf.stop()  # interrupts the delivery of "a"
            release.set()
            inf.start()
            async with asyncio.timeout(10):
                await handler.wait_idle()
                while not done:  # noqa: ASYNC110 - the handler appends after wait_idle's wakeup
                    await asyncio.sleep(0)
            assert done == ["a"]


# -- logs -----------------------------------------------------------------------------------------
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
    errors = [e["error"] for e in logs if e["event"] == "reflector.connection_error"]
    assert errors and errors[0].startswith("malformed watch line at byte 0: ")
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
    old = structlog.get_config()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    try:
        async with ApiServer(too_large_wait=0.01) as server:
            secret = {"metadata": {"name": "s", "namespace": "d"}, "data": {"password": "aHVudGVy"}}
            server.create(SECRETS, secret)
            async with running_informer(server, SECRETS, transform=broken) as inf:
                inf.store.add_index("n", bad_index)
                assert inf.statistics().errors == 1 and inf.store.stats.index_errors == 1
    finally:
        structlog.configure(**old)
    text = out.getvalue()
    assert "reflector.transform_failed" in text and "store.index_error" in text
    assert "ValueError" in text  # what failed is still said
    assert "aHVudGVy" not in text


# -- shared informers -----------------------------------------------------------------------------
async def test_factory_stop_then_start_resumes_and_late_informers_wait_for_start() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        api = server.api_client()
        try:
            factory = SharedInformerFactory(api, options=FAST)
            inf = factory.informer(CONFIGMAPS)
            factory.start()
            await factory.wait_for_sync(timeout=10)
            await factory.stop()
            made = server.create(CONFIGMAPS, cm("b"))
            late = factory.informer(CONFIGMAPS, namespace="default")
            assert not late.has_synced
            factory.start()
            await inf.wait_for_write(made, timeout=10)
            await factory.wait_for_sync(timeout=10)
            assert sorted(late.store.keys()) == ["default/a", "default/b"]
            await factory.stop()
        finally:
            await api.close()
