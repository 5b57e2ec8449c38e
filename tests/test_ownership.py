"""Owner references and finalizers: controllerutil's rules, finalizer writes over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from informer import (
    CONFIGMAPS,
    AlreadyOwned,
    Client,
    Conflict,
    WriteRecord,
    has_finalizer,
    is_being_deleted,
    set_controller_reference,
)
from informer.controller import Request, controller_owner
from informer.objects import KubeObject
from informer.resource import Resource
from informer.testing import ApiServer

OWNER = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "namespace": "ns", "uid": "u-1"},
}


def test_set_controller_reference() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}}
    assert set_controller_reference(pod, OWNER) is pod
    ref = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "w",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert pod["metadata"]["ownerReferences"] == [ref]
    set_controller_reference(pod, OWNER)  # again: still one reference
    assert pod["metadata"]["ownerReferences"] == [ref]
    widgets = Resource("example.com", "v1", "widgets", "Widget")
    assert controller_owner(KubeObject.from_dict(pod), widgets) == Request("w", "ns")
    other = {**OWNER, "metadata": {"name": "x", "namespace": "ns", "uid": "u-2"}}
    with pytest.raises(AlreadyOwned):
        set_controller_reference(pod, other)
    with pytest.raises(ValueError, match="namespace"):
        set_controller_reference({"metadata": {"name": "p", "namespace": "other"}}, OWNER)
    with pytest.raises(ValueError, match="uid"):
        set_controller_reference(pod, {"kind": "Widget", "apiVersion": "v1", "metadata": {}})


@pytest.fixture
async def client(api_server: ApiServer) -> AsyncIterator[Client]:
    api = api_server.api_client()
    yield Client(api)
    await api.close()


@pytest.mark.asyncio
async def test_add_and_remove_finalizers(api_server: ApiServer, client: Client) -> None:
    records: list[WriteRecord] = []
    client.observe_writes(records.append)
    cm = await client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    with_one = await client.add_finalizer(CONFIGMAPS, cm, "example.com/cleanup")
    assert has_finalizer(with_one, "example.com/cleanup") and not is_being_deleted(with_one)
    assert await client.add_finalizer(CONFIGMAPS, with_one, "example.com/cleanup") is with_one
    with_two = await client.add_finalizer(CONFIGMAPS, with_one, "example.com/other")
    assert list(with_two["metadata"]["finalizers"]) == ["example.com/cleanup", "example.com/other"]
    with pytest.raises(Conflict):  # a stale object: the list must not be overwritten
        await client.remove_finalizer(CONFIGMAPS, with_one, "example.com/cleanup")
    with_other = await client.remove_finalizer(CONFIGMAPS, with_two, "example.com/cleanup")
    assert list(with_other["metadata"]["finalizers"]) == ["example.com/other"]
    none = await client.remove_finalizer(CONFIGMAPS, with_other, "example.com/other")
    assert "finalizers" not in none["metadata"]
    assert await client.remove_finalizer(CONFIGMAPS, none, "example.com/other") is none
    assert [r.verb for r in records] == ["create", "patch", "patch", "patch", "patch"]
