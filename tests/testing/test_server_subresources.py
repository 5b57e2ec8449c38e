"""The ``/status`` subresource and ``metadata.generation``, as the real registry strategies keep
them: status written only through /status for resources that have it, spec only through the main
endpoint, generation 1 on create and bumped on spec changes, none on ConfigMaps and Secrets."""

from __future__ import annotations

from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
        "status": {"replicas": 99},
    }


async def test_status_is_written_only_through_the_subresource(
    api_server: ApiServer, client: Client
) -> None:
    created = await client.request(api_server, "POST", DEPLOYMENTS, deployment("web"))
    assert created.status == 201
    assert created.body["status"] == {}  # status given on create is dropped
    assert created.body["metadata"]["generation"] == 1
    body = created.body
    # status through the main endpoint is ignored
    put = await client.request(
        api_server, "PUT", DEPLOYMENTS + "/web", {**body, "status": {"replicas": 3}}
    )
    assert put.status == 200 and put.body["status"] == {}
    assert put.body["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    # through /status: status changes, spec does not, generation stays
    status = await client.get(api_server, DEPLOYMENTS + "/web/status")
    assert status.status == 200 and status.body["kind"] == "Deployment"
    new = {**status.body, "status": {"replicas": 1, "readyReplicas": 1}}
    new["spec"] = {**new["spec"], "replicas": 5}
    written = await client.request(api_server, "PUT", DEPLOYMENTS + "/web/status", new)
    assert written.status == 200
    assert written.body["status"] == {"replicas": 1, "readyReplicas": 1}
    assert written.body["spec"]["replicas"] == 1
    assert written.body["metadata"]["generation"] == 1
    patched = await client.request(
        api_server,
        "PATCH",
        DEPLOYMENTS + "/web/status",
        {"status": {"observedGeneration": 1}, "spec": {"replicas": 7}},
        "application/merge-patch+json",
    )
    assert patched.body["status"]["observedGeneration"] == 1
    assert patched.body["spec"]["replicas"] == 1
    # a spec change through the main endpoint bumps generation; a label change does not
    scaled = await client.request(
        api_server,
        "PATCH",
        DEPLOYMENTS + "/web",
        {"spec": {"replicas": 2}},
        "application/merge-patch+json",
    )
    assert scaled.body["metadata"]["generation"] == 2
    assert scaled.body["status"]["readyReplicas"] == 1  # kept from the /status write
    labelled = await client.request(
        api_server,
        "PATCH",
        DEPLOYMENTS + "/web",
        {"metadata": {"labels": {"a": "b"}}},
        "application/merge-patch+json",
    )
    assert labelled.body["metadata"]["generation"] == 2


async def test_configmaps_have_no_status_and_no_generation(
    api_server: ApiServer, client: Client
) -> None:
    created = await client.request(api_server, "POST", CM_PATH, cm("plain"))
    assert "generation" not in created.body["metadata"]
    changed = await client.request(
        api_server,
        "PATCH",
        CM_PATH + "/plain",
        {"data": {"k": "2"}},
        "application/merge-patch+json",
    )
    assert "generation" not in changed.body["metadata"]
    no_status = await client.get(api_server, CM_PATH + "/plain/status")
    assert no_status.status == 404
    assert no_status.body["message"] == "the server could not find the requested resource"


async def test_pod_status_on_create(api_server: ApiServer, client: Client) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running"},
    }
    created = await client.request(api_server, "POST", "/api/v1/namespaces/default/pods", pod)
    assert created.body["status"]["phase"] == "Pending"
    assert created.body["metadata"]["generation"] == 1


async def test_python_api_writes_status_as_given(api_server: ApiServer) -> None:
    from informer.testing._catalog.specs import DEPLOYMENTS as DEPLOY

    made = api_server.create(DEPLOY, deployment("set-up"))
    assert made["status"] == {"replicas": 99}  # the test stands in for the controllers
