"""JSON patch (``application/json-patch+json``) as a real v1.36 apiserver applies it
(evanphx/json-patch v4; answers in write-semantics-v1.36.md): ``add`` needs its parent, a
``replace`` of a missing object member creates it, a ``remove`` of a missing path changes
nothing; an operation that does not apply fails the whole patch with a 422 that names nothing."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

JSON_PATCH = "application/json-patch+json"
REJECTED = "the server rejected our request due to an error in our request"


async def patch(api_server: ApiServer, client: Client, ops: list[Any]) -> Any:
    return await client.request(api_server, "PATCH", CM_PATH + "/p", ops, JSON_PATCH)


async def test_add_under_a_missing_parent_is_422_and_creates_nothing(
    api_server: ApiServer, client: Client
) -> None:
    created = await client.request(api_server, "POST", CM_PATH, cm("p"))
    assert "labels" not in created.body["metadata"]
    reply = await patch(
        api_server, client, [{"op": "add", "path": "/metadata/labels/app", "value": "x"}]
    )
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid" and reply.body["message"] == REJECTED
    assert not reply.body.get("details")
    stored = api_server.get(CONFIGMAPS, "p", "default")
    assert stored is not None and "labels" not in stored["metadata"]
    assert stored["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]


async def test_a_failed_operation_fails_the_whole_patch(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", CM_PATH, cm("p"))
    reply = await patch(
        api_server,
        client,
        [
            {"op": "add", "path": "/data/new", "value": "1"},
            {"op": "test", "path": "/data/k", "value": "not-this"},
        ],
    )
    assert reply.status == 422 and reply.body["message"] == REJECTED
    stored = api_server.get(CONFIGMAPS, "p", "default")
    assert stored is not None and stored["data"] == {"k": "p"}


async def test_remove_of_a_missing_path_is_accepted_and_changes_nothing(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", CM_PATH, cm("p"))
    reply = await patch(api_server, client, [{"op": "remove", "path": "/data/missing"}])
    assert reply.status == 200 and reply.body["data"] == {"k": "p"}
    reply = await patch(api_server, client, [{"op": "remove", "path": "/metadata/labels/app"}])
    assert reply.status == 200 and "labels" not in reply.body["metadata"]


async def test_replace_of_a_missing_member_creates_it(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", CM_PATH, cm("p"))
    reply = await patch(
        api_server, client, [{"op": "replace", "path": "/data/missing", "value": "v"}]
    )
    assert reply.status == 200 and reply.body["data"] == {"k": "p", "missing": "v"}


async def test_add_into_an_existing_parent_move_copy_and_array_indices(
    api_server: ApiServer, client: Client
) -> None:
    body = cm("p")
    body["metadata"]["finalizers"] = ["a.example/x", "a.example/z"]
    await client.request(api_server, "POST", CM_PATH, body)
    reply = await patch(
        api_server,
        client,
        [
            {"op": "add", "path": "/metadata/labels", "value": {}},
            {"op": "add", "path": "/metadata/labels/app", "value": "web"},
            {"op": "add", "path": "/metadata/finalizers/1", "value": "a.example/y"},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "a.example/last"},
            {"op": "copy", "from": "/data/k", "path": "/data/copied"},
            {"op": "move", "from": "/data/k", "path": "/data/moved"},
            {"op": "test", "path": "/data/moved", "value": "p"},
        ],
    )
    assert reply.status == 200, reply.body
    assert reply.body["metadata"]["labels"] == {"app": "web"}
    assert reply.body["metadata"]["finalizers"] == [
        "a.example/x",
        "a.example/y",
        "a.example/z",
        "a.example/last",
    ]
    assert reply.body["data"] == {"copied": "p", "moved": "p"}
    beyond = await patch(
        api_server, client, [{"op": "add", "path": "/metadata/finalizers/9", "value": "no"}]
    )
    assert beyond.status == 422 and beyond.body["message"] == REJECTED


async def test_a_body_that_is_not_a_list_of_operations_is_400(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", CM_PATH, cm("p"))
    reply = await patch(api_server, client, ["not an operation"])
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
