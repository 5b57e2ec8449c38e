"""Discovery, /version, OpenAPI and Table answers, as kubectl and the Python clients read them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def fetch(client: Client, server: ApiServer, path: str, accept: str) -> Any:
    async with client.http.get(server.url + path, headers={"Accept": accept}) as response:
        return response.status, response.headers.get("Content-Type"), await response.json()


def by_name(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in resources}


async def test_legacy_discovery_names_and_verbs(api_server: ApiServer, client: Client) -> None:
    core = by_name((await client.get(api_server, "/api/v1")).body["resources"])
    assert core["configmaps"]["shortNames"] == ["cm"]
    assert core["pods"]["shortNames"] == ["po"] and core["pods"]["categories"] == ["all"]
    assert core["pods"]["singularName"] == "pod"
    assert "deletecollection" in core["configmaps"]["verbs"]
    assert core["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert "configmaps/status" not in core
    apps = by_name((await client.get(api_server, "/apis/apps/v1")).body["resources"])
    assert apps["deployments"]["shortNames"] == ["deploy"]
    assert set(apps) >= {"statefulsets", "daemonsets", "replicasets", "deployments/status"}
    groups = [g["name"] for g in (await client.get(api_server, "/apis")).body["groups"]]
    assert {"apps", "batch", "coordination.k8s.io", "apiextensions.k8s.io"} <= set(groups)


async def test_aggregated_discovery_when_asked(api_server: ApiServer, client: Client) -> None:
    status, ctype, body = await fetch(client, api_server, "/apis", AGGREGATED + ",application/json")
    assert status == 200 and ctype.startswith("application/json")
    assert "as=APIGroupDiscoveryList" in ctype
    assert body["kind"] == "APIGroupDiscoveryList"
    apps = next(i for i in body["items"] if i["metadata"].get("name") == "apps")
    deployments = next(
        r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments"
    )
    assert deployments["scope"] == "Namespaced" and deployments["shortNames"] == ["deploy"]
    assert deployments["subresources"][0]["subresource"] == "status"
    _, _, core = await fetch(client, api_server, "/api", AGGREGATED)
    assert core["items"][0]["versions"][0]["version"] == "v1"
    _, plain_type, plain = await fetch(client, api_server, "/apis", "application/json")
    assert plain["kind"] == "APIGroupList" and "as=" not in plain_type


async def test_version_is_complete(api_server: ApiServer, client: Client) -> None:
    version = (await client.get(api_server, "/version")).body
    for field in (
        "major",
        "minor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ):
        assert isinstance(version[field], str) and version[field], field


async def test_openapi_v3_names_each_group_version(api_server: ApiServer, client: Client) -> None:
    index = (await client.get(api_server, "/openapi/v3")).body
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    assert "apis/apps/v1" in index["paths"]
    doc = (await client.get(api_server, url)).body
    assert doc["openapi"].startswith("3.")
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "",
        "version": "v1",
        "kind": "ConfigMap",
    }
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    v2 = (await client.get(api_server, "/openapi/v2")).body
    assert v2["swagger"] == "2.0" and v2["paths"]


async def test_table_answers_for_kubectl_get(api_server: ApiServer, client: Client) -> None:
    await client.request(api_server, "POST", CM_PATH, cm("t"))
    status, _ctype, table = await fetch(client, api_server, CM_PATH, TABLE)
    assert status == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["t", 1]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    _, _, one = await fetch(client, api_server, CM_PATH + "/t", TABLE)
    assert one["kind"] == "Table" and len(one["rows"]) == 1
    _, _, plain = await fetch(client, api_server, CM_PATH, "application/json")
    assert plain["kind"] == "ConfigMapList"


async def test_watch_events_carry_tables_when_asked(api_server: ApiServer, client: Client) -> None:
    rv = api_server.create(CONFIGMAPS, cm("before"))["metadata"]["resourceVersion"]
    url = f"{api_server.url}{CM_PATH}?watch=true&resourceVersion={rv}"
    async with client.http.get(url, headers={"Accept": TABLE}) as response:
        api_server.create(CONFIGMAPS, cm("one"))
        api_server.create(CONFIGMAPS, cm("two"))
        first = json.loads(await response.content.readline())
        second = json.loads(await response.content.readline())
    assert first["type"] == "ADDED" and first["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert first["object"]["rows"][0]["cells"][:2] == ["one", 1]
    assert second["object"]["columnDefinitions"] is None  # headers only in the first event
    assert second["object"]["rows"][0]["cells"][0] == "two"


async def test_missing_integer_cells_are_zero(api_server: ApiServer, client: Client) -> None:
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    await client.request(api_server, "POST", "/apis/apps/v1/namespaces/default/deployments", body)
    _, _, table = await fetch(
        client, api_server, "/apis/apps/v1/namespaces/default/deployments", TABLE
    )
    assert table["rows"][0]["cells"][:4] == ["web", "0/2", 0, 0]


async def test_kubernetes_asyncio_version_api(api_server: ApiServer) -> None:
    from kubernetes_asyncio import client as k8s

    async with api_server.api_client() as api:
        info = await k8s.VersionApi(api).get_code()
    assert info.git_version == "v1.35.0" and info.go_version and info.compiler == "gc"


async def test_openapi_documents_carry_the_published_builtin_schemas(
    api_server: ApiServer, client: Client
) -> None:
    v3 = await client.get(api_server, "/openapi/v3/apis/apps/v1")
    schemas = v3.body["components"]["schemas"]
    replicas = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert (replicas["type"], replicas["format"]) == ("integer", "int32")
    template = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["template"]
    assert template["$ref"] == "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    v2 = await client.get(api_server, "/openapi/v2")
    assert "io.k8s.api.core.v1.PodSpec" in v2.body["definitions"]


async def test_openapi_v2_in_protobuf_only_is_not_acceptable(
    api_server: ApiServer, client: Client
) -> None:
    async with client.http.get(
        api_server.url + "/openapi/v2",
        headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
    ) as response:
        assert response.status == 406
        assert (await response.json())["reason"] == "NotAcceptable"
