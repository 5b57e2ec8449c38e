"""Status conditions kept as apimachinery keeps them, and a controller that skips status-only
updates (``generation_changed``), through real HTTP against the test server's Deployments and
PodDisruptionBudgets (``metadata.generation`` bumped on spec changes, status written through
``/status``; a PodDisruptionBudget's conditions are ``metav1.Condition``s, with their
``observedGeneration``, which a Deployment's conditions do not have)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from informer import (
    DEPLOYMENTS,
    Client,
    Controller,
    Informer,
    Request,
    conditions_of,
    find_condition,
    generation_changed,
    is_condition_false,
    is_condition_true,
    remove_condition,
    set_condition,
)
from informer.resource import Resource
from informer.testing import ApiServer
from informer.transport import Transport
from tests.conftest import FAST, wait_until

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 12, 5, 0, tzinfo=UTC)
T2 = datetime(2026, 1, 1, 12, 9, 0, tzinfo=UTC)
PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")


def budget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}},
    }


def deployment(name: str, image: str = "nginx:1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


@asynccontextmanager
async def informing(
    server: ApiServer, resource: Resource = DEPLOYMENTS
) -> AsyncIterator[tuple[Client, Informer]]:
    api = server.api_client()
    try:
        async with Informer(Transport(api), resource, options=FAST) as inf:
            await inf.wait_for_sync(timeout=10)
            yield Client(api), inf
    finally:
        await api.close()


async def test_a_condition_keeps_its_transition_time_until_its_status_changes(
    api_server: ApiServer,
) -> None:
    async with informing(api_server, PDBS) as (client, inf):
        created = await client.create(PDBS, budget("web"))
        generation = created["metadata"]["generation"]

        async def write(conditions: list[dict[str, Any]]) -> Any:
            written = await client.patch_status(
                PDBS, "web", {"conditions": conditions}, namespace="default"
            )
            return await inf.wait_for_write(written, timeout=10)

        conditions = conditions_of(created)
        assert conditions == []
        assert set_condition(conditions, "Ready", False, "Starting", "0/1", now=T0)
        obj = await write(conditions)

        conditions = conditions_of(obj)  # from the cache, as a reconcile reads it
        assert not set_condition(conditions, "Ready", False, "Starting", "0/1", now=T1)
        assert set_condition(
            conditions, "Ready", "False", "Pulling", "image", observed_generation=generation, now=T1
        )
        obj = await write(conditions)
        ready = find_condition(conditions_of(obj), "Ready")
        assert ready == {
            "type": "Ready",
            "status": "False",
            "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T12:00:00Z",  # the status did not change
            "reason": "Pulling",
            "message": "image",
        }
        assert is_condition_false(conditions_of(obj), "Ready")

        conditions = conditions_of(obj)
        assert set_condition(conditions, "Ready", True, "Available", now=T2)
        assert set_condition(conditions, "Progressing", True, "NewReplicaSetAvailable", now=T2)
        obj = await write(conditions)
        ready = find_condition(conditions_of(obj), "Ready")
        assert ready is not None and ready["lastTransitionTime"] == "2026-01-01T12:09:00Z"
        assert ready["observedGeneration"] == generation  # kept: not given this time
        assert is_condition_true(conditions_of(obj), "Ready")

        conditions = conditions_of(obj)
        assert remove_condition(conditions, "Progressing")
        assert not remove_condition(conditions, "Progressing")
        obj = await write(conditions)
        assert [c["type"] for c in conditions_of(obj)] == ["Ready"]
        assert find_condition(conditions_of(obj), "Progressing") is None


def test_invalid_conditions_are_refused_before_the_server_does() -> None:
    conditions: list[dict[str, Any]] = []
    for status, reason in (("Yes", "Ok"), (True, "not camel"), (True, ""), ("True", "9Lives")):
        with pytest.raises(ValueError):
            set_condition(conditions, "Ready", status, reason)
    with pytest.raises(ValueError):
        set_condition(conditions, "", True, "Ok")
    assert conditions == []


async def test_generation_changed_skips_status_only_updates(api_server: ApiServer) -> None:
    async with informing(api_server) as (client, inf):
        reconciled: list[tuple[str, int]] = []

        async def reconcile(request: Request) -> None:
            obj = inf.store.get(request.name, request.namespace)
            if obj is None:
                reconciled.append((request.name, 0))  # deleted
                return
            reconciled.append((request.name, obj["metadata"]["generation"]))
            conditions = conditions_of(obj)
            if set_condition(conditions, "Ready", True, "Reconciled"):  # writes its own status
                await client.patch_status(
                    DEPLOYMENTS, request.name, {"conditions": conditions}, namespace="default"
                )

        ctl = Controller(reconcile, for_=inf, for_filter=generation_changed, client=client)
        async with ctl:
            await client.create(DEPLOYMENTS, deployment("web"))
            await wait_until(lambda: ctl.statistics().succeeded == 1)
            for i in range(3):  # status and label changes: generation unchanged
                written = await client.patch_status(
                    DEPLOYMENTS, "web", {"observedGeneration": i}, namespace="default"
                )
                await inf.wait_for_write(written, timeout=10)
            written = await client.patch(
                DEPLOYMENTS, "web", {"metadata": {"labels": {"x": "y"}}}, namespace="default"
            )
            await inf.wait_for_write(written, timeout=10)
            spec = deployment("web", image="nginx:2")["spec"]
            written = await client.patch(DEPLOYMENTS, "web", {"spec": spec}, namespace="default")
            await wait_until(lambda: ctl.statistics().succeeded == 2)
            await client.delete(DEPLOYMENTS, "web", namespace="default")
            await wait_until(lambda: ctl.statistics().reconciles == 3)
        assert reconciled == [("web", 1), ("web", 2), ("web", 0)]
        # the create, the spec change (its old and its new object: the same key), the delete
        assert ctl.statistics().queue.adds == 4


def test_generation_changed_lets_updates_of_objects_without_a_generation_through() -> None:
    from informer.objects import KubeObject
    from informer.store import Delta

    def obj(**metadata: Any) -> KubeObject:
        return KubeObject.from_dict({"metadata": {"name": "a", "namespace": "n", **metadata}})

    assert generation_changed(Delta("updated", obj(), obj(), False))  # a ConfigMap
    assert not generation_changed(Delta("updated", obj(generation=3), obj(generation=3), False))
    assert generation_changed(Delta("updated", obj(generation=4), obj(generation=3), False))
    assert generation_changed(Delta("added", obj(generation=3), None, False))
    assert generation_changed(Delta("deleted", obj(generation=3), None, False))
