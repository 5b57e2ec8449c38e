"""Storage and writes: revisions, metadata, POST/PUT/PATCH/DELETE, GET with the GET RV rules."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS, LEASES, NAMESPACES, Resource
from informer.testing import AlreadyExists, ApiServer, Conflict, NotFound

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio


async def test_python_api_and_metadata(api_server: ApiServer) -> None:
    start = api_server.revision
    created = api_server.create(CONFIGMAPS, cm("a"))
    meta = created["metadata"]
    assert created["kind"] == "ConfigMap" and created["apiVersion"] == "v1"
    assert meta["resourceVersion"] == str(start + 1) == str(api_server.revision)
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert "generation" not in meta  # ConfigMaps keep none (test_server_subresources.py)
    updated = api_server.replace(CONFIGMAPS, {**created, "data": {"k": "v"}})
    assert updated["metadata"]["uid"] == meta["uid"]
    with pytest.raises(Conflict) as conflict:
        api_server.replace(CONFIGMAPS, created)  # stale resourceVersion
    assert conflict.value.code == 409
    assert conflict.value.status["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )
    with pytest.raises(AlreadyExists):
        api_server.create(CONFIGMAPS, cm("a"))
    assert api_server.get(CONFIGMAPS, "a", "default")["data"] == {"k": "v"}  # type: ignore[index]
    gone = api_server.delete(CONFIGMAPS, "a", "default")
    assert gone["metadata"]["resourceVersion"] == str(api_server.revision)
    assert api_server.get(CONFIGMAPS, "a", "default") is None
    with pytest.raises(NotFound):
        api_server.delete(CONFIGMAPS, "a", "default")


async def test_http_create_conflicts_and_not_found(api_server: ApiServer, client: Client) -> None:
    created = await client.request(api_server, "POST", CM_PATH, cm("a"))
    assert created.status == 201
    again = await client.request(api_server, "POST", CM_PATH, cm("a"))
    assert again.status == 409
    assert again.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        '"configmaps \\"a\\" already exists","reason":"AlreadyExists","details":{"name":"a",'
        '"kind":"configmaps"},"code":409}\n'
    )
    missing = await client.get(api_server, CM_PATH + "/nope")
    assert missing.status == 404
    assert missing.body["message"] == 'configmaps "nope" not found'
    lease = await client.get(api_server, "/apis/coordination.k8s.io/v1/namespaces/d/leases/l")
    assert lease.body["message"] == 'leases.coordination.k8s.io "l" not found'
    assert lease.body["details"] == {"name": "l", "group": "coordination.k8s.io", "kind": "leases"}
    wrong_ns = await client.request(api_server, "POST", CM_PATH, cm("b", namespace="other"))
    assert wrong_ns.status == 400
    no_name = await client.request(api_server, "POST", CM_PATH, {"metadata": {}})
    assert no_name.status == 422
    generated = await client.request(
        api_server, "POST", CM_PATH, {"metadata": {"generateName": "gen-"}}
    )
    assert generated.body["metadata"]["name"].startswith("gen-")


async def test_http_update_patch_delete(api_server: ApiServer, client: Client) -> None:
    created = (await client.request(api_server, "POST", CM_PATH, cm("a"))).body
    stale = dict(created)
    put = await client.request(api_server, "PUT", CM_PATH + "/a", {**created, "data": {"k": "2"}})
    assert put.status == 200 and put.body["data"] == {"k": "2"}
    conflict = await client.request(api_server, "PUT", CM_PATH + "/a", stale)
    assert conflict.status == 409 and conflict.body["reason"] == "Conflict"
    merge = await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/a",
        {"data": {"m": "1"}},
        content_type="application/merge-patch+json",
    )
    assert merge.body["data"] == {"k": "2", "m": "1"}
    json_patch = await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/a",
        [{"op": "remove", "path": "/data/k"}],
        content_type="application/json-patch+json",
    )
    assert json_patch.body["data"] == {"m": "1"}
    unsupported = await client.request(
        api_server, "PATCH", CM_PATH + "/a", {}, content_type="application/xml"
    )
    assert unsupported.status == 415
    assert unsupported.body["reason"] == "UnsupportedMediaType"
    precondition = await client.request(
        api_server, "DELETE", CM_PATH + "/a", {"preconditions": {"resourceVersion": "1"}}
    )
    assert precondition.status == 409
    deleted = await client.request(api_server, "DELETE", CM_PATH + "/a")
    assert deleted.status == 200
    # configmaps (like most resources) answer a Status naming the deleted object
    assert deleted.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }


async def test_http_delete_of_pods_and_namespaces_returns_the_object(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", "/api/v1/namespaces", {"metadata": {"name": "t"}})
    pod = {
        "metadata": {"name": "p", "namespace": "t"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    await client.request(api_server, "POST", "/api/v1/namespaces/t/pods", pod)
    deleted = await client.request(api_server, "DELETE", "/api/v1/namespaces/t/pods/p")
    assert deleted.body["kind"] == "Pod" and deleted.body["metadata"]["name"] == "p"
    assert deleted.body["metadata"]["resourceVersion"] == str(api_server.revision)
    gone = await client.request(api_server, "DELETE", "/api/v1/namespaces/t")
    assert gone.body["kind"] == "Namespace"


async def test_get_resource_version_rules(api_server_factory: Any, client: Client) -> None:
    server: ApiServer = await api_server_factory(too_large_wait=0.01)
    server.create(CONFIGMAPS, cm("a"))
    for rv in ("", "0", str(server.revision - 1)):
        reply = await client.get(server, CM_PATH + "/a", **({"resourceVersion": rv} if rv else {}))
        assert reply.status == 200 and reply.body["kind"] == "ConfigMap"
    future = await client.get(server, CM_PATH + "/a", resourceVersion=server.revision + 5)
    assert future.status == 504
    assert future.body["details"]["retryAfterSeconds"] == 1


async def test_cluster_scoped_and_custom_resources(api_server: ApiServer, client: Client) -> None:
    created = await client.request(
        api_server, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}}
    )
    assert created.status == 201 and "namespace" not in created.body["metadata"]
    assert api_server.get(NAMESPACES, "team") is not None
    widgets = Resource("example.com", "v1", "widgets", "Widget")
    api_server.register(widgets)
    api_server.create(widgets, {"metadata": {"name": "w", "namespace": "d"}, "spec": {"a": 1}})
    listed = await client.get(api_server, "/apis/example.com/v1/namespaces/d/widgets")
    assert listed.body["kind"] == "WidgetList"
    assert listed.body["items"][0]["kind"] == "Widget"  # custom resources keep TypeMeta
    api_server.create(LEASES, {"metadata": {"name": "l", "namespace": "d"}})
    assert (await client.get(api_server, "/apis/coordination.k8s.io/v1/leases")).status == 200
    unknown = await client.get(api_server, "/apis/example.com/v1/gadgets")
    assert unknown.status == 404
    assert unknown.body["message"] == "the server could not find the requested resource"


async def test_bulk_load_and_discovery(api_server: ApiServer, client: Client) -> None:
    start = api_server.revision
    api_server.bulk_load(CONFIGMAPS, (cm(f"b-{i:04d}") for i in range(1000)))
    assert api_server.revision == start + 1000
    page = await client.get(api_server, CM_PATH, limit=10)
    assert page.body["metadata"]["remainingItemCount"] == 990
    with pytest.raises(AlreadyExists):
        api_server.bulk_load(CONFIGMAPS, [cm("b-0000")])
    resources = await client.get(api_server, "/api/v1")
    assert "configmaps" in [r["name"] for r in resources.body["resources"]]
    groups = await client.get(api_server, "/apis")
    assert groups.body["groups"][0]["name"] == "coordination.k8s.io"


async def test_compact_on_demand(api_server: ApiServer, client: Client) -> None:
    for i in range(3):
        api_server.create(CONFIGMAPS, cm(f"c-{i}"))
    api_server.compact(api_server.revision - 1)
    assert api_server.compacted_revision == api_server.revision - 1
    ok = await client.get(api_server, CM_PATH, resourceVersion=api_server.revision - 1, limit=1)
    assert ok.status == 200
    gone = await client.get(api_server, CM_PATH, resourceVersion=api_server.revision - 2, limit=1)
    assert gone.status == 410


async def test_no_op_writes_make_no_revision_and_no_event(
    api_server: ApiServer, client: Client
) -> None:
    # GuaranteedUpdate does not write an unchanged object: same RV, no watch event
    made = api_server.create(CONFIGMAPS, cm("same"))
    rv = made["metadata"]["resourceVersion"]
    path = CM_PATH + "/same"
    async with client.watch(api_server, CM_PATH, resourceVersion=rv) as watch:
        await api_server.wait_for_watchers(1)
        patched = api_server.patch(CONFIGMAPS, "same", {"data": {"k": "same"}}, "default")
        assert patched["metadata"]["resourceVersion"] == rv
        put = await client.request(api_server, "PUT", path, body=made)
        assert put.status == 200 and put.body["metadata"]["resourceVersion"] == rv
        merge = await client.request(
            api_server,
            "PATCH",
            path,
            body={"data": {"k": "same"}},
            content_type="application/merge-patch+json",
        )
        assert merge.status == 200 and merge.body == put.body
        assert api_server.revision == int(rv)
        changed = api_server.patch(CONFIGMAPS, "same", {"data": {"k": "new"}}, "default")
        event = (await watch.take(1))[0]
    assert event["type"] == "MODIFIED"
    assert event["object"]["metadata"]["resourceVersion"] == changed["metadata"]["resourceVersion"]
    assert int(changed["metadata"]["resourceVersion"]) == int(rv) + 1


async def test_bulk_load_restores_the_collector_state(api_server: ApiServer) -> None:
    import gc

    objs = [cm(f"b{i}") for i in range(3)]
    assert gc.isenabled()
    api_server.bulk_load(CONFIGMAPS, objs)
    assert gc.isenabled()
    gc.disable()
    try:
        api_server.bulk_load(CONFIGMAPS, [cm("off")])
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert [o["metadata"]["name"] for o in api_server.list_objects(CONFIGMAPS, "default")] == [
        "b0",
        "b1",
        "b2",
        "off",
    ]
