"""CustomResourceDefinitions over HTTP: creating one serves its resource (versions, scope,
status subresource, short names) and updates discovery; deleting it removes the objects and the
resource."""

from __future__ import annotations

from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def widget_crd(status: bool = True) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wd"],
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


async def test_a_crd_serves_its_resource_until_deleted(
    api_server: ApiServer, client: Client
) -> None:
    assert (await client.get(api_server, WIDGETS)).status == 404
    created = await client.request(api_server, "POST", CRD_PATH, widget_crd())
    assert created.status == 201
    conditions = {c["type"]: c["status"] for c in created.body["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert created.body["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    found = (await client.get(api_server, "/apis/example.com/v1")).body["resources"]
    assert found[0]["name"] == "widgets" and found[0]["shortNames"] == ["wd"]
    assert found[1]["name"] == "widgets/status"
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1},
        "status": {"ready": True},
    }
    made = await client.request(api_server, "POST", WIDGETS, widget)
    assert made.status == 201 and "status" not in made.body  # status subresource: dropped
    assert made.body["metadata"]["generation"] == 1
    listed = await client.get(api_server, WIDGETS)
    assert listed.body["kind"] == "WidgetList" and listed.body["items"][0]["kind"] == "Widget"
    status = await client.request(
        api_server,
        "PATCH",
        WIDGETS + "/w/status",
        {"status": {"ready": True}},
        "application/merge-patch+json",
    )
    assert status.status == 200 and status.body["status"] == {"ready": True}
    deleted = await client.request(api_server, "DELETE", CRD_PATH + "/widgets.example.com")
    assert deleted.status == 200
    assert (await client.get(api_server, WIDGETS)).status == 404
    assert (await client.get(api_server, "/apis/example.com/v1")).status == 404
    groups = [g["name"] for g in (await client.get(api_server, "/apis")).body["groups"]]
    assert "example.com" not in groups
    # created again: served again, empty
    await client.request(api_server, "POST", CRD_PATH, widget_crd())
    again = await client.get(api_server, WIDGETS)
    assert again.status == 200 and again.body["items"] == []


async def test_an_invalid_crd_is_refused(api_server: ApiServer, client: Client) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "wrong.example.com"
    reply = await client.request(api_server, "POST", CRD_PATH, crd)
    assert reply.status == 422
    assert reply.body["details"]["causes"][0]["field"] == "metadata.name"


async def test_cluster_scoped_crd_with_versions_and_printer_columns(
    api_server: ApiServer, client: Client
) -> None:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.org"},
        "spec": {
            "group": "example.org",
            "names": {"plural": "gadgets", "kind": "Gadget", "categories": ["all"]},
            "scope": "Cluster",
            "versions": [
                {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": schema,
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                    ],
                },
                {"name": "v0", "served": False, "storage": False, "schema": schema},
            ],
        },
    }
    created = await client.request(api_server, "POST", CRD_PATH, crd)
    assert created.status == 201
    assert created.body["status"]["storedVersions"] == ["v1"]
    versions = next(
        g
        for g in (await client.get(api_server, "/apis")).body["groups"]
        if g["name"] == "example.org"
    )["versions"]
    assert [v["version"] for v in versions] == ["v1beta1", "v1"]
    assert (await client.get(api_server, "/apis/example.org/v0/gadgets")).status == 404
    gadget = {
        "apiVersion": "example.org/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 7},
    }
    made = await client.request(api_server, "POST", "/apis/example.org/v1/gadgets", gadget)
    assert made.status == 201 and "namespace" not in made.body["metadata"]
    assert made.body["metadata"]["generation"] == 1
    async with client.http.get(
        api_server.url + "/apis/example.org/v1/gadgets",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    ) as response:
        table = await response.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Age"]
    assert table["rows"][0]["cells"][:2] == ["g", 7]
