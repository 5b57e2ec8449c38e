"""The scale subresource of a CRD that declares one (``subresources.scale``): an autoscaling/v1
Scale read from the spec/status replicas paths and the label selector path, written through
PUT and PATCH into the spec replicas path; in discovery; POST is 405."""

from __future__ import annotations

from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PODSETS = "/apis/scale.example.com/v1/namespaces/default/podsets"


def podset_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "podsets.scale.example.com"},
        "spec": {
            "group": "scale.example.com",
            "names": {"plural": "podsets", "singular": "podset", "kind": "PodSet"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer", "default": 1}},
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "replicas": {"type": "integer"},
                                        "selector": {"type": "string"},
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


async def test_scale_reads_and_writes_the_replicas_paths(
    api_server: ApiServer, client: Client
) -> None:
    assert (await client.request(api_server, "POST", CRD_PATH, podset_crd())).status == 201
    body = {
        "apiVersion": "scale.example.com/v1",
        "kind": "PodSet",
        "metadata": {"name": "p"},
        "spec": {},
    }
    created = await client.request(api_server, "POST", PODSETS, body)
    assert created.status == 201 and created.body["spec"] == {"replicas": 1}
    status = created.body
    status["status"] = {"replicas": 1, "selector": "app=p"}
    await client.request(api_server, "PUT", PODSETS + "/p/status", status)
    scale = await client.get(api_server, PODSETS + "/p/scale")
    assert scale.status == 200
    meta = scale.body["metadata"]
    assert scale.body["kind"] == "Scale" and scale.body["apiVersion"] == "autoscaling/v1"
    assert meta["name"] == "p" and meta["uid"] == created.body["metadata"]["uid"]
    assert scale.body["spec"] == {"replicas": 1}
    assert scale.body["status"] == {"replicas": 1, "selector": "app=p"}
    patched = await client.request(
        api_server,
        "PATCH",
        PODSETS + "/p/scale",
        {"spec": {"replicas": 4}},
        "application/merge-patch+json",
    )
    assert patched.status == 200 and patched.body["spec"] == {"replicas": 4}
    stored = (await client.get(api_server, PODSETS + "/p")).body
    assert stored["spec"]["replicas"] == 4 and stored["metadata"]["generation"] == 2
    put = scale.body
    put["spec"] = {"replicas": 2}
    stale = await client.request(api_server, "PUT", PODSETS + "/p/scale", put)
    assert stale.status == 409  # its resourceVersion is the one before the patch
    del put["metadata"]["resourceVersion"]
    replaced = await client.request(api_server, "PUT", PODSETS + "/p/scale", put)
    assert replaced.status == 200 and replaced.body["spec"] == {"replicas": 2}
    negative = await client.request(
        api_server,
        "PATCH",
        PODSETS + "/p/scale",
        {"spec": {"replicas": -1}},
        "application/merge-patch+json",
    )
    assert negative.status == 422
    post = await client.request(api_server, "POST", PODSETS + "/p/scale", put)
    assert post.status == 405
    discovery = (await client.get(api_server, "/apis/scale.example.com/v1")).body
    entry = next(r for r in discovery["resources"] if r["name"] == "podsets/scale")
    assert entry["kind"] == "Scale" and entry["group"] == "autoscaling"
