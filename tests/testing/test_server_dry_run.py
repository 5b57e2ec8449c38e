"""dryRun=All on every write: the answer is what would be stored, nothing is (no revision, no
watch event); any other dryRun value is refused as the apiserver refuses it."""

from __future__ import annotations

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio


async def test_dry_run_create_answers_the_object_and_stores_nothing(
    api_server: ApiServer, client: Client
) -> None:
    before = api_server.revision
    reply = await client.request(api_server, "POST", CM_PATH, cm("a"), dryRun="All")
    assert reply.status == 201
    assert reply.body["metadata"]["uid"] and reply.body["data"] == {"k": "a"}
    assert "resourceVersion" not in reply.body["metadata"]
    assert api_server.get(CONFIGMAPS, "a", "default") is None
    assert api_server.revision == before


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
async def test_dry_run_update_patch_delete_change_nothing(
    api_server: ApiServer, client: Client, method: str
) -> None:
    stored = api_server.create(CONFIGMAPS, cm("a"))
    before = api_server.revision
    async with client.watch(api_server, CM_PATH, resourceVersion=str(before)) as watch:
        await api_server.wait_for_watchers(1)
        body = {**stored, "data": {"k": "changed"}} if method == "PUT" else None
        if method == "PATCH":
            body = {"data": {"k": "changed"}}
        reply = await client.request(
            api_server,
            method,
            CM_PATH + "/a",
            body,
            content_type="application/merge-patch+json"
            if method == "PATCH"
            else "application/json",
            dryRun="All",
        )
        assert reply.status == 200
        if method != "DELETE":
            assert reply.body["data"] == {"k": "changed"}
            assert (
                reply.body["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
            )
        # a real write after the dry run is the first event the watch sees
        api_server.patch(CONFIGMAPS, "a", {"data": {"k": "real"}}, "default")
        event = await watch.next()
    assert event is not None and event["object"]["data"] == {"k": "real"}
    assert api_server.revision == before + 1


async def test_dry_run_in_delete_options_body(api_server: ApiServer, client: Client) -> None:
    api_server.create(CONFIGMAPS, cm("a"))
    reply = await client.request(api_server, "DELETE", CM_PATH + "/a", {"dryRun": ["All"]})
    assert reply.status == 200
    assert api_server.get(CONFIGMAPS, "a", "default") is not None


async def test_unknown_dry_run_value_is_invalid(api_server: ApiServer, client: Client) -> None:
    reply = await client.request(api_server, "POST", CM_PATH, cm("a"), dryRun="Bogus")
    assert reply.status == 422
    assert reply.body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: '
        'supported values: "All"'
    )
    assert api_server.get(CONFIGMAPS, "a", "default") is None
