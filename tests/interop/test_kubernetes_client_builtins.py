"""The official ``kubernetes`` client's typed models create and read every built-in the server
serves (they refuse objects missing fields Go always serializes, such as a DaemonSet's status
counters); kubectl's ``auth can-i`` and ``delete -l`` work."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.interop.conftest import Kubectl, Served

Body = dict[str, Any]
META: Body = {"name": "typed"}
TEMPLATE: Body = {
    "metadata": {"labels": {"app": "typed"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
}
SELECTOR: Body = {"matchLabels": {"app": "typed"}}
RULES: list[Body] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
ROLE_REF: Body = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
WEBHOOK: Body = {
    "name": "typed.example.com",
    "clientConfig": {"url": "https://example.com/hook"},
    "admissionReviewVersions": ["v1"],
    "sideEffects": "None",
}

# (API class, kind as the client's method names spell it, namespaced, body)
BUILTINS: list[tuple[Callable[[client.ApiClient], Any], str, bool, Body]] = [
    (client.CoreV1Api, "config_map", True, {"data": {"a": "1"}}),
    (client.CoreV1Api, "secret", True, {"stringData": {"a": "1"}}),
    (client.CoreV1Api, "pod", True, {"spec": TEMPLATE["spec"]}),
    (client.CoreV1Api, "service", True, {"spec": {"ports": [{"port": 80}]}}),
    (client.CoreV1Api, "service_account", True, {}),
    (client.CoreV1Api, "endpoints", True, {"subsets": []}),
    (
        client.CoreV1Api,
        "persistent_volume_claim",
        True,
        {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            }
        },
    ),
    (client.CoreV1Api, "pod_template", True, {"template": TEMPLATE}),
    (client.CoreV1Api, "resource_quota", True, {"spec": {"hard": {"pods": "10"}}}),
    (client.CoreV1Api, "limit_range", True, {"spec": {"limits": [{"type": "Container"}]}}),
    (
        client.CoreV1Api,
        "replication_controller",
        True,
        {"spec": {"selector": {"app": "typed"}, "template": TEMPLATE}},
    ),
    (client.CoreV1Api, "event", True, {"involvedObject": {"kind": "Pod", "name": "p"}}),
    (client.CoreV1Api, "node", False, {}),
    (
        client.CoreV1Api,
        "persistent_volume",
        False,
        {
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp/typed"},
            }
        },
    ),
    (client.AppsV1Api, "deployment", True, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    (client.AppsV1Api, "replica_set", True, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    (client.AppsV1Api, "daemon_set", True, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    (
        client.AppsV1Api,
        "stateful_set",
        True,
        {"spec": {"selector": SELECTOR, "template": TEMPLATE, "serviceName": "typed"}},
    ),
    (
        client.BatchV1Api,
        "job",
        True,
        {"spec": {"template": {"spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}}},
    ),
    (
        client.BatchV1Api,
        "cron_job",
        True,
        {
            "spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": {
                    "spec": {"template": {"spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}}
                },
            }
        },
    ),
    (client.CoordinationV1Api, "lease", True, {"spec": {"holderIdentity": "me"}}),
    (client.PolicyV1Api, "pod_disruption_budget", True, {"spec": {"minAvailable": 1}}),
    (
        client.AutoscalingV2Api,
        "horizontal_pod_autoscaler",
        True,
        {
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"},
                "maxReplicas": 3,
            }
        },
    ),
    (
        client.NetworkingV1Api,
        "ingress",
        True,
        {"spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}},
    ),
    (
        client.DiscoveryV1Api,
        "endpoint_slice",
        True,
        {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]},
    ),
    (
        client.EventsV1Api,
        "event",
        True,
        {
            "eventTime": "2026-11-25T00:00:00.000000Z",
            "reportingController": "x/y",
            "reportingInstance": "i",
            "action": "Made",
            "reason": "Made",
            "type": "Normal",
        },
    ),
    (client.RbacAuthorizationV1Api, "role", True, {"rules": RULES}),
    (client.RbacAuthorizationV1Api, "role_binding", True, {"roleRef": ROLE_REF}),
    (client.RbacAuthorizationV1Api, "cluster_role", False, {"rules": RULES}),
    (client.RbacAuthorizationV1Api, "cluster_role_binding", False, {"roleRef": ROLE_REF}),
    (
        client.ApiregistrationV1Api,
        "api_service",
        False,
        {
            "metadata": {"name": "v1.typed.example.com"},
            "spec": {
                "group": "typed.example.com",
                "version": "v1",
                "groupPriorityMinimum": 100,
                "versionPriority": 10,
            },
        },
    ),
    (
        client.AdmissionregistrationV1Api,
        "mutating_webhook_configuration",
        False,
        {"webhooks": [WEBHOOK]},
    ),
    (
        client.AdmissionregistrationV1Api,
        "validating_webhook_configuration",
        False,
        {"webhooks": [WEBHOOK]},
    ),
]


@pytest.fixture(scope="module")
def api(served: Served) -> Iterator[client.ApiClient]:
    with config.new_client_from_config(config_file=str(served.kubeconfig)) as api_client:
        yield api_client


@pytest.mark.parametrize(
    ("api_class", "kind", "namespaced", "body"),
    BUILTINS,
    ids=[f"{b[0].__name__}.{b[1]}" for b in BUILTINS],
)
def test_typed_models_create_and_read_every_builtin(
    api: client.ApiClient,
    namespace: str,
    api_class: Callable[[client.ApiClient], Any],
    kind: str,
    namespaced: bool,
    body: Body,
) -> None:
    typed = api_class(api)
    manifest = {"metadata": {"name": f"{namespace}-{kind.replace('_', '-')}"}, **body}
    if "name" in body.get("metadata", {}):
        manifest["metadata"] = body["metadata"]
    name = manifest["metadata"]["name"]
    scope = (namespace,) if namespaced else ()
    prefix = "namespaced_" if namespaced else ""
    made = getattr(typed, f"create_{prefix}{kind}")(*scope, manifest)
    assert made.metadata.name == name
    read = getattr(typed, f"read_{prefix}{kind}")(name, *scope)
    assert read.metadata.uid == made.metadata.uid
    listed = getattr(typed, f"list_{prefix}{kind}")(*scope)
    assert name in [item.metadata.name for item in listed.items]
    getattr(typed, f"delete_{prefix}{kind}")(name, *scope)


def test_the_default_service_account_reads_through_typed_models(
    api: client.ApiClient, namespace: str
) -> None:
    account = client.CoreV1Api(api).read_namespaced_service_account("default", namespace)
    assert account.metadata.namespace == namespace


def test_kubectl_auth_can_i_and_delete_by_label(kubectl: Kubectl, namespace: str) -> None:
    can = kubectl("auth", "can-i", "create", "deployments", "-n", namespace)
    assert can.stdout.strip() == "yes"
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        kubectl("create", "configmap", name, "-n", namespace)
        kubectl("label", "configmap", name, f"team={team}", "-n", namespace)
    deleted = kubectl("delete", "cm", "-l", "team=x", "-n", namespace)
    assert [line.split()[:3] for line in deleted.stdout.splitlines()] == [
        ["configmap", '"a"', "deleted"],
        ["configmap", '"b"', "deleted"],
    ]
    left = kubectl.json("get", "cm", "-n", namespace)
    assert [i["metadata"]["name"] for i in left["items"]] == ["c", "kube-root-ca.crt"]


def test_kubectl_scale_and_the_typed_scale_api(
    api: client.ApiClient, kubectl: Kubectl, namespace: str
) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment(
        namespace,
        {"metadata": {"name": "web"}, "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    )
    kubectl("scale", "deployment/web", "--replicas=3", "-n", namespace)
    scale = apps.read_namespaced_deployment_scale("web", namespace)
    assert (scale.spec.replicas, scale.status.selector) == (3, "app=typed")
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 5}})
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 5


def test_kubectl_explain_reads_the_published_schemas_of_builtins(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "deployment.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in explained
    assert "Number of desired pods" in explained
