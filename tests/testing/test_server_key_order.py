"""The order of keys in the server's answers, as a real apiserver's Go encoders write them:
a built-in's maps (labels, annotations, a ConfigMap's data, nodeSelector, resources.limits, a
CRD schema's properties) with sorted keys and its metadata in ObjectMeta's field order; a custom
resource (unstructured) with every key sorted at every level, list envelope included. Checked
on every answer that carries objects: create, get, list, watch, patch, apply, dry run."""

from __future__ import annotations

from typing import Any

from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client
from .test_server_crds import CRD_PATH, WIDGETS, widget_crd

MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def unsorted_dicts(value: Any, path: str = "") -> list[str]:
    """The paths of the objects under ``value`` whose keys are not sorted."""
    found: list[str] = []
    if isinstance(value, dict):
        if list(value) != sorted(value):
            found.append(path or ".")
        for key, sub in value.items():
            found += unsorted_dicts(sub, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += unsorted_dicts(item, f"{path}[{index}]")
    return found


def configmap(name: str) -> dict[str, Any]:
    """Maps written in anything but sorted order, annotations before labels."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "annotations": {"zz": "1", "aa": "2"},
            "name": name,
            "labels": {"z": "1", "m": "2", "a": "3"},
        },
        "data": {"b": "1", "a": "2", "0": "3"},
    }


_META_ORDER = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "labels",
    "annotations",
    "managedFields",
]


def assert_built_in_order(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    assert list(obj)[:3] == ["kind", "apiVersion", "metadata"]
    assert list(meta) == _META_ORDER
    assert list(meta["annotations"]) == ["aa", "zz"]
    assert list(meta["managedFields"][0])[:4] == ["manager", "operation", "apiVersion", "time"]


async def test_built_in_maps_are_answered_with_sorted_keys_and_metadata_in_go_order(
    api_server: ApiServer, client: Client
) -> None:
    created = await client.request(api_server, "POST", CM_PATH, configmap("c"))
    assert created.status == 201
    assert list(created.body["metadata"]) == _META_ORDER
    assert '"data":{"0":"3","a":"2","b":"1"}' in created.text
    assert '"labels":{"a":"3","m":"2","z":"1"},"annotations":{"aa":"2","zz":"1"}' in created.text
    async with client.watch(
        api_server, CM_PATH, resourceVersion=created.body["metadata"]["resourceVersion"]
    ) as watch:
        patched = await client.request(
            api_server,
            "PATCH",
            CM_PATH + "/c",
            {"data": {"00": "4"}, "metadata": {"labels": {"b": "5"}}},
            MERGE,
        )
        event = await watch.next()
    assert event is not None and event["type"] == "MODIFIED"
    for answer in (
        patched.body,
        event["object"],
        (await client.get(api_server, CM_PATH + "/c")).body,
        {"kind": "ConfigMap", "apiVersion": "v1"}  # list items carry neither
        | (await client.get(api_server, CM_PATH)).body["items"][0],
    ):
        assert_built_in_order(answer)
        assert list(answer["data"]) == ["0", "00", "a", "b"]
        assert list(answer["metadata"]["labels"]) == ["a", "b", "m", "z"]


async def test_nested_maps_of_built_ins_are_sorted_in_every_write_path(
    api_server: ApiServer, client: Client
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "nodeSelector": {"zone": "a", "disk": "ssd"},
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1.27",
                    "resources": {"limits": {"memory": "1Gi", "cpu": "1"}},
                }
            ],
        },
    }
    path = "/api/v1/namespaces/default/pods"
    dry = await client.request(api_server, "POST", path, pod, dryRun="All")
    applied = await client.request(api_server, "PATCH", path + "/p", pod, APPLY, fieldManager="me")
    assert dry.status == 201 and applied.status == 201
    for answer in (dry.body, applied.body, (await client.get(api_server, path + "/p")).body):
        spec = answer["spec"]
        assert list(spec["nodeSelector"]) == ["disk", "zone"]
        resources = spec["containers"][0]["resources"]
        assert list(resources["limits"]) == ["cpu", "memory"]
        assert list(resources["requests"]) == ["cpu", "memory"]  # defaulted from the limits
        assert list(spec["containers"][0])[:2] == ["name", "image"]  # structs: not sorted


async def test_a_crd_schemas_properties_are_a_sorted_map(
    api_server: ApiServer, client: Client
) -> None:
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}},
            }
        },
    }
    created = await client.request(api_server, "POST", CRD_PATH, crd)
    assert created.status == 201, created.body
    schema = created.body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert list(schema["properties"]["spec"]["properties"]) == ["alpha", "zeta"]
    assert list(created.body)[:2] == ["kind", "apiVersion"]  # a built-in: a Go struct


async def test_custom_resources_are_answered_with_every_key_sorted(
    api_server: ApiServer, client: Client
) -> None:
    assert (await client.request(api_server, "POST", CRD_PATH, widget_crd())).status == 201
    widget = {
        "kind": "Widget",
        "apiVersion": "example.com/v1",
        "metadata": {"name": "w", "labels": {"z": "1", "a": "2"}},
        "spec": {"size": 1, "nested": {"y": [{"b": 1, "a": 2}], "x": True}},
    }
    created = await client.request(api_server, "POST", WIDGETS, widget)
    assert created.status == 201
    assert created.text.startswith('{"apiVersion":"example.com/v1","kind":"Widget","metadata":{')
    rv = created.body["metadata"]["resourceVersion"]
    async with client.watch(
        api_server, WIDGETS, resourceVersion=rv, allowWatchBookmarks="true"
    ) as watch:
        patched = await client.request(
            api_server, "PATCH", WIDGETS + "/w", {"spec": {"added": {"d": 1, "c": 2}}}, MERGE
        )
        event = await watch.next()
        bookmarks = api_server.send_bookmarks(force=True)
        bookmark = await watch.next()
    applied = await client.request(
        api_server,
        "PATCH",
        WIDGETS + "/w",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"zz": 1, "aa": 2},
        },
        APPLY,
        fieldManager="me",
    )
    listed = await client.get(api_server, WIDGETS, limit=1)
    got = await client.get(api_server, WIDGETS + "/w")
    assert event is not None and bookmarks == 1 and bookmark is not None
    assert bookmark["type"] == "BOOKMARK"
    for answer in (
        created.body,
        patched.body,
        event["object"],
        bookmark["object"],
        applied.body,
        got.body,
        listed.body,
    ):
        assert unsorted_dicts(answer) == []
    assert list(listed.body) == ["apiVersion", "items", "kind", "metadata"]
    assert list(event) == ["type", "object"]  # the watch event itself is a Go struct
