"""Built-in resources as a v1.36 cluster answers them (write-semantics-v1.36.md, "Answers client
libraries depend on"): zero-valued status counters, DELETE answering the object, deletecollection,
the built-ins every cluster serves, the default ServiceAccount, reviews, 404 for what is not
served, bodies ending with a newline."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import Resource
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm, names

pytestmark = pytest.mark.asyncio

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
}
WORKLOAD_SPEC: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}


@pytest.mark.parametrize(
    ("path", "kind", "spec", "status"),
    [
        (
            "/apis/apps/v1/namespaces/default/daemonsets",
            "DaemonSet",
            WORKLOAD_SPEC,
            {
                "currentNumberScheduled": 0,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": 0,
                "numberReady": 0,
            },
        ),
        ("/apis/apps/v1/namespaces/default/replicasets", "ReplicaSet", WORKLOAD_SPEC, None),
        (
            "/apis/apps/v1/namespaces/default/statefulsets",
            "StatefulSet",
            {**WORKLOAD_SPEC, "serviceName": "web"},
            {"replicas": 0, "availableReplicas": 0},
        ),
        (
            "/api/v1/namespaces/default/replicationcontrollers",
            "ReplicationController",
            {"selector": {"app": "web"}, "template": TEMPLATE},
            {"replicas": 0},
        ),
        ("/apis/apps/v1/namespaces/default/deployments", "Deployment", WORKLOAD_SPEC, {}),
    ],
)
async def test_new_workloads_carry_their_zero_status_counters(
    api_server: ApiServer,
    client: Client,
    path: str,
    kind: str,
    spec: dict[str, Any],
    status: dict[str, Any] | None,
) -> None:
    body = {"kind": kind, "metadata": {"name": "w"}, "spec": spec}
    made = await client.request(api_server, "POST", path, body)
    assert made.status == 201, made.text
    assert made.body["status"] == (status if status is not None else {"replicas": 0})
    read = await client.get(api_server, f"{path}/w")
    assert read.body["status"] == made.body["status"]


async def test_delete_of_a_service_answers_the_deleted_service(
    api_server: ApiServer, client: Client
) -> None:
    path = "/api/v1/namespaces/default/services"
    service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    assert (await client.request(api_server, "POST", path, service)).status == 201
    gone = await client.request(api_server, "DELETE", f"{path}/s")
    assert gone.status == 200
    assert gone.body["kind"] == "Service" and gone.body["metadata"]["name"] == "s"
    account = await client.request(
        api_server, "DELETE", "/api/v1/namespaces/default/serviceaccounts/default"
    )
    assert account.body["kind"] == "ServiceAccount"
    made = await client.request(api_server, "POST", CM_PATH, cm("c"))
    assert made.status == 201
    status = await client.request(api_server, "DELETE", f"{CM_PATH}/c")
    assert status.body["kind"] == "Status" and status.body["status"] == "Success"


async def test_deletecollection_answers_the_deleted_objects_and_sends_deleted_events(
    api_server: ApiServer, client: Client
) -> None:
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        assert (
            await client.request(api_server, "POST", CM_PATH, cm(name, team=team))
        ).status == 201
    async with client.watch(api_server, CM_PATH, resourceVersion=str(api_server.revision)) as w:
        reply = await client.request(api_server, "DELETE", CM_PATH, labelSelector="team=x")
        assert reply.status == 200
        assert reply.body["kind"] == "ConfigMapList" and reply.body["apiVersion"] == "v1"
        assert names(reply.body) == ["a", "b"]
        assert reply.body["metadata"]["resourceVersion"] == str(api_server.revision)
        events = await w.take(2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"),
        ("DELETED", "b"),
    ]
    left = await client.get(api_server, CM_PATH)
    assert names(left.body) == ["c"]
    by_field = await client.request(api_server, "DELETE", CM_PATH, fieldSelector="metadata.name=c")
    assert names(by_field.body) == ["c"]
    namespaces = await client.request(api_server, "DELETE", "/api/v1/namespaces")
    assert namespaces.status == 405  # namespaces have no deletecollection verb


async def test_deletecollection_of_custom_resources(api_server: ApiServer, client: Client) -> None:
    widgets = Resource("example.com", "v1", "widgets", "Widget")
    api_server.register(widgets)
    path = "/apis/example.com/v1/namespaces/default/widgets"
    for name in ("w1", "w2"):
        body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}
        assert (await client.request(api_server, "POST", path, body)).status == 201
    reply = await client.request(api_server, "DELETE", path)
    assert reply.status == 200 and reply.body["kind"] == "WidgetList"
    assert [i["kind"] for i in reply.body["items"]] == ["Widget", "Widget"]
    assert (await client.get(api_server, path)).body["items"] == []


async def test_a_deleted_default_service_account_is_created_again(
    api_server: ApiServer, client: Client
) -> None:
    path = "/api/v1/namespaces/default/serviceaccounts/default"
    before = (await client.get(api_server, path)).body
    assert (await client.request(api_server, "DELETE", path)).status == 200
    again = await client.get(api_server, path)
    assert again.status == 200  # the service account controller makes it at once
    assert again.body["metadata"]["uid"] != before["metadata"]["uid"]
    other = {"metadata": {"name": "other"}}
    accounts = "/api/v1/namespaces/default/serviceaccounts"
    assert (await client.request(api_server, "POST", accounts, other)).status == 201
    assert (await client.request(api_server, "DELETE", f"{accounts}/other")).status == 200
    assert (await client.get(api_server, f"{accounts}/other")).status == 404  # only default


async def test_every_namespace_has_a_default_service_account(
    api_server: ApiServer, client: Client
) -> None:
    fresh = await client.get(api_server, "/api/v1/namespaces/kube-system/serviceaccounts/default")
    assert fresh.status == 200
    made = await client.request(
        api_server, "POST", "/api/v1/namespaces", {"metadata": {"name": "n"}}
    )
    assert made.status == 201
    accounts = await client.get(api_server, "/api/v1/namespaces/n/serviceaccounts")
    assert names(accounts.body) == ["default"]
    assert accounts.body["kind"] == "ServiceAccountList"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/api/v1/nodes", "NodeList"),
        ("/api/v1/endpoints", "EndpointsList"),
        ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaimList"),
        ("/api/v1/limitranges", "LimitRangeList"),
        ("/apis/batch/v1/cronjobs", "CronJobList"),
        ("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudgetList"),
        ("/apis/networking.k8s.io/v1/ingresses", "IngressList"),
        ("/apis/events.k8s.io/v1/events", "EventList"),
        ("/apis/autoscaling/v2/horizontalpodautoscalers", "HorizontalPodAutoscalerList"),
        ("/apis/discovery.k8s.io/v1/endpointslices", "EndpointSliceList"),
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "ClusterRoleList"),
        ("/apis/rbac.authorization.k8s.io/v1/rolebindings", "RoleBindingList"),
        ("/apis/apiregistration.k8s.io/v1/apiservices", "APIServiceList"),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            "ValidatingWebhookConfigurationList",
        ),
    ],
)
async def test_the_builtins_every_cluster_serves_are_listed(
    api_server: ApiServer, client: Client, path: str, kind: str
) -> None:
    reply = await client.get(api_server, path)
    assert reply.status == 200 and reply.body["kind"] == kind


async def test_self_subject_access_reviews_are_allowed(
    api_server: ApiServer, client: Client
) -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    body = {"spec": {"resourceAttributes": {"verb": "create", "resource": "deployments"}}}
    reply = await client.request(api_server, "POST", path, body)
    assert reply.status == 201
    assert reply.body["kind"] == "SelfSubjectAccessReview"
    assert reply.body["status"]["allowed"] is True
    assert reply.body["spec"] == body["spec"]
    assert (await client.get(api_server, path)).status == 405
    empty = await client.request(api_server, "POST", path, {"spec": {}})
    assert empty.status == 422


async def test_requests_to_resources_not_served_are_404(
    api_server: ApiServer, client: Client
) -> None:
    reply = await client.request(api_server, "POST", "/api/v1/namespaces/default/gadgets", {})
    assert reply.status == 404
    assert reply.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        '"the server could not find the requested resource","reason":"NotFound","details":{},'
        '"code":404}\n'
    )
    group = await client.request(api_server, "DELETE", "/apis/nowhere.example.com/v1/things")
    assert group.status == 404 and group.text == "404 page not found\n"


async def test_json_answers_end_with_a_newline(api_server: ApiServer, client: Client) -> None:
    made = await client.request(api_server, "POST", CM_PATH, cm("nl"))
    assert made.text.endswith("}\n")
    assert (await client.get(api_server, CM_PATH)).text.endswith("}\n")
    assert (await client.get(api_server, "/version")).text.endswith("}\n")
