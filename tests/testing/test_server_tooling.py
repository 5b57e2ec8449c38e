"""The pytest fixtures, kubernetes_asyncio configuration, kubeconfig and ``python -m informer``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import cm

pytestmark = pytest.mark.asyncio


async def test_fixtures(api_server: ApiServer, api_server_factory: Any) -> None:
    assert api_server.personality == "modern"
    assert api_server.url.startswith("http://127.0.0.1:")
    legacy = await api_server_factory("legacy", compaction_window=3)
    assert legacy.personality == "legacy" and legacy.compaction_window == 3
    assert legacy.too_large_wait < 1  # test defaults merged in
    assert legacy.url != api_server.url


async def test_kubernetes_asyncio_client(api_server: ApiServer) -> None:
    from kubernetes_asyncio import client

    api_server.create(CONFIGMAPS, cm("a"))
    async with api_server.api_client() as api:
        listed = await client.CoreV1Api(api).list_namespaced_config_map("default")
    assert [i.metadata.name for i in listed.items] == ["a"]
    assert listed.metadata.resource_version == str(api_server.revision)


async def test_kubeconfig(api_server: ApiServer, tmp_path: Path) -> None:
    from kubernetes_asyncio import client, config

    api_server.create(CONFIGMAPS, cm("k"))
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(path), client_configuration=configuration)
    assert configuration.host == api_server.url
    async with client.ApiClient(configuration) as api:
        got = await client.CoreV1Api(api).read_namespaced_config_map("k", "default")
    assert got.metadata.name == "k"


async def test_cli_serve() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "informer",
        "serve",
        "--port",
        "0",
        "--personality",
        "legacy",
        "--compaction-window",
        "10",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(20):
            url = (await process.stdout.readline()).decode().strip()
            async with aiohttp.ClientSession() as http, http.get(url + "/version") as reply:
                assert reply.status == 200
    finally:
        process.terminate()
        await process.wait()
