"""A CRD with several served versions and ``conversion: None``: one collection stored in the
storage version; every served version reads and writes it with its own ``apiVersion`` (same
uid, same resourceVersion), watches of any version see every change, and each version's schema
applies to writes through it."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import Resource
from informer.testing import ApiServer

from .server_helpers import Client
from .test_server_key_order import unsorted_dicts

pytestmark = pytest.mark.asyncio

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BETA = "/apis/multi.example.com/v1beta1/namespaces/default/gizmos"
V1 = "/apis/multi.example.com/v1/namespaces/default/gizmos"
GIZMOS_V1 = Resource("multi.example.com", "v1", "gizmos", "Gizmo")


def version(name: str, storage: bool, size_type: str) -> dict[str, Any]:
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {"size": {"type": size_type}, "colour": {"type": "string"}},
                    }
                },
            }
        },
    }


def gizmo_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.multi.example.com"},
        "spec": {
            "group": "multi.example.com",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "scope": "Namespaced",
            "conversion": {"strategy": "None"},
            "versions": [version("v1beta1", False, "string"), version("v1", True, "integer")],
        },
    }


async def test_served_versions_share_one_stored_collection(
    api_server: ApiServer, client: Client
) -> None:
    assert (await client.request(api_server, "POST", CRD_PATH, gizmo_crd())).status == 201
    async with client.watch(api_server, V1, resourceVersion="1") as v1_watch:
        body = {
            "apiVersion": "multi.example.com/v1beta1",
            "kind": "Gizmo",
            "metadata": {"name": "g"},
            "spec": {"size": "big"},
        }
        created = await client.request(api_server, "POST", BETA, body)
        assert created.status == 201, created.body
        assert created.body["apiVersion"] == "multi.example.com/v1beta1"
        event = await v1_watch.next()
    assert event is not None and event["object"]["apiVersion"] == "multi.example.com/v1"
    stored = api_server.get(GIZMOS_V1, "g", "default")
    assert stored is not None and stored["apiVersion"] == "multi.example.com/v1"
    as_v1 = await client.get(api_server, V1 + "/g")
    as_beta = await client.get(api_server, BETA + "/g")
    assert as_v1.body["apiVersion"] == "multi.example.com/v1"
    assert as_beta.body["apiVersion"] == "multi.example.com/v1beta1"
    for key in ("uid", "resourceVersion"):
        assert as_v1.body["metadata"][key] == as_beta.body["metadata"][key]
    listed = await client.get(api_server, BETA)
    assert listed.body["kind"] == "GizmoList"
    assert listed.body["apiVersion"] == "multi.example.com/v1beta1"
    assert [i["apiVersion"] for i in listed.body["items"]] == ["multi.example.com/v1beta1"]
    assert unsorted_dicts(listed.body) == unsorted_dicts(as_beta.body) == []  # unstructured
    async with client.watch(
        api_server, BETA, resourceVersion=as_v1.body["metadata"]["resourceVersion"]
    ) as beta_watch:
        patched = await client.request(
            api_server,
            "PATCH",
            V1 + "/g",
            {"spec": {"colour": "red"}},
            "application/merge-patch+json",
        )
        assert patched.status == 200
        event = await beta_watch.next()
    assert event is not None and event["type"] == "MODIFIED"
    assert event["object"]["apiVersion"] == "multi.example.com/v1beta1"
    assert event["object"]["spec"] == {"size": "big", "colour": "red"}
    assert unsorted_dicts(event["object"]) == [] and list(event) == ["type", "object"]
    # each version's schema applies to writes through it
    typed = {"apiVersion": "multi.example.com/v1", "kind": "Gizmo", "metadata": {"name": "h"}}
    typed["spec"] = {"size": "big"}
    refused = await client.request(api_server, "POST", V1, typed)
    assert refused.status == 422
    deleted = await client.request(api_server, "DELETE", BETA + "/g")
    assert deleted.status == 200
    assert (await client.get(api_server, V1 + "/g")).status == 404


async def test_each_version_reads_with_its_own_defaults(
    api_server: ApiServer, client: Client
) -> None:
    crd = gizmo_crd()
    beta_spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    beta_spec["properties"]["colour"]["default"] = "blue"
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    async with client.watch(api_server, BETA, resourceVersion="1") as beta_watch:
        body = {
            "apiVersion": "multi.example.com/v1",
            "kind": "Gizmo",
            "metadata": {"name": "d"},
            "spec": {"size": 1},
        }
        created = await client.request(api_server, "POST", V1, body)
        assert created.status == 201 and created.body["spec"] == {"size": 1}
        event = await beta_watch.next()
    assert event is not None and event["object"]["spec"] == {"size": 1, "colour": "blue"}
    as_beta = await client.get(api_server, BETA + "/d")
    assert as_beta.body["spec"] == {"size": 1, "colour": "blue"}
    listed = await client.get(api_server, BETA)
    assert listed.body["items"][0]["spec"] == {"size": 1, "colour": "blue"}
    assert (await client.get(api_server, V1 + "/d")).body["spec"] == {"size": 1}
