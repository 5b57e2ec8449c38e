"""The writes client over real HTTP: verbs, typed errors, preconditions, write observers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from informer import (
    CONFIGMAPS,
    LEASES,
    NAMESPACES,
    PODS,
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    Forbidden,
    Invalid,
    KubeObject,
    NotFound,
    PatchType,
    Resource,
    RetryPolicy,
    TooManyRequests,
    WriteRecord,
)
from informer.testing import ApiServer, Fault

pytestmark = pytest.mark.asyncio

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")


def cm(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": data}


@pytest.fixture
async def client(api_server: ApiServer) -> AsyncIterator[Client]:
    api = api_server.api_client()
    yield Client(api, field_manager="tests")
    await api.close()


async def test_create_get_replace_patch_delete(api_server: ApiServer, client: Client) -> None:
    created = await client.create(CONFIGMAPS, cm("a", k="1"))
    assert isinstance(created, KubeObject)
    assert created.kind == "ConfigMap" and created.api_version == "v1"  # filled in by the client
    assert (
        created.resource_version
        == api_server.get(CONFIGMAPS, "a", "default")["metadata"][  # type: ignore[index]
            "resourceVersion"
        ]
    )
    got = await client.get(CONFIGMAPS, "a", "default")
    assert got == created
    body = created.to_dict()
    body["data"] = {"k": "2"}
    replaced = await client.replace(CONFIGMAPS, body)
    assert replaced["data"] == {"k": "2"} and replaced.uid == created.uid
    merged = await client.patch(CONFIGMAPS, "a", {"data": {"m": "3"}}, namespace="default")
    assert merged["data"] == {"k": "2", "m": "3"}
    ops = [{"op": "remove", "path": "/data/k"}]
    patched = await client.patch(CONFIGMAPS, "a", ops, namespace="default", type=PatchType.JSON)
    assert patched["data"] == {"m": "3"}
    gone = await client.delete(CONFIGMAPS, "a", "default")
    assert gone.kind == "Status" and gone["details"]["uid"] == created.uid
    assert api_server.get(CONFIGMAPS, "a", "default") is None
    methods = [(r.method, r.verb) for r in api_server.requests if r.resource == "configmaps"]
    assert methods == [
        ("POST", "create"),
        ("GET", "get"),
        ("PUT", "update"),
        ("PATCH", "patch"),
        ("PATCH", "patch"),
        ("DELETE", "delete"),
    ]
    create_req = next(r for r in api_server.requests if r.verb == "create")
    assert create_req.query == {"fieldManager": "tests"}


async def test_custom_and_cluster_scoped_resources(api_server: ApiServer, client: Client) -> None:
    api_server.register(WIDGETS)
    api_server.create(NAMESPACES, {"metadata": {"name": "ns"}})  # over HTTP: 404 without it
    widget = await client.create(
        WIDGETS, {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"size": 1}}
    )
    assert widget.kind == "Widget" and widget.api_version == "example.com/v1"
    assert (await client.get(WIDGETS, "w", "ns"))["spec"] == {"size": 1}
    namespace = await client.create(NAMESPACES, {"metadata": {"name": "team"}})
    assert namespace.namespace == "" and namespace.name == "team"
    with pytest.raises(ValueError, match="namespaced"):
        await client.get(CONFIGMAPS, "x")
    with pytest.raises(ValueError, match="cluster-scoped"):
        await client.get(NAMESPACES, "team", "ns")


async def test_typed_errors(api_server: ApiServer, client: Client) -> None:
    await client.create(CONFIGMAPS, cm("a"))
    with pytest.raises(AlreadyExists) as exists:
        await client.create(CONFIGMAPS, cm("a"))
    assert exists.value.code == 409 and not isinstance(exists.value, Conflict)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "nope", "default")
    with pytest.raises(NotFound):
        await client.delete(CONFIGMAPS, "nope", "default")
    with pytest.raises(Invalid):
        await client.create(CONFIGMAPS, {"metadata": {"namespace": "default"}})
    api_server.faults.add(Fault(verb="get", status=429, retry_after=3))
    no_retries = Client(client.api_client, retry=RetryPolicy(max_retries=0))
    with pytest.raises(TooManyRequests) as limited:
        await no_retries.get(CONFIGMAPS, "a", "default")
    assert limited.value.retry_after == 3
    api_server.faults.add(Fault(verb="get", status=403, reason="Forbidden"))
    with pytest.raises(Forbidden) as forbidden:
        await client.get(CONFIGMAPS, "a", "default")
    assert forbidden.value.code == 403


async def test_replace_is_conditional_by_default(api_server: ApiServer, client: Client) -> None:
    first = await client.create(CONFIGMAPS, cm("a", k="1"))
    await client.patch(CONFIGMAPS, "a", {"data": {"k": "other writer"}}, namespace="default")
    stale = first.to_dict()
    stale["data"] = {"k": "mine"}
    with pytest.raises(Conflict):
        await client.replace(CONFIGMAPS, stale)
    no_rv = cm("a", k="mine")
    with pytest.raises(ValueError, match="resourceVersion"):
        await client.replace(CONFIGMAPS, no_rv)
    forced = await client.replace(CONFIGMAPS, stale, unconditional=True)
    assert forced["data"] == {"k": "mine"}
    put = [r for r in api_server.requests if r.verb == "update"]
    assert len(put) == 2  # the ValueError sent nothing


async def test_conditional_patches(api_server: ApiServer, client: Client) -> None:
    first = await client.create(CONFIGMAPS, cm("a", k="1"))
    moved = await client.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace="default")
    with pytest.raises(Conflict):
        await client.patch(
            CONFIGMAPS,
            "a",
            {"data": {"k": "3"}},
            namespace="default",
            resource_version=first.resource_version,
        )
    ok = await client.patch(
        CONFIGMAPS,
        "a",
        {"data": {"k": "3"}},
        namespace="default",
        resource_version=moved.resource_version,
    )
    assert ok["data"] == {"k": "3"}
    with pytest.raises(ApiError):  # the leading test operation fails
        await client.patch(
            CONFIGMAPS,
            "a",
            [{"op": "replace", "path": "/data/k", "value": "4"}],
            namespace="default",
            type=PatchType.JSON,
            resource_version=first.resource_version,
        )
    assert api_server.get(CONFIGMAPS, "a", "default")["data"] == {"k": "3"}  # type: ignore[index]
    with pytest.raises(TypeError):
        await client.patch(CONFIGMAPS, "a", {"op": "x"}, namespace="default", type=PatchType.JSON)


async def test_delete_preconditions_and_options(api_server: ApiServer, client: Client) -> None:
    created = await client.create(CONFIGMAPS, cm("a"))
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAPS, "a", "default", uid="another-uid")
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAPS, "a", "default", resource_version="1")
    await client.delete(
        CONFIGMAPS,
        "a",
        "default",
        uid=created.uid,
        resource_version=created.resource_version,
        propagation_policy="Foreground",
        grace_period_seconds=0,
    )
    assert api_server.get(CONFIGMAPS, "a", "default") is None


async def test_observers_see_every_successful_write(api_server: ApiServer, client: Client) -> None:
    seen: list[WriteRecord] = []
    unsubscribe = client.observe_writes(seen.append)

    def broken(record: WriteRecord) -> None:
        raise RuntimeError("observer bug")

    client.observe_writes(broken)
    created = await client.create(CONFIGMAPS, cm("a"))
    patched = await client.patch(CONFIGMAPS, "a", {"data": {"k": "v"}}, namespace="default")
    replaced = await client.replace(CONFIGMAPS, patched.to_dict())  # a no-op: same RV
    with pytest.raises(AlreadyExists):
        await client.create(CONFIGMAPS, cm("a"))
    await client.create(CONFIGMAPS, cm("dry"), dry_run=True)
    await client.delete(CONFIGMAPS, "a", "default")
    pod = await client.create(
        PODS,
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    gone_pod = await client.delete(PODS, "p", "default")
    assert [(r.verb, r.name, r.namespace, r.deleted) for r in seen] == [
        ("create", "a", "default", False),
        ("patch", "a", "default", False),
        ("replace", "a", "default", False),
        ("delete", "a", "default", True),
        ("create", "p", "default", False),
        ("delete", "p", "default", True),
    ]
    assert [r.resource_version for r in seen[:3]] == [
        created.resource_version,
        patched.resource_version,
        replaced.resource_version,
    ]
    assert seen[3].resource_version is None and seen[3].uid == created.uid  # a Status
    assert seen[5].resource_version == gone_pod.resource_version and seen[5].uid == pod.uid
    assert all(r.resource == (PODS if r.name == "p" else CONFIGMAPS) for r in seen)
    assert client.observer_errors == 6
    dry = next(r for r in api_server.requests if r.query.get("dryRun"))
    assert dry.query["dryRun"] == "All"
    unsubscribe()
    await client.create(CONFIGMAPS, cm("b"))
    assert len(seen) == 6


async def test_marked_for_deletion_is_not_deleted(api_server: ApiServer, client: Client) -> None:
    """A delete answered by an object still held by finalizers or a grace period is not gone."""
    records: list[WriteRecord] = []
    client.observe_writes(records.append)
    api_server.faults.add(
        Fault(
            verb="delete",
            status=200,
            status_body={
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {
                    "name": "p",
                    "namespace": "default",
                    "uid": "u1",
                    "resourceVersion": "7",
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                    "deletionGracePeriodSeconds": 30,
                },
            },
        )
    )
    answer = await client.delete(PODS, "p", "default")
    assert answer.kind == "Pod"
    assert records == [WriteRecord(PODS, "delete", "p", "default", "u1", "7", False)]


async def test_leases(api_server: ApiServer, client: Client) -> None:
    lease = await client.create(
        LEASES,
        {"metadata": {"name": "l", "namespace": "kube-system"}, "spec": {"holderIdentity": "me"}},
    )
    assert lease.kind == "Lease" and lease["spec"]["holderIdentity"] == "me"


async def test_server_side_apply(api_server: ApiServer, client: Client) -> None:
    applied = await client.apply(CONFIGMAPS, cm("a", k="1"), field_manager="mirror")
    assert applied["data"] == {"k": "1"}  # created by the apply
    request = next(r for r in api_server.requests if r.verb == "patch")
    assert request.query == {"fieldManager": "mirror"}
    managers = {f["manager"] for f in applied["metadata"]["managedFields"]}
    assert managers == {"mirror"}
    with pytest.raises(Conflict):  # data.k is owned by "mirror"
        await client.apply(CONFIGMAPS, cm("a", k="2"), field_manager="other")
    forced = await client.apply(CONFIGMAPS, cm("a", k="2"), field_manager="other", force=True)
    assert forced["data"] == {"k": "2"}
    assert [r.query.get("force") for r in api_server.requests if r.verb == "patch"][-1] == "true"


async def test_strategic_merge_patch(api_server: ApiServer, client: Client) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]},
    }
    await client.create(PODS, pod)
    patch = {"spec": {"containers": [{"name": "b", "image": "y:2"}]}}
    patched = await client.patch(PODS, "p", patch, namespace="default", type=PatchType.STRATEGIC)
    # merged by the list's merge key (name), where a merge patch would replace the list
    images = [(c["name"], c["image"]) for c in patched["spec"]["containers"]]
    assert images == [("a", "x:1"), ("b", "y:2")]


async def test_status_subresource(api_server: ApiServer, client: Client) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "a", "image": "x:1"}]},
    }
    await client.create(PODS, pod)
    records: list[WriteRecord] = []
    client.observe_writes(records.append)
    updated = await client.patch_status(PODS, "p", {"phase": "Running"}, namespace="default")
    assert updated["status"]["phase"] == "Running"
    assert [r.path for r in api_server.requests if r.verb == "patch"] == [
        "/api/v1/namespaces/default/pods/p/status"
    ]
    assert records[0].resource_version == updated.resource_version
    status = await client.get(PODS, "p", "default", subresource="status")
    assert status["status"]["phase"] == "Running"


async def test_delete_held_by_a_finalizer(api_server: ApiServer, client: Client) -> None:
    records: list[WriteRecord] = []
    client.observe_writes(records.append)
    created = await client.create(
        CONFIGMAPS,
        {"metadata": {"name": "a", "namespace": "default", "finalizers": ["example.com/x"]}},
    )
    marked = await client.delete(CONFIGMAPS, "a", "default")
    assert marked.kind == "ConfigMap" and marked["metadata"]["deletionTimestamp"]
    assert records[-1].deleted is False  # still there, being deleted
    gone = await client.remove_finalizer(CONFIGMAPS, marked, "example.com/x")
    assert gone.uid == created.uid
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "a", "default")


async def test_dry_run_writes_nothing(api_server: ApiServer, client: Client) -> None:
    await client.create(CONFIGMAPS, cm("a"), dry_run=True)
    assert api_server.get(CONFIGMAPS, "a", "default") is None
    await client.create(CONFIGMAPS, cm("a"))
    await client.patch(CONFIGMAPS, "a", {"data": {"k": "v"}}, namespace="default", dry_run=True)
    await client.delete(CONFIGMAPS, "a", "default", dry_run=True)
    assert api_server.get(CONFIGMAPS, "a", "default") == (
        await client.get(CONFIGMAPS, "a", "default")
    )
