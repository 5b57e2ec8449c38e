"""The garbage collector and deletion propagation over HTTP, as a cluster's GC and registry do
them: a dependent with another live owner survives any deletion of one owner and only loses its
reference to it; without an explicit policy a DELETE follows the object's own ``orphan`` /
``foregroundDeletion`` finalizer; an owner in foreground deletion waits only for dependents that
block it."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio


def ref(owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        **extra,
    }


def owned(name: str, *refs: dict[str, Any], finalizers: list[str] | None = None) -> Any:
    body = cm(name)
    body["metadata"]["ownerReferences"] = list(refs)
    if finalizers:
        body["metadata"]["finalizers"] = finalizers
    return body


async def create(api_server: ApiServer, client: Client, body: dict[str, Any]) -> Any:
    reply = await client.request(api_server, "POST", CM_PATH, body)
    assert reply.status == 201, reply.body
    return reply.body


def owner_uids(api_server: ApiServer, name: str) -> list[str] | None:
    found = api_server.get(CONFIGMAPS, name, "default")
    if found is None:
        return None
    return [r["uid"] for r in found["metadata"].get("ownerReferences", [])]


async def test_foreground_deletion_keeps_a_dependent_with_another_live_owner(
    api_server: ApiServer, client: Client
) -> None:
    first = await create(api_server, client, cm("first"))
    second = await create(api_server, client, cm("second"))
    await create(
        api_server,
        client,
        owned("shared", ref(first, blockOwnerDeletion=True), ref(second)),
    )
    await create(api_server, client, owned("only", ref(first, blockOwnerDeletion=True)))
    reply = await client.request(
        api_server, "DELETE", CM_PATH + "/first", {"propagationPolicy": "Foreground"}
    )
    assert reply.status == 200
    assert owner_uids(api_server, "shared") == [second["metadata"]["uid"]]
    assert owner_uids(api_server, "only") is None
    assert api_server.get(CONFIGMAPS, "first", "default") is None  # nothing blocks it any more


async def test_background_deletion_removes_the_dangling_reference_of_survivors(
    api_server: ApiServer, client: Client
) -> None:
    first = await create(api_server, client, cm("first"))
    second = await create(api_server, client, cm("second"))
    await create(api_server, client, owned("shared", ref(first), ref(second)))
    reply = await client.request(
        api_server, "DELETE", CM_PATH + "/first", {"propagationPolicy": "Background"}
    )
    assert reply.status == 200
    assert owner_uids(api_server, "shared") == [second["metadata"]["uid"]]


async def test_a_created_dependent_loses_references_to_owners_already_gone(
    api_server: ApiServer, client: Client
) -> None:
    gone = await create(api_server, client, cm("gone"))
    live = await create(api_server, client, cm("live"))
    await client.request(api_server, "DELETE", CM_PATH + "/gone")
    await create(api_server, client, owned("late", ref(gone), ref(live)))
    assert owner_uids(api_server, "late") == [live["metadata"]["uid"]]


async def test_a_plain_delete_honours_the_objects_own_orphan_finalizer(
    api_server: ApiServer, client: Client
) -> None:
    owner = await create(api_server, client, owned("owner", finalizers=["orphan"]))
    await create(api_server, client, owned("child", ref(owner)))
    reply = await client.request(api_server, "DELETE", CM_PATH + "/owner")
    assert reply.status == 200
    assert api_server.get(CONFIGMAPS, "owner", "default") is None
    assert owner_uids(api_server, "child") == []  # orphaned, not deleted


async def test_a_second_plain_delete_keeps_foreground_deletion(
    api_server: ApiServer, client: Client
) -> None:
    owner = await create(api_server, client, cm("owner"))
    await create(
        api_server,
        client,
        owned("held", ref(owner, blockOwnerDeletion=True), finalizers=["example.com/hold"]),
    )
    first = await client.request(
        api_server, "DELETE", CM_PATH + "/owner", {"propagationPolicy": "Foreground"}
    )
    assert first.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    again = await client.request(api_server, "DELETE", CM_PATH + "/owner")
    assert again.status == 200
    assert again.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    still = api_server.get(CONFIGMAPS, "owner", "default")
    assert still is not None and still["metadata"]["finalizers"] == ["foregroundDeletion"]
    api_server.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "default")
    assert api_server.get(CONFIGMAPS, "held", "default") is None
    assert api_server.get(CONFIGMAPS, "owner", "default") is None


async def test_an_explicit_policy_on_a_second_delete_replaces_the_finalizer(
    api_server: ApiServer, client: Client
) -> None:
    owner = await create(api_server, client, cm("owner"))
    await create(
        api_server,
        client,
        owned("held", ref(owner, blockOwnerDeletion=True), finalizers=["example.com/hold"]),
    )
    await client.request(
        api_server, "DELETE", CM_PATH + "/owner", {"propagationPolicy": "Foreground"}
    )
    orphaning = await client.request(
        api_server, "DELETE", CM_PATH + "/owner", {"propagationPolicy": "Orphan"}
    )
    assert orphaning.status == 200
    assert api_server.get(CONFIGMAPS, "owner", "default") is None
    held = api_server.get(CONFIGMAPS, "held", "default")
    assert held is not None and "ownerReferences" not in held["metadata"]


async def test_foreground_deletion_waits_only_for_blocking_dependents(
    api_server: ApiServer, client: Client
) -> None:
    owner = await create(api_server, client, cm("owner"))
    await create(api_server, client, owned("loose", ref(owner), finalizers=["example.com/hold"]))
    reply = await client.request(
        api_server, "DELETE", CM_PATH + "/owner", {"propagationPolicy": "Foreground"}
    )
    assert reply.status == 200
    assert api_server.get(CONFIGMAPS, "owner", "default") is None
    loose = api_server.get(CONFIGMAPS, "loose", "default")
    assert loose is not None and loose["metadata"]["deletionTimestamp"]


async def test_an_object_with_a_generation_gets_a_new_one_when_its_deletion_starts(
    api_server: ApiServer, client: Client
) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "finalizers": ["example.com/hold"]},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }
    created = await client.request(api_server, "POST", path, body)
    assert created.body["metadata"]["generation"] == 1
    deleting = await client.request(api_server, "DELETE", path + "/d")
    assert deleting.body["metadata"]["generation"] == 2
