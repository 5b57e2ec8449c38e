"""Unknown and duplicate fields of built-in objects, decided from the published schemas as the
apiserver's strict decoder decides them: ``fieldValidation=Strict`` refuses them (400 for a body
decoded as the object, 422 for a patch), ``Warn`` (the default) answers a ``Warning`` each,
``Ignore`` is silent; the stored object never has them. Server-side apply of an unknown field
is refused whatever the directive (500, field not declared in schema), as a v1.36 server does."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
            **spec,
        },
    }


async def post_raw(client: Client, server: ApiServer, raw: bytes, **params: str) -> Any:
    async with client.http.post(
        server.url + DEPLOYMENTS,
        data=raw,
        params=params,
        headers={"Content-Type": "application/json"},
    ) as response:
        return response.status, await response.json(), response.headers.getall("Warning", [])


async def test_a_misspelt_field_of_a_deployment_follows_field_validation(
    api_server: ApiServer, client: Client
) -> None:
    strict = await client.request(
        api_server, "POST", DEPLOYMENTS, deployment("s", replicass=2), fieldValidation="Strict"
    )
    assert strict.status == 400 and strict.body["reason"] == "BadRequest"
    assert strict.body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.replicass"'
    )
    warn = await client.request(
        api_server, "POST", DEPLOYMENTS, deployment("w", replicass=2), fieldValidation="Warn"
    )
    assert warn.status == 201 and "replicass" not in warn.body["spec"]
    assert warn.headers.getall("Warning") == ['299 - "unknown field \\"spec.replicass\\""']
    default = await client.request(api_server, "POST", DEPLOYMENTS, deployment("d", replicass=2))
    assert default.status == 201  # without the parameter: Warn, as for every built-in
    assert default.headers.getall("Warning") == ['299 - "unknown field \\"spec.replicass\\""']
    ignore = await client.request(
        api_server, "POST", DEPLOYMENTS, deployment("i", replicass=2), fieldValidation="Ignore"
    )
    assert ignore.status == 201 and "Warning" not in ignore.headers
    stored = await client.get(api_server, f"{DEPLOYMENTS}/i")
    assert "replicass" not in stored.body["spec"]


async def test_unknown_fields_anywhere_in_a_built_in_are_named_by_path(
    api_server: ApiServer, client: Client
) -> None:
    body = deployment("deep", strategy={"rollingUpdate": {"maxSurg": 1}})
    pod = body["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"limit": {"cpu": "1"}}
    pod["securityContext"] = {"runAsUsr": 1}
    body["metadata"]["labels"] = {"free-form": "keys are fine"}
    reply = await client.request(api_server, "POST", DEPLOYMENTS, body, fieldValidation="Strict")
    assert reply.status == 400
    assert reply.body["message"].endswith(
        'strict decoding error: unknown field "spec.template.spec.containers[0].resources.limit", '
        'unknown field "spec.template.spec.securityContext.runAsUsr", '
        'unknown field "spec.strategy.rollingUpdate.maxSurg"'
    )
    service = {
        "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80, "targetPrt": 80}], "selector": {"any": "key"}},
    }
    reply = await client.request(
        api_server,
        "POST",
        "/api/v1/namespaces/default/services",
        service,
        fieldValidation="Strict",
    )
    assert reply.status == 400
    assert reply.body["message"] == (
        'Service in version "v1" cannot be handled as a Service: strict decoding error: '
        'unknown field "spec.ports[0].targetPrt"'
    )


async def test_duplicate_and_unknown_fields_are_listed_in_the_order_of_the_body(
    api_server: ApiServer, client: Client
) -> None:
    raw = json.dumps(deployment("dup")).replace(
        '"spec": {', '"spec": {"replicas": 1, "replicass": 2, "replicas": 3, ', 1
    )
    status, body, _ = await post_raw(client, api_server, raw.encode(), fieldValidation="Strict")
    assert status == 400
    assert body["message"].endswith(
        'strict decoding error: unknown field "spec.replicass", duplicate field "spec.replicas"'
    )
    status, body, warnings = await post_raw(
        client, api_server, raw.encode(), fieldValidation="Warn"
    )
    assert status == 201 and body["spec"]["replicas"] == 3  # the last value wins
    assert warnings == [
        '299 - "unknown field \\"spec.replicass\\""',
        '299 - "duplicate field \\"spec.replicas\\""',
    ]


async def test_an_update_with_an_unknown_field_is_refused_under_strict(
    api_server: ApiServer, client: Client
) -> None:
    created = await client.request(api_server, "POST", DEPLOYMENTS, deployment("u"))
    assert created.status == 201
    changed = copy.deepcopy(created.body)
    changed["spec"]["paused"] = True
    changed["spec"]["pausd"] = True
    reply = await client.request(
        api_server, "PUT", f"{DEPLOYMENTS}/u", changed, fieldValidation="Strict"
    )
    assert reply.status == 400
    assert reply.body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.pausd"'
    )
    stored = await client.get(api_server, f"{DEPLOYMENTS}/u")
    assert "paused" not in stored.body["spec"]


async def test_a_patch_with_an_unknown_field_is_invalid_under_strict(
    api_server: ApiServer, client: Client
) -> None:
    assert (await client.request(api_server, "POST", DEPLOYMENTS, deployment("p"))).status == 201
    merge = await client.request(
        api_server,
        "PATCH",
        f"{DEPLOYMENTS}/p",
        {"spec": {"replicass": 2}},
        content_type="application/merge-patch+json",
        fieldValidation="Strict",
    )
    assert merge.status == 422 and merge.body["reason"] == "Invalid"
    message = merge.body["message"]
    assert message.startswith(' "" is invalid: patch: Invalid value: "{')
    assert message.endswith('}": strict decoding error: unknown field "spec.replicass"')
    assert '\\"replicass\\":2' in message  # the patched object, as JSON
    assert merge.body["details"]["causes"][0]["field"] == "patch"
    assert merge.body["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    strategic = await client.request(
        api_server,
        "PATCH",
        f"{DEPLOYMENTS}/p",
        {"spec": {"replicass": 2, "paused": True}},
        content_type="application/strategic-merge-patch+json",
        fieldValidation="Strict",
    )
    assert strategic.status == 422
    assert strategic.body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[paused:true replicass:2]]": '
        'strict decoding error: unknown field "spec.replicass"'
    )
    json_patch = await client.request(
        api_server,
        "PATCH",
        f"{DEPLOYMENTS}/p",
        [{"op": "add", "path": "/spec/replicass", "value": 2}],
        content_type="application/json-patch+json",
        fieldValidation="Strict",
    )
    assert json_patch.status == 422
    assert json_patch.body["message"].endswith(
        'strict decoding error: unknown field "spec.replicass"'
    )
    warn = await client.request(
        api_server,
        "PATCH",
        f"{DEPLOYMENTS}/p",
        {"spec": {"replicass": 2, "paused": True}},
        content_type="application/merge-patch+json",
    )
    assert warn.status == 200 and warn.body["spec"]["paused"] is True
    assert "replicass" not in warn.body["spec"]
    assert warn.headers.getall("Warning") == ['299 - "unknown field \\"spec.replicass\\""']


async def test_server_side_apply_of_an_unknown_field_is_refused_whatever_the_directive(
    api_server: ApiServer, client: Client
) -> None:
    body = deployment("ssa")
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    reply = await client.request(
        api_server,
        "PATCH",
        f"{DEPLOYMENTS}/ssa",
        body,
        content_type="application/apply-patch+yaml",
        fieldManager="test",
        fieldValidation="Ignore",
    )
    assert reply.status == 500 and "reason" not in reply.body
    assert reply.body["message"] == (
        "failed to create typed patch object (/ssa; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="c"].imagePullPolcy: field not declared in schema'
    )
    assert (await client.get(api_server, f"{DEPLOYMENTS}/ssa")).status == 404
    two = await client.request(
        api_server,
        "PATCH",
        f"{DEPLOYMENTS}/ssa",
        deployment("ssa", replicass=2, pausd=True),
        content_type="application/apply-patch+yaml",
        fieldManager="test",
    )
    assert two.status == 500
    assert two.body["message"].startswith(
        "failed to create typed patch object (/ssa; apps/v1, Kind=Deployment): errors:\n"
    )
    assert sorted(two.body["message"].split("\n")[1:]) == [
        "  .spec.pausd: field not declared in schema",
        "  .spec.replicass: field not declared in schema",
    ]
