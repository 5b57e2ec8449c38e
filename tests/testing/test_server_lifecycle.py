"""Object lifecycle through HTTP: finalizers, graceful deletion, propagation policies, garbage
collection by owner uid, and namespaces (the initial ones, 404 into a missing one, Terminating)."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS, NAMESPACES, PODS
from informer.testing import ApiServer, NotFound

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

NS_PATH = "/api/v1/namespaces"
RS_PATH = "/apis/apps/v1/namespaces/default/replicasets"


def with_finalizer(name: str, *finalizers: str) -> dict[str, Any]:
    body = cm(name)
    body["metadata"]["finalizers"] = list(finalizers) or ["example.com/hold"]
    return body


def owned_by(body: dict[str, Any], owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            **extra,
        }
    ]
    return body


def replicaset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


async def test_initial_namespaces_exist_at_start(api_server: ApiServer, client: Client) -> None:
    listed = await client.get(api_server, NS_PATH)
    names = [item["metadata"]["name"] for item in listed.body["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    default = listed.body["items"][0]
    assert default["spec"] == {"finalizers": ["kubernetes"]}
    assert default["status"] == {"phase": "Active"}
    assert default["metadata"]["labels"] == {"kubernetes.io/metadata.name": "default"}
    assert api_server.revision == 1  # they are the state of a fresh server, not writes


async def test_create_into_a_missing_namespace_is_404(
    api_server: ApiServer, client: Client
) -> None:
    reply = await client.request(
        api_server, "POST", "/api/v1/namespaces/nowhere/configmaps", cm("a", "nowhere")
    )
    assert reply.status == 404
    assert reply.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        '"namespaces \\"nowhere\\" not found","reason":"NotFound","details":{"name":"nowhere",'
        '"kind":"namespaces"},"code":404}\n'  # every JSON answer ends with a newline
    )
    # the Python API is test setup: it creates the namespace it needs
    api_server.create(CONFIGMAPS, cm("a", "elsewhere"))
    assert api_server.get(NAMESPACES, "elsewhere") is not None


async def test_delete_with_a_finalizer_waits_for_its_removal(
    api_server: ApiServer, client: Client
) -> None:
    made = (await client.request(api_server, "POST", CM_PATH, with_finalizer("f"))).body
    async with client.watch(
        api_server, CM_PATH, resourceVersion=made["metadata"]["resourceVersion"]
    ) as watch:
        deleted = await client.request(api_server, "DELETE", CM_PATH + "/f")
        assert deleted.status == 200 and deleted.body["kind"] == "ConfigMap"
        meta = deleted.body["metadata"]
        assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
        assert meta["finalizers"] == ["example.com/hold"]
        event = await watch.next()
        assert event is not None and event["type"] == "MODIFIED"
        assert event["object"]["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
        again = await client.request(api_server, "DELETE", CM_PATH + "/f")
        assert again.status == 200  # still there, nothing changes
        assert again.body["metadata"]["resourceVersion"] == meta["resourceVersion"]
        adding = dict(deleted.body)
        adding["metadata"] = {**meta, "finalizers": ["example.com/hold", "example.com/more"]}
        refused = await client.request(api_server, "PUT", CM_PATH + "/f", adding)
        assert refused.status == 422
        assert (
            "no new finalizers can be added if the object is being deleted"
            in (refused.body["message"])
        )
        removed = await client.request(
            api_server,
            "PATCH",
            CM_PATH + "/f",
            {"metadata": {"finalizers": None}},
            "application/merge-patch+json",
        )
        assert removed.status == 200
        event = await watch.next()
        assert event is not None and event["type"] == "DELETED"
    assert (await client.get(api_server, CM_PATH + "/f")).status == 404


async def test_graceful_pod_deletion(api_server: ApiServer, client: Client) -> None:
    path = "/api/v1/namespaces/default/pods"
    pod = {
        "metadata": {"name": "bound"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    await client.request(api_server, "POST", path, pod)
    first = await client.request(api_server, "DELETE", path + "/bound")
    assert first.status == 200
    assert first.body["metadata"]["deletionGracePeriodSeconds"] == 30  # the pod's default
    # no kubelet here: a bound pod stays Terminating until deleted with a zero grace period
    assert api_server.get(PODS, "bound", "default") is not None
    final = await client.request(api_server, "DELETE", path + "/bound", gracePeriodSeconds=0)
    assert final.status == 200
    assert api_server.get(PODS, "bound", "default") is None
    # an unscheduled pod has nothing to stop: it goes at once
    await client.request(api_server, "POST", path, {**pod, "metadata": {"name": "unbound"}})
    api_server.patch(PODS, "unbound", {"spec": {"nodeName": None}}, "default")
    await client.request(api_server, "DELETE", path + "/unbound")
    assert api_server.get(PODS, "unbound", "default") is None


async def test_background_deletion_collects_dependents(
    api_server: ApiServer, client: Client
) -> None:
    owner = (await client.request(api_server, "POST", RS_PATH, replicaset("rs"))).body
    await client.request(api_server, "POST", CM_PATH, owned_by(cm("child"), owner))
    other = (await client.request(api_server, "POST", CM_PATH, cm("other-owner"))).body
    shared = owned_by(cm("shared"), owner)
    shared["metadata"]["ownerReferences"] += owned_by(cm("x"), other)["metadata"]["ownerReferences"]
    await client.request(api_server, "POST", CM_PATH, shared)
    gone = await client.request(api_server, "DELETE", RS_PATH + "/rs")
    assert gone.status == 200 and gone.body["kind"] == "Status"
    assert api_server.get(CONFIGMAPS, "child", "default") is None
    assert api_server.get(CONFIGMAPS, "shared", "default") is not None  # another owner remains


async def test_dependents_of_an_owner_already_gone_are_collected(
    api_server: ApiServer, client: Client
) -> None:
    owner = (await client.request(api_server, "POST", CM_PATH, cm("owner"))).body
    await client.request(api_server, "DELETE", CM_PATH + "/owner")
    late = await client.request(api_server, "POST", CM_PATH, owned_by(cm("late"), owner))
    assert late.status == 201
    assert api_server.get(CONFIGMAPS, "late", "default") is None


async def test_foreground_deletion_waits_for_dependents(
    api_server: ApiServer, client: Client
) -> None:
    owner = (await client.request(api_server, "POST", RS_PATH, replicaset("fg"))).body
    await client.request(
        api_server,
        "POST",
        CM_PATH,
        owned_by(with_finalizer("held"), owner, blockOwnerDeletion=True),
    )
    reply = await client.request(
        api_server, "DELETE", RS_PATH + "/fg", {"propagationPolicy": "Foreground"}
    )
    assert reply.status == 200
    assert reply.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    held = api_server.get(CONFIGMAPS, "held", "default")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    assert (await client.get(api_server, RS_PATH + "/fg")).status == 200  # waits for "held"
    api_server.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "default")
    assert (await client.get(api_server, RS_PATH + "/fg")).status == 404


async def test_orphan_deletion_keeps_dependents_without_the_reference(
    api_server: ApiServer, client: Client
) -> None:
    owner = (await client.request(api_server, "POST", RS_PATH, replicaset("or"))).body
    await client.request(api_server, "POST", CM_PATH, owned_by(cm("kept"), owner))
    reply = await client.request(api_server, "DELETE", RS_PATH + "/or", propagationPolicy="Orphan")
    assert reply.status == 200 and reply.body["metadata"]["finalizers"] == ["orphan"]
    assert (await client.get(api_server, RS_PATH + "/or")).status == 404
    kept = api_server.get(CONFIGMAPS, "kept", "default")
    assert kept is not None and "ownerReferences" not in kept["metadata"]


async def test_namespace_deletion_terminates_then_removes(
    api_server: ApiServer, client: Client
) -> None:
    await client.request(api_server, "POST", NS_PATH, {"metadata": {"name": "team"}})
    team = "/api/v1/namespaces/team/configmaps"
    await client.request(api_server, "POST", team, cm("plain", "team"))
    await client.request(
        api_server,
        "POST",
        team,
        {
            **with_finalizer("held"),
            "metadata": {"name": "held", "namespace": "team", "finalizers": ["example.com/hold"]},
        },
    )
    reply = await client.request(api_server, "DELETE", NS_PATH + "/team")
    assert reply.status == 200
    assert reply.body["status"]["phase"] == "Terminating"
    assert reply.body["metadata"]["deletionTimestamp"]
    assert api_server.get(CONFIGMAPS, "plain", "team") is None
    terminating = await client.get(api_server, NS_PATH + "/team")
    assert terminating.body["spec"] == {"finalizers": ["kubernetes"]}  # waits for "held"
    refused = await client.request(api_server, "POST", team, cm("new", "team"))
    assert refused.status == 403
    assert refused.body["message"] == (
        'configmaps "new" is forbidden: unable to create new content in namespace team '
        "because it is being terminated"
    )
    assert refused.body["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace team is being terminated",
            "field": "metadata.namespace",
        }
    ]
    api_server.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "team")
    assert (await client.get(api_server, NS_PATH + "/team")).status == 404
    with pytest.raises(NotFound):
        api_server.delete(NAMESPACES, "team")


async def test_system_namespaces_cannot_be_deleted(api_server: ApiServer, client: Client) -> None:
    reply = await client.request(api_server, "DELETE", NS_PATH + "/default")
    assert reply.status == 403
    assert reply.body["message"] == (
        'namespaces "default" is forbidden: this namespace may not be deleted'
    )


async def test_jobs_orphan_their_pods_by_default(api_server: ApiServer, client: Client) -> None:
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    job = {
        "metadata": {"name": "j"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
    made = (await client.request(api_server, "POST", jobs, job)).body
    assert made["metadata"]["generation"] == 1
    pod = owned_by(
        {"metadata": {"name": "j-pod"}, "spec": {"containers": [{"name": "c", "image": "b"}]}},
        made,
    )
    await client.request(api_server, "POST", "/api/v1/namespaces/default/pods", pod)
    await client.request(api_server, "DELETE", jobs + "/j")  # batch/v1 default: Orphan
    kept = api_server.get(PODS, "j-pod", "default")
    assert kept is not None and "ownerReferences" not in kept["metadata"]
    await client.request(api_server, "POST", jobs, job)
    again = (await client.get(api_server, jobs + "/j")).body
    pod["metadata"] = {**pod["metadata"], "name": "j-pod-2"}
    pod["metadata"]["ownerReferences"][0]["uid"] = again["metadata"]["uid"]
    await client.request(api_server, "POST", "/api/v1/namespaces/default/pods", pod)
    await client.request(api_server, "DELETE", jobs + "/j", propagationPolicy="Background")
    assert api_server.get(PODS, "j-pod-2", "default") is None  # kubectl's choice: collected


async def test_a_zero_grace_delete_of_a_held_pod_waits_only_for_finalizers(
    api_server: ApiServer, client: Client
) -> None:
    path = "/api/v1/namespaces/default/pods"
    pod = {
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    await client.request(api_server, "POST", path, pod)
    first = await client.request(api_server, "DELETE", path + "/held")
    assert first.body["metadata"]["deletionGracePeriodSeconds"] == 30
    second = await client.request(api_server, "DELETE", path + "/held", gracePeriodSeconds=0)
    assert second.body["metadata"]["deletionGracePeriodSeconds"] == 0  # now only the finalizer
    api_server.patch(PODS, "held", {"metadata": {"finalizers": None}}, "default")
    assert api_server.get(PODS, "held", "default") is None


async def test_namespace_finalizers_change_only_through_finalize(
    api_server: ApiServer, client: Client
) -> None:
    made = (await client.request(api_server, "POST", NS_PATH, {"metadata": {"name": "fin"}})).body
    put = await client.request(api_server, "PUT", NS_PATH + "/fin", {**made, "spec": {}})
    assert put.body["spec"] == {"finalizers": ["kubernetes"]}  # ignored on the main endpoint
    held = dict(made)
    held["metadata"] = {**made["metadata"], "finalizers": ["example.com/hold"]}
    await client.request(api_server, "PUT", NS_PATH + "/fin", held)
    await client.request(api_server, "DELETE", NS_PATH + "/fin")
    # what `kubectl replace --raw .../finalize` does to a stuck namespace
    current = (await client.get(api_server, NS_PATH + "/fin")).body
    finalized = await client.request(
        api_server, "PUT", NS_PATH + "/fin/finalize", {**current, "spec": {"finalizers": []}}
    )
    assert finalized.status == 200 and "finalizers" not in finalized.body["spec"]
    assert (await client.get(api_server, NS_PATH + "/fin")).status == 200  # metadata's remains
    api_server.patch(NAMESPACES, "fin", {"metadata": {"finalizers": None}})
    assert api_server.get(NAMESPACES, "fin") is None
