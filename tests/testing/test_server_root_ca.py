"""The root CA publisher (``ApiServer(root_ca_configmaps=True)``, ``informer serve``): every
namespace has ``kube-root-ca.crt`` (the cluster's CA, with its description annotation), created
again when deleted and put back when changed, as kube-controller-manager's rootcacertpublisher
keeps it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def api_server() -> AsyncIterator[ApiServer]:
    """A server that runs the root CA publisher, as a cluster does."""
    async with ApiServer(root_ca_configmaps=True) as server:
        yield server


ROOT_CA = "/api/v1/namespaces/{}/configmaps/kube-root-ca.crt"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


async def test_every_namespace_has_the_root_ca_config_map(
    api_server: ApiServer, client: Client
) -> None:
    fresh = await client.get(api_server, ROOT_CA.format("kube-system"))
    assert fresh.status == 200
    assert fresh.body["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----\n")
    assert fresh.body["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    made = await client.request(
        api_server, "POST", "/api/v1/namespaces", {"metadata": {"name": "n"}}
    )
    assert made.status == 201
    published = await client.get(api_server, ROOT_CA.format("n"))
    assert published.status == 200
    assert published.body["data"] == fresh.body["data"]


async def test_a_deleted_or_changed_root_ca_config_map_is_put_back(
    api_server: ApiServer, client: Client
) -> None:
    path = ROOT_CA.format("default")
    before = (await client.get(api_server, path)).body
    async with client.watch(
        api_server,
        "/api/v1/namespaces/default/configmaps",
        resourceVersion=str(api_server.revision),
    ) as w:
        gone = await client.request(api_server, "DELETE", path)
        assert gone.status == 200
        events = await w.take(2)
        assert [e["type"] for e in events] == ["DELETED", "ADDED"]
        again = events[1]["object"]
        assert again["metadata"]["uid"] != before["metadata"]["uid"]
        assert again["data"] == before["data"]
        changed = {**again, "data": {"ca.crt": "not a CA"}}
        changed["metadata"] = {**again["metadata"], "annotations": {}}
        assert (await client.request(api_server, "PUT", path, changed)).status == 200
        events = await w.take(2)
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED"]
    restored = (await client.get(api_server, path)).body
    assert restored["data"] == before["data"]
    assert restored["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}


async def test_a_namespace_being_deleted_goes_with_its_root_ca(
    api_server: ApiServer, client: Client
) -> None:
    assert (
        await client.request(api_server, "POST", "/api/v1/namespaces", {"metadata": {"name": "t"}})
    ).status == 201
    assert (await client.request(api_server, "DELETE", "/api/v1/namespaces/t")).status == 200
    assert (await client.get(api_server, "/api/v1/namespaces/t")).status == 404
    assert (await client.get(api_server, ROOT_CA.format("t"))).status == 404


async def test_without_the_publisher_a_namespace_starts_empty() -> None:
    async with ApiServer() as server:
        assert server.get(CONFIGMAPS, "kube-root-ca.crt", "default") is None


async def test_over_tls_the_root_ca_is_the_servers() -> None:
    async with ApiServer(tls=True, root_ca_configmaps=True) as server:
        assert server.ca_pem is not None
        for namespace in ("default", "kube-system"):
            stored = server.get(CONFIGMAPS, "kube-root-ca.crt", namespace)
            assert stored is not None
            assert stored["data"]["ca.crt"] == server.ca_pem.decode()
