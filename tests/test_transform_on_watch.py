"""With ``DROP_MANAGED_FIELDS`` every object an informer caches and delivers lacks
``metadata.managedFields`` and is otherwise the server's object: listed, streamed or watched,
added, updated or deleted (the watch cuts each object in the decode of its line)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import cm, running_informer, wait_until

from informer import KubeObject
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.transforms import DROP_MANAGED_FIELDS


def managed_cm(name: str) -> dict[str, Any]:
    """A ConfigMap whose metadata carries managedFields, as every object written over HTTP does."""
    body = cm(name)
    body["metadata"]["managedFields"] = [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:k": {}}},
        }
    ]
    return body


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


@pytest.mark.parametrize("strategy", ["list", "stream"])
async def test_listed_and_watched_objects_lose_managed_fields_and_nothing_else(
    strategy: str,
) -> None:
    async with ApiServer() as server:
        server.create(CONFIGMAPS, managed_cm("listed"))
        listed = server.get(CONFIGMAPS, "listed", "default")
        assert listed is not None and listed["metadata"]["managedFields"]
        async with running_informer(
            server, list_strategy=strategy, transform=DROP_MANAGED_FIELDS
        ) as inf:
            delivered: list[tuple[str, KubeObject]] = []
            deleted: list[KubeObject] = []

            def on_delete(obj: Any) -> None:
                delivered.append(("deleted", obj))
                deleted.append(obj)

            inf.add_handler(
                on_add=lambda obj, initial: delivered.append(("added", obj)),
                on_update=lambda old, new: delivered.append(("updated", new)),
                on_delete=on_delete,
            )
            server.create(CONFIGMAPS, managed_cm("watched"))
            server.create(CONFIGMAPS, managed_cm("gone"))
            server.patch(CONFIGMAPS, "listed", {"data": {"k": "changed"}}, "default")
            # delivered before it goes (a handler's queue merges an add and a delete into nothing)
            await wait_until(lambda: any(o.name == "gone" for _, o in delivered))
            last = server.delete(CONFIGMAPS, "gone", "default")
            await inf.wait_for_resource_version(last["metadata"]["resourceVersion"], timeout=10)
            await wait_until(lambda: bool(deleted))

            assert all(o["metadata"]["managedFields"] for o in server.list_objects(CONFIGMAPS))
            cached = {o.key: o.to_dict() for o in inf.store.list()}
            assert cached == {
                f"default/{o['metadata']['name']}": without_managed_fields(o)
                for o in server.list_objects(CONFIGMAPS)
            }
            assert cached["default/listed"]["data"] == {"k": "changed"}
            assert {(kind, o.name) for kind, o in delivered} >= {
                ("added", "listed"),
                ("added", "watched"),
                ("updated", "listed"),
                ("deleted", "gone"),
            }
            for _, obj in delivered:
                assert "managedFields" not in obj["metadata"]
                assert b"managedFields" not in obj.raw
