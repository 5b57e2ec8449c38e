"""A PUT without ``metadata.resourceVersion``: accepted for most built-ins (ConfigMaps), refused
with 422 for custom resources (and Leases, CRDs), whose strategies allow no unconditional
update; the answer of a real v1.36 server (write-semantics-v1.36.md)."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import LEASES
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBSITES = "/apis/fidelity.example.com/v1/namespaces/default/websites"


def website_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "websites.fidelity.example.com"},
        "spec": {
            "group": "fidelity.example.com",
            "names": {"plural": "websites", "singular": "website", "kind": "Website"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


async def test_a_custom_resource_put_without_resource_version_is_422(
    api_server: ApiServer, client: Client
) -> None:
    assert (await client.request(api_server, "POST", CRD_PATH, website_crd())).status == 201
    body = {
        "apiVersion": "fidelity.example.com/v1",
        "kind": "Website",
        "metadata": {"name": "defaulted"},
        "spec": {"image": "nginx"},
    }
    created = await client.request(api_server, "POST", WEBSITES, body)
    assert created.status == 201
    reply = await client.request(api_server, "PUT", WEBSITES + "/defaulted", body)
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == (
        'websites.fidelity.example.com "defaulted" is invalid: metadata.resourceVersion: '
        "Invalid value: 0: must be specified for an update"
    )
    assert reply.body["details"] == {
        "name": "defaulted",
        "group": "fidelity.example.com",
        "kind": "websites",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0: must be specified for an update",
                "field": "metadata.resourceVersion",
            }
        ],
    }
    status = await client.request(api_server, "PUT", WEBSITES + "/defaulted/status", body)
    assert status.status == 422
    body["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"]
    assert (await client.request(api_server, "PUT", WEBSITES + "/defaulted", body)).status == 200
    patched = await client.request(
        api_server,
        "PATCH",
        WEBSITES + "/defaulted",
        {"spec": {"image": "httpd"}},
        "application/merge-patch+json",
    )
    assert patched.status == 200  # a patch is applied to the current version


async def test_a_configmap_put_without_resource_version_is_accepted(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", CM_PATH, cm("a"))
    body = cm("a")
    body["data"] = {"k": "changed"}
    reply = await client.request(api_server, "PUT", CM_PATH + "/a", body)
    assert reply.status == 200 and reply.body["data"] == {"k": "changed"}


async def test_a_lease_put_without_resource_version_is_422(
    api_server: ApiServer, client: Client
) -> None:
    api_server.create(LEASES, {"metadata": {"name": "l", "namespace": "default"}, "spec": {}})
    body = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l"
    reply = await client.request(api_server, "PUT", path, body)
    assert reply.status == 422
    assert reply.body["message"].startswith('leases.coordination.k8s.io "l" is invalid')
