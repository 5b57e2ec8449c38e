"""Resource discovery: names as kubectl accepts them, resolved through the server's discovery."""

from __future__ import annotations

import pytest

from informer import CONFIGMAPS, LEASES, NAMESPACES, Resource, Transport, UnknownResource
from informer.errors import ApiError
from informer.testing import ApiServer, Fault

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")
WIDGETS_V2 = Resource("example.com", "v2beta1", "widgets", "Widget")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("configmaps", CONFIGMAPS),
        ("configmap", CONFIGMAPS),
        ("cm", CONFIGMAPS),
        ("ConfigMap", CONFIGMAPS),
        ("v1/configmaps", CONFIGMAPS),
        ("ns", NAMESPACES),
        ("leases", LEASES),
        ("leases.coordination.k8s.io", LEASES),
        ("leases.v1.coordination.k8s.io", LEASES),
        ("coordination.k8s.io/v1/leases", LEASES),
        ("widgets", WIDGETS),
        ("widget.example.com", WIDGETS),
        ("Widget", WIDGETS),
        ("example.com/v2beta1/widgets", WIDGETS_V2),
    ],
)
async def test_names_resolve_like_kubectl(
    api_server: ApiServer, name: str, expected: Resource
) -> None:
    api_server.register(WIDGETS)
    api_server.register(WIDGETS_V2)
    async with api_server.api_client() as api:
        assert await Resource.discover(api, name) == expected


async def test_scope_and_kind_come_from_the_server(api_server: ApiServer) -> None:
    api_server.register(Resource("example.com", "v1", "clusterwidgets", "ClusterWidget", False))
    async with api_server.api_client() as api:
        found = await Resource.discover(Transport(api), "clusterwidgets")
    assert found.kind == "ClusterWidget" and not found.namespaced


@pytest.mark.parametrize("name", ["gizmos", "configmaps.apps", "apps/v1/configmaps", "", "a/b/c/d"])
async def test_unknown_names_raise_unknown_resource(api_server: ApiServer, name: str) -> None:
    async with api_server.api_client() as api:
        with pytest.raises(UnknownResource, match="doesn't have a resource type"):
            await Resource.discover(api, name)


async def test_a_forbidden_discovery_is_a_typed_api_error(api_server: ApiServer) -> None:
    api_server.faults.add(Fault(status=403, times=None))
    async with api_server.api_client() as api:
        with pytest.raises(ApiError) as caught:
            await Resource.discover(api, "configmaps")
    assert caught.value.code == 403
