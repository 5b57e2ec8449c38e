"""Server-side apply and field managers: create or merge with managedFields per manager, 409 on
fields another manager owns unless force, removal of fields an applier stops applying, and
Update entries for the manager of every other write."""

from __future__ import annotations

import json
from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

APPLY = "application/apply-patch+yaml"


async def apply(
    api_server: ApiServer, client: Client, body: Any, manager: str, **params: Any
) -> Any:
    return await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/a",
        body,
        content_type=APPLY,
        fieldManager=manager,
        **params,
    )


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def config(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data}


async def test_apply_creates_then_merges_with_managed_fields(
    api_server: ApiServer, client: Client
) -> None:
    created = await apply(api_server, client, config(x="1"), "alice")
    assert created.status == 201
    assert created.body["data"] == {"x": "1"}
    assert managers(created.body) == {
        ("alice", "Apply"): {"f:data": {".": {}, "f:x": {}}},
    }
    entry = created.body["metadata"]["managedFields"][0]
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1" and entry["time"]
    merged = await apply(api_server, client, config(y="2"), "bob")
    assert merged.status == 200
    assert merged.body["data"] == {"x": "1", "y": "2"}
    assert set(managers(merged.body)) == {("alice", "Apply"), ("bob", "Apply")}


async def test_a_field_owned_by_another_manager_conflicts_unless_forced(
    api_server: ApiServer, client: Client
) -> None:
    await apply(api_server, client, config(x="1"), "alice")
    conflict = await apply(api_server, client, config(x="2"), "bob")
    assert conflict.status == 409
    assert conflict.body["reason"] == "Conflict"
    assert conflict.body["message"] == (
        'Apply failed with 1 conflict: conflict with "alice": .data.x'
    )
    assert conflict.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.x"}
    ]
    same_value = await apply(api_server, client, config(x="1"), "bob")
    assert same_value.status == 200  # shared ownership, no conflict
    forced = await apply(api_server, client, config(x="2"), "bob", force="true")
    assert forced.status == 200 and forced.body["data"] == {"x": "2"}
    alice = managers(forced.body)[("alice", "Apply")]  # keeps the data map, not data.x
    assert "f:x" not in alice.get("f:data", {})


async def test_fields_an_applier_stops_applying_are_removed(
    api_server: ApiServer, client: Client
) -> None:
    await apply(api_server, client, config(x="1", y="2"), "alice")
    shrunk = await apply(api_server, client, config(x="1"), "alice")
    assert shrunk.body["data"] == {"x": "1"}


async def test_apply_accepts_yaml(api_server: ApiServer, client: Client) -> None:
    body = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
        "data:\n  when: 2026-01-01T00:00:00Z\n"  # a timestamp stays a string
    )
    async with client.http.patch(
        api_server.url + CM_PATH + "/a",
        data=body,
        params={"fieldManager": "yaml"},
        headers={"Content-Type": APPLY},
    ) as response:
        assert response.status == 201
        assert json.loads(await response.text())["data"] == {"when": "2026-01-01T00:00:00Z"}


async def test_apply_needs_a_field_manager_and_force_needs_apply(
    api_server: ApiServer, client: Client
) -> None:
    missing = await client.request(
        api_server, "PATCH", CM_PATH + "/a", config(x="1"), content_type=APPLY
    )
    assert missing.status == 422
    assert "fieldManager: Required value: is required for apply patch" in missing.body["message"]
    api_server.create(CONFIGMAPS, cm("a"))
    forced = await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/a",
        {"data": {"k": "v"}},
        content_type="application/merge-patch+json",
        force="true",
    )
    assert forced.status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in forced.body["message"]


async def test_other_writes_record_update_entries(api_server: ApiServer, client: Client) -> None:
    created = await client.request(api_server, "POST", CM_PATH, cm("a"), fieldManager="maker")
    assert managers(created.body) == {("maker", "Update"): {"f:data": {".": {}, "f:k": {}}}}
    patched = await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/a",
        {"data": {"k": "new"}, "metadata": {"labels": {"l": "1"}}},
        content_type="application/merge-patch+json",
        fieldManager="patcher",
    )
    fields = managers(patched.body)
    assert fields[("maker", "Update")] == {"f:data": {}}  # data.k is now the patcher's
    assert fields[("patcher", "Update")] == {
        "f:data": {"f:k": {}},
        "f:metadata": {"f:labels": {".": {}, "f:l": {}}},
    }
    # without fieldManager, the manager is the User-Agent's product
    updated = await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/a",
        {"data": {"z": "1"}},
        content_type="application/merge-patch+json",
    )
    assert any(e["manager"] == "Python" for e in updated.body["metadata"]["managedFields"])
    assert api_server.get(CONFIGMAPS, "a", "default") == updated.body


async def test_apply_with_dry_run_stores_nothing(api_server: ApiServer, client: Client) -> None:
    created = await apply(api_server, client, config(x="1"), "alice", dryRun="All")
    assert created.status == 201 and created.body["data"] == {"x": "1"}
    assert api_server.get(CONFIGMAPS, "a", "default") is None


POD_PATH = "/api/v1/namespaces/default/pods/p"


def pod_config(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers)},
    }


async def test_keyed_lists_are_shared_item_by_item(api_server: ApiServer, client: Client) -> None:
    async def apply_pod(manager: str, *containers: dict[str, Any]) -> Any:
        reply = await client.request(
            api_server,
            "PATCH",
            POD_PATH,
            pod_config(*containers),
            content_type=APPLY,
            fieldManager=manager,
        )
        assert reply.status in (200, 201), reply.body
        return reply.body

    app = {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}
    await apply_pod("alice", app)
    both = await apply_pod("bob", {"name": "sidecar", "image": "side:1"})
    assert [c["name"] for c in both["spec"]["containers"]] == ["app", "sidecar"]
    alice = managers(both)[("alice", "Apply")]
    assert 'k:{"name":"app"}' in alice["f:spec"]["f:containers"]
    without_env = await apply_pod("alice", {"name": "app", "image": "app:2"})
    app_now, sidecar = without_env["spec"]["containers"]
    assert "env" not in app_now  # no longer applied: removed
    assert (app_now["name"], app_now["image"]) == ("app", "app:2")
    assert (sidecar["name"], sidecar["image"]) == ("sidecar", "side:1")  # bob's, untouched


async def test_a_too_long_field_manager_is_invalid(api_server: ApiServer, client: Client) -> None:
    reply = await client.request(api_server, "POST", CM_PATH, cm("a"), fieldManager="m" * 129)
    assert reply.status == 422
    assert "fieldManager: Too long: may not be more than 128 bytes" in reply.body["message"]


async def test_status_writes_are_recorded_with_their_subresource(
    api_server: ApiServer, client: Client
) -> None:
    created = await client.request(
        api_server,
        "POST",
        "/api/v1/namespaces/default/pods",
        pod_config({"name": "app", "image": "app:1"}),
        fieldManager="creator",
    )
    assert created.status == 201, created.body
    patched = await client.request(
        api_server,
        "PATCH",
        POD_PATH + "/status",
        {"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
        fieldManager="kubelet",
    )
    assert patched.status == 200, patched.body
    entries = {e["manager"]: e for e in patched.body["metadata"]["managedFields"]}
    assert entries["kubelet"]["subresource"] == "status"
    assert entries["kubelet"]["fieldsV1"] == {"f:status": {"f:phase": {}}}
    assert "subresource" not in entries["creator"]
