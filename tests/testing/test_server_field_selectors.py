"""Field selectors as the apiserver converts and matches them, per kind: Pods by node, phase,
restart policy, scheduler, service account, host network, IP and nominated node; the other
built-ins by their own labels; custom resources by their CRD's ``selectableFields``; kinds
without a conversion function refuse all but ``metadata.name`` / ``metadata.namespace``."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import PODS
from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

PODS_PATH = "/api/v1/namespaces/default/pods"


def pod(name: str, node: str = "", phase: str = "Pending", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec},
        "status": {"phase": phase},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


async def names(client: Client, api_server: ApiServer, path: str, selector: str) -> list[str]:
    reply = await client.get(api_server, path, fieldSelector=selector)
    assert reply.status == 200, reply.body
    return sorted(item["metadata"]["name"] for item in reply.body["items"])


async def test_pods_are_selected_by_node_and_phase(api_server: ApiServer, client: Client) -> None:
    api_server.create(PODS, pod("a", "node-1", "Running", restartPolicy="Never"))
    api_server.create(PODS, pod("b", "node-2", "Running", hostNetwork=True))
    api_server.create(PODS, pod("c"))
    assert await names(client, api_server, PODS_PATH, "spec.nodeName=node-1") == ["a"]
    assert await names(client, api_server, "/api/v1/pods", "spec.nodeName=") == ["c"]
    assert await names(client, api_server, PODS_PATH, "status.phase=Running") == ["a", "b"]
    assert await names(client, api_server, PODS_PATH, "status.phase!=Running") == ["c"]
    assert await names(
        client, api_server, PODS_PATH, "status.phase==Running,spec.nodeName!=node-1"
    ) == ["b"]
    assert await names(client, api_server, PODS_PATH, "spec.restartPolicy=Never") == ["a"]
    assert await names(client, api_server, PODS_PATH, "spec.hostNetwork=true") == ["b"]
    assert await names(client, api_server, PODS_PATH, "spec.hostNetwork=false") == ["a", "c"]
    for label in (
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.podIP",
        "status.nominatedNodeName",
        "metadata.namespace",
    ):
        assert (await client.get(api_server, PODS_PATH, fieldSelector=f"{label}=x")).status == 200


async def test_a_watch_of_one_node_sees_only_its_pods(
    api_server: ApiServer, client: Client
) -> None:
    async with client.watch(
        api_server, PODS_PATH, fieldSelector="spec.nodeName=node-1", resourceVersion="1"
    ) as watch:
        api_server.create(PODS, pod("elsewhere", "node-2"))
        api_server.create(PODS, pod("here", "node-1"))
        event = await watch.next()
    assert event is not None and event["object"]["metadata"]["name"] == "here"


async def test_unsupported_field_labels_are_400_worded_per_kind(
    api_server: ApiServer, client: Client
) -> None:
    on_pods = await client.get(api_server, PODS_PATH, fieldSelector="metadata.uid=x")
    assert on_pods.status == 400 and on_pods.body["reason"] == "BadRequest"
    assert on_pods.body["message"] == "field label not supported: metadata.uid"
    on_deployments = await client.get(
        api_server, "/apis/apps/v1/deployments", fieldSelector="status.replicas=1"
    )
    assert on_deployments.status == 400
    assert on_deployments.body["message"] == (
        '"status.replicas" is not a known field selector: only "metadata.name", '
        '"metadata.namespace"'
    )
    watch = await client.get(api_server, PODS_PATH, fieldSelector="metadata.uid=x", watch="1")
    assert watch.status == 400


async def test_other_built_ins_are_selected_by_their_own_labels(
    api_server: ApiServer, client: Client
) -> None:
    secrets = "/api/v1/namespaces/default/secrets"
    for name, type_ in (("tls", "kubernetes.io/tls"), ("plain", "Opaque")):
        body = {"metadata": {"name": name}, "type": type_, "data": {}}
        assert (await client.request(api_server, "POST", secrets, body)).status == 201
    assert await names(client, api_server, secrets, "type=kubernetes.io/tls") == ["tls"]
    namespaces = await names(client, api_server, "/api/v1/namespaces", "status.phase=Active")
    assert "default" in namespaces
    events = "/api/v1/namespaces/default/events"
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "a", "namespace": "default"},
        "reason": "Started",
        "type": "Normal",
    }
    assert (await client.request(api_server, "POST", events, event)).status == 201
    assert await names(
        client, api_server, events, "involvedObject.kind=Pod,involvedObject.name=a"
    ) == ["e"]
    assert await names(client, api_server, events, "type=Warning") == []


async def test_custom_resources_are_selected_by_their_selectable_fields(
    api_server: ApiServer, client: Client
) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "selectableFields": [{"jsonPath": ".spec.colour"}],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (await client.request(api_server, "POST", path, crd)).status == 201
    gadgets = "/apis/example.com/v1/namespaces/default/gadgets"
    for name, colour in (("r", "red"), ("b", "blue")):
        body = {
            "apiVersion": "example.com/v1",
            "kind": "Gadget",
            "metadata": {"name": name},
            "spec": {"colour": colour},
        }
        assert (await client.request(api_server, "POST", gadgets, body)).status == 201
    assert await names(client, api_server, gadgets, "spec.colour=red") == ["r"]
    refused = await client.get(api_server, gadgets, fieldSelector="spec.size=1")
    assert refused.status == 400
    assert refused.body["message"] == "field label not supported: spec.size"


async def test_escaped_values_and_malformed_terms(api_server: ApiServer, client: Client) -> None:
    api_server.create(PODS, pod("a", "node,1"))
    assert await names(client, api_server, PODS_PATH, r"spec.nodeName=node\,1") == ["a"]
    malformed = await client.get(api_server, PODS_PATH, fieldSelector="spec.nodeName")
    assert malformed.status == 400
    assert malformed.body["message"] == (
        "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"
    )
