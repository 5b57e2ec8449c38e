"""Built-in defaulting as a v1.36 apiserver's defaulters and admission fill in what a client left
out (write-semantics-v1.36.md, "Built-in defaulting"), visible on create and in managedFields;
the ``/scale`` subresource of Deployments, StatefulSets, ReplicaSets."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

NS = "/apis/apps/v1/namespaces/default"
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
            {"name": "latest", "image": "nginx"},
        ]
    },
}
WORKLOAD: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}
POD_SPEC_DEFAULTS = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}


async def create(client: Client, server: ApiServer, path: str, body: dict[str, Any]) -> Any:
    reply = await client.request(server, "POST", path, body, fieldManager="test")
    assert reply.status == 201, reply.text
    return reply.body


def check_pod_spec(spec: dict[str, Any]) -> None:
    assert {k: spec[k] for k in POD_SPEC_DEFAULTS} == POD_SPEC_DEFAULTS
    tagged, untagged = spec["containers"]
    assert tagged == {
        "name": "c",
        "image": "nginx:1.27",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    assert untagged["imagePullPolicy"] == "Always"


async def test_a_deployment_is_defaulted_and_its_managed_fields_name_the_defaults(
    api_server: ApiServer, client: Client
) -> None:
    made = await create(
        client, api_server, f"{NS}/deployments", {"metadata": {"name": "web"}, "spec": WORKLOAD}
    )
    spec = made["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    check_pod_spec(spec["template"]["spec"])
    assert made["status"] == {}
    (entry,) = made["metadata"]["managedFields"]
    containers = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    ports = containers['k:{"name":"c"}']["f:ports"]
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in ports


async def test_a_pod_gets_the_defaults_and_admission_of_a_cluster(
    api_server: ApiServer, client: Client
) -> None:
    made = await create(
        client,
        api_server,
        "/api/v1/namespaces/default/pods",
        {"metadata": {"name": "p"}, "spec": TEMPLATE["spec"]},
    )
    spec = made["spec"]
    check_pod_spec(spec)
    assert spec["enableServiceLinks"] is True
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert made["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


async def test_a_service_gets_its_type_ports_and_a_cluster_ip(
    api_server: ApiServer, client: Client
) -> None:
    path = "/api/v1/namespaces/default/services"
    body = {
        "metadata": {"name": "s"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    spec = (await create(client, api_server, path, body))["spec"]
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["type"] == "ClusterIP" and spec["sessionAffinity"] == "None"
    assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert spec["internalTrafficPolicy"] == "Cluster"
    other = await create(client, api_server, path, {**body, "metadata": {"name": "t"}})
    assert other["spec"]["clusterIP"] != spec["clusterIP"]
    # an update that leaves the allocated address out keeps it
    replaced = await client.request(api_server, "PUT", f"{path}/s", body)
    assert replaced.status == 200 and replaced.body["spec"]["clusterIP"] == spec["clusterIP"]


async def test_statefulsets_daemonsets_and_jobs_are_defaulted(
    api_server: ApiServer, client: Client
) -> None:
    sts = await create(
        client,
        api_server,
        f"{NS}/statefulsets",
        {"metadata": {"name": "db"}, "spec": {**WORKLOAD, "serviceName": "db"}},
    )
    assert sts["spec"]["replicas"] == 1
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    ds = await create(
        client, api_server, f"{NS}/daemonsets", {"metadata": {"name": "ds"}, "spec": WORKLOAD}
    )
    assert ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    check_pod_spec(ds["spec"]["template"]["spec"])
    job_spec = {"template": {"spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}}
    job = await create(
        client,
        api_server,
        "/apis/batch/v1/namespaces/default/jobs",
        {"metadata": {"name": "j"}, "spec": job_spec},
    )
    spec, uid = job["spec"], job["metadata"]["uid"]
    assert (spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == (
        "NonIndexed",
        False,
        False,
    )
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid,
        "job-name": "j",
    }
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


async def test_the_scale_of_a_deployment(api_server: ApiServer, client: Client) -> None:
    made = await create(
        client, api_server, f"{NS}/deployments", {"metadata": {"name": "web"}, "spec": WORKLOAD}
    )
    scale = await client.get(api_server, f"{NS}/deployments/web/scale")
    assert scale.status == 200
    assert scale.body["kind"] == "Scale" and scale.body["apiVersion"] == "autoscaling/v1"
    assert scale.body["metadata"]["uid"] == made["metadata"]["uid"]
    assert scale.body["spec"] == {"replicas": 1}
    assert scale.body["status"] == {"replicas": 0, "selector": "app=web"}
    patched = await client.request(
        api_server,
        "PATCH",
        f"{NS}/deployments/web/scale",
        {"spec": {"replicas": 4}},
        content_type="application/merge-patch+json",
    )
    assert patched.status == 200 and patched.body["spec"] == {"replicas": 4}
    assert (await client.get(api_server, f"{NS}/deployments/web")).body["spec"]["replicas"] == 4
    put = await client.request(
        api_server,
        "PUT",
        f"{NS}/deployments/web/scale",
        {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": "web"},
            "spec": {"replicas": 2},
        },
    )
    assert put.status == 200 and put.body["spec"] == {"replicas": 2}
    post = await client.request(api_server, "POST", f"{NS}/deployments/web/scale", {})
    assert post.status == 405


async def test_the_scale_of_statefulsets_and_replicasets(
    api_server: ApiServer, client: Client
) -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
    }
    template = {**TEMPLATE, "metadata": {"labels": {"app": "web", "tier": "a"}}}
    for plural, extra in (("statefulsets", {"serviceName": "x"}), ("replicasets", {})):
        body = {
            "metadata": {"name": "s"},
            "spec": {"selector": selector, "template": template, "replicas": 3, **extra},
        }
        await create(client, api_server, f"{NS}/{plural}", body)
        scale = await client.get(api_server, f"{NS}/{plural}/s/scale")
        assert scale.body["spec"] == {"replicas": 3}
        assert scale.body["status"] == {"replicas": 0, "selector": "app=web,tier in (a,b)"}


async def test_a_pod_needs_its_service_account(api_server: ApiServer, client: Client) -> None:
    # (a deleted "default" is created again at once by the service account controller)
    pod = {"metadata": {"name": "p1"}, "spec": {**TEMPLATE["spec"], "serviceAccountName": "gone"}}
    reply = await client.request(api_server, "POST", "/api/v1/namespaces/default/pods", pod)
    assert reply.status == 403
    assert reply.body["message"] == (
        'pods "p1" is forbidden: error looking up service account default/gone: '
        'serviceaccount "gone" not found'
    )


async def test_an_hpa_behavior_gets_both_directions_rules(
    api_server: ApiServer, client: Client
) -> None:
    hpa = {
        "metadata": {"name": "h"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
        },
    }
    made = await create(
        client, api_server, "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", hpa
    )
    assert made["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    assert list(made["spec"]["behavior"]) == ["scaleUp", "scaleDown"]  # the Go struct's order


async def test_limit_range_container_defaults_and_what_has_no_defaulter(
    api_server: ApiServer, client: Client
) -> None:
    limits = {
        "metadata": {"name": "l"},
        "spec": {
            "limits": [
                {"type": "Container", "max": {"memory": "1Gi", "cpu": "2"}, "min": {"cpu": "100m"}},
                {"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "200m"}},
                {"type": "Pod", "max": {"cpu": "4"}},
            ]
        },
    }
    made = await create(client, api_server, "/api/v1/namespaces/default/limitranges", limits)
    assert made["spec"]["limits"] == [
        {
            "type": "Container",
            "max": {"memory": "1Gi", "cpu": "2"},
            "min": {"cpu": "100m"},
            "default": {"cpu": "2", "memory": "1Gi"},
            "defaultRequest": {"cpu": "2", "memory": "1Gi"},
        },
        {"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "200m"}},
        {"type": "Pod", "max": {"cpu": "4"}},
    ]
    # policy/v1 and networking.k8s.io/v1 have no defaulters: stored as given
    budget = {"metadata": {"name": "b"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}}
    made = await create(
        client, api_server, "/apis/policy/v1/namespaces/default/poddisruptionbudgets", budget
    )
    assert made["spec"] == budget["spec"]
    assert made["status"] == {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
    backend = {"service": {"name": "s", "port": {"number": 80}}}
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    ingress = {"metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [path]}}]}}
    made = await create(
        client, api_server, "/apis/networking.k8s.io/v1/namespaces/default/ingresses", ingress
    )
    assert made["spec"] == ingress["spec"] and made["status"] == {"loadBalancer": {}}
