"""Many informers on one client: every watch opens, whatever their number.

Over HTTP/1.1 each watch holds one connection for minutes, and kubernetes_asyncio's ApiClient
bounds its pool (100 by default). A watch must never wait silently for a connection that a
hundred other watches hold: watches beyond what the pool can spare go through a pool of their own
(logged and counted), and ``connect()`` builds clients whose pool is not bounded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import FAST, cm

from informer._log import capture_logs
from informer.connect import connect
from informer.informer import SharedInformerFactory
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.transport._pool import _pool_of


async def test_150_informers_on_one_default_client_all_see_changes() -> None:
    async with ApiServer(too_large_wait=0.01, bookmark_interval=60.0) as server:
        api = server.api_client()  # kubernetes_asyncio's defaults: a pool of 100 connections
        assert api.rest_client.pool_manager.connector.limit == 100
        try:
            factory = SharedInformerFactory(api, options=FAST)
            informers = [factory.informer(CONFIGMAPS, namespace=f"ns{i}") for i in range(150)]
            with capture_logs() as logs:
                async with factory:
                    await factory.wait_for_sync(timeout=30)
                    await server.wait_for_watchers(150, CONFIGMAPS, timeout=30)
                    made = [server.create(CONFIGMAPS, cm("a", f"ns{i}")) for i in range(150)]
                    async with asyncio.timeout(30):  # bounds a hang only
                        cached = await asyncio.gather(
                            *(inf.wait_for_write(m) for inf, m in zip(informers, made, strict=True))
                        )
                    assert all(c is not None for c in cached)
                    stats = [inf.statistics() for inf in informers]
            pool = _pool_of(api)  # every watch gave its connection back; the extra pool closed
            assert (pool.watches, pool.beyond_watches, pool.beyond) == (0, 0, None)
        finally:
            await api.close()
    assert all(s.watches == 1 and s.errors == 0 for s in stats)
    beyond = sum(s.watches_beyond_pool for s in stats)
    assert 50 <= beyond < 150  # the pool served what it could spare, the rest went beyond it
    warned = [e for e in logs if e["event"] == "transport.watches_beyond_pool"]
    assert warned and warned[0]["pool_limit"] == 100


async def test_connect_builds_a_client_whose_pool_does_not_bound_watches(tmp_path: Path) -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        api = await connect(str(server.write_kubeconfig(tmp_path / "config")))
        try:
            assert api.rest_client.pool_manager.connector.limit == 0  # aiohttp: 0 = no limit
        finally:
            await api.close()
