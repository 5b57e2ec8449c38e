"""The public ``Resource`` constants name what a server's discovery documents say, over HTTP
against the test API server (each one it serves: group, version, plural, kind and scope), and
each served one lists."""

from __future__ import annotations

import informer
from informer import Resource, UnknownResource
from informer.testing import ApiServer
from informer.transport import Transport

CONSTANTS = {name: value for name, value in vars(informer).items() if isinstance(value, Resource)}
SERVED_BY_THE_TEST_SERVER_TODAY = {
    "NAMESPACES",
    "CONFIGMAPS",
    "SECRETS",
    "PODS",
    "SERVICES",
    "LEASES",
    "DEPLOYMENTS",
    "STATEFULSETS",
    "DAEMONSETS",
    "REPLICASETS",
    "JOBS",
    "CUSTOMRESOURCEDEFINITIONS",
}


def test_the_common_built_ins_are_public() -> None:
    expected = {
        "DEPLOYMENTS", "STATEFULSETS", "DAEMONSETS", "REPLICASETS", "JOBS", "CRONJOBS",
        "SERVICES", "ENDPOINTSLICES", "INGRESSES", "SERVICEACCOUNTS", "ROLES", "ROLEBINDINGS",
        "CLUSTERROLES", "NODES", "PERSISTENTVOLUMECLAIMS", "CUSTOMRESOURCEDEFINITIONS", "EVENTS",
    }  # fmt: skip
    assert expected <= set(CONSTANTS) and set(CONSTANTS) <= set(informer.__all__)
    assert informer.EVENTS.api_version == "events.k8s.io/v1"


async def test_each_constant_matches_the_servers_discovery_and_lists(
    api_server: ApiServer,
) -> None:
    api = api_server.api_client()
    try:
        transport = Transport(api)
        served = set()
        for name, resource in CONSTANTS.items():
            spelled = f"{resource.api_version}/{resource.plural}"  # apps/v1/deployments
            try:
                found = await Resource.discover(api, spelled)
            except UnknownResource:
                continue
            served.add(name)
            assert found == resource, name
            page = await transport.list_page(resource, limit=1)
            assert page.resource_version, name
        assert served >= SERVED_BY_THE_TEST_SERVER_TODAY
    finally:
        await api.close()
