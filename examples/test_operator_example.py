"""Testing an operator against the embedded API server, from a user's project.

Works whatever the project's pytest-asyncio mode: tests carry ``@pytest.mark.asyncio`` and async
fixtures use ``pytest_asyncio.fixture`` (both needed in the default strict mode). Run it with
``python -m pytest examples/test_operator_example.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from kubernetes_asyncio import client

from informer import CONFIGMAPS, NAMESPACES
from informer.testing import ApiServer


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[ApiServer]:
    """A fresh API server per test, with a kubeconfig for clients started as subprocesses."""
    async with ApiServer() as server:
        server.write_kubeconfig(tmp_path / "kubeconfig")  # e.g. KUBECONFIG for kopf or kubectl
        yield server


@pytest.mark.asyncio
async def test_a_finalizer_holds_the_deletion(cluster: ApiServer) -> None:
    async with cluster.api_client() as api:
        core = client.CoreV1Api(api)
        body = {"metadata": {"name": "a", "finalizers": ["example.com/cleanup"]}}
        await core.create_namespaced_config_map("default", body)
        await core.delete_namespaced_config_map("a", "default")
        held = await core.read_namespaced_config_map("a", "default")
        assert held.metadata.deletion_timestamp is not None  # Terminating, as on a cluster
        # ... the operator under test does its cleanup, then removes its finalizer:
        await core.patch_namespaced_config_map("a", "default", {"metadata": {"finalizers": None}})
        assert cluster.list_objects(CONFIGMAPS) == []


@pytest.mark.asyncio
async def test_with_the_plugin_fixture(api_server: ApiServer) -> None:
    """``api_server`` comes with the package (pytest plugin); creates into missing namespaces
    are 404 over HTTP, the Python API creates them as test setup."""
    api_server.create(CONFIGMAPS, {"metadata": {"name": "b", "namespace": "team"}})
    assert api_server.get(NAMESPACES, "team") is not None
