"""Strategic merge patch of built-in types: lists merged by their patch merge keys, primitive
sets, and the $patch, $setElementOrder, $retainKeys and $deleteFromPrimitiveList directives."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import PODS, Resource
from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

CONTAINER_DEFAULTS = {
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
}
"""What the apiserver's defaulters add to a container with a tagged image."""

POD_PATH = "/api/v1/namespaces/default/pods/p"
SMP = "application/strategic-merge-patch+json"


def pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default", "finalizers": ["a/x", "a/y"]},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "app:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80}, {"containerPort": 443}],
                    "volumeMounts": [{"name": "v", "mountPath": "/data"}],
                },
                {"name": "sidecar", "image": "side:1"},
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
    }


async def smp(
    api_server: ApiServer, client: Client, patch: Any, path: str = POD_PATH
) -> dict[str, Any]:
    reply = await client.request(api_server, "PATCH", path, patch, content_type=SMP)
    assert reply.status == 200, reply.body
    body: dict[str, Any] = reply.body
    return body


async def test_containers_merge_by_name_and_env_ports_mounts_by_their_keys(
    api_server: ApiServer, client: Client
) -> None:
    api_server.create(PODS, pod())
    patched = await smp(
        api_server,
        client,
        {
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "app:2",
                        "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                        "ports": [{"containerPort": 443, "name": "https"}],
                        "volumeMounts": [{"mountPath": "/data", "readOnly": True}],
                    }
                ]
            }
        },
    )
    app, sidecar = patched["spec"]["containers"]
    assert sidecar == {"name": "sidecar", "image": "side:1", **CONTAINER_DEFAULTS}
    assert app["image"] == "app:2"
    assert app["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert app["ports"] == [
        {"containerPort": 80, "protocol": "TCP"},
        {"containerPort": 443, "name": "https", "protocol": "TCP"},
    ]
    assert app["volumeMounts"] == [{"name": "v", "mountPath": "/data", "readOnly": True}]


async def test_patch_directives_delete_replace_and_order(
    api_server: ApiServer, client: Client
) -> None:
    api_server.create(PODS, pod())
    deleted = await smp(
        api_server, client, {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}
    )
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["app"]
    replaced = await smp(
        api_server,
        client,
        {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o:1"}]}},
    )
    assert replaced["spec"]["containers"] == [
        {"name": "only", "image": "o:1", **CONTAINER_DEFAULTS}
    ]
    ordered = await smp(
        api_server,
        client,
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "new"}, {"name": "only"}],
                "containers": [{"name": "new", "image": "n:1"}],
            }
        },
    )
    assert [c["name"] for c in ordered["spec"]["containers"]] == ["new", "only"]
    map_replaced = await smp(
        api_server, client, {"metadata": {"labels": {"$patch": "replace", "only": "this"}}}
    )
    assert map_replaced["metadata"]["labels"] == {"only": "this"}


async def test_finalizers_are_a_set_and_delete_from_primitive_list(
    api_server: ApiServer, client: Client
) -> None:
    api_server.create(PODS, pod())
    added = await smp(api_server, client, {"metadata": {"finalizers": ["a/y", "a/z"]}})
    assert added["metadata"]["finalizers"] == ["a/x", "a/y", "a/z"]
    removed = await smp(
        api_server, client, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}}
    )
    assert removed["metadata"]["finalizers"] == ["a/y", "a/z"]


async def test_retain_keys_replaces_a_volume_source(api_server: ApiServer, client: Client) -> None:
    api_server.create(PODS, pod())
    patched = await smp(
        api_server,
        client,
        {
            "spec": {
                "volumes": [
                    {
                        "name": "v",
                        "$retainKeys": ["configMap", "name"],
                        "configMap": {"name": "cm"},
                    }
                ]
            }
        },
    )
    assert patched["spec"]["volumes"] == [
        {"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}
    ]


async def test_a_list_item_without_its_merge_key_is_refused(
    api_server: ApiServer, client: Client
) -> None:
    api_server.create(PODS, pod())
    reply = await client.request(
        api_server, "PATCH", POD_PATH, {"spec": {"containers": [{"image": "x"}]}}, content_type=SMP
    )
    assert reply.status == 400


async def test_custom_resources_do_not_take_strategic_merge_patches(
    api_server: ApiServer, client: Client
) -> None:
    widgets = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
    api_server.register(widgets)
    api_server.create(widgets, {"metadata": {"name": "w", "namespace": "default"}})
    reply = await client.request(
        api_server,
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w",
        {"spec": {"a": 1}},
        content_type=SMP,
    )
    assert reply.status == 415 and reply.body["reason"] == "UnsupportedMediaType"


async def test_a_deployment_template_merges_containers_and_retains_strategy_keys(
    api_server: ApiServer, client: Client
) -> None:
    deployment = {
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "app:1"},
                        {"name": "sidecar", "image": "side:1"},
                    ]
                },
            },
        },
    }
    reply = await client.request(
        api_server, "POST", "/apis/apps/v1/namespaces/default/deployments", deployment
    )
    assert reply.status == 201, reply.body
    patch = {
        "spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}},
        }
    }
    path = "/apis/apps/v1/namespaces/default/deployments/d"
    spec = (await smp(api_server, client, patch, path))["spec"]
    assert spec["strategy"] == {"type": "Recreate"}
    assert [c["image"] for c in spec["template"]["spec"]["containers"]] == ["app:2", "side:1"]


async def test_an_explicit_merge_directive_and_null_deletes(
    api_server: ApiServer, client: Client
) -> None:
    api_server.create(PODS, pod())
    patched = await smp(
        api_server,
        client,
        {"metadata": {"labels": {"$patch": "merge", "a": "1"}}, "spec": {"volumes": None}},
    )
    assert patched["metadata"]["labels"] == {"a": "1"}
    assert "volumes" not in patched["spec"]
