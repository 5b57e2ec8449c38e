"""A ``/scale`` body is decoded as the typed ``autoscaling/v1`` Scale it is: its unknown and
duplicate fields follow ``fieldValidation`` as any built-in's do (400 under Strict, 422 for a
patch, a ``Warning`` each under Warn, the default; dropped in every case), and a body of another
kind is a 400."""

from __future__ import annotations

import json
from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SCALE = f"{DEPLOYMENTS}/web/scale"
UNKNOWN = 'strict decoding error: unknown field "spec.replicass"'


async def deploy(api_server: ApiServer, client: Client) -> dict[str, Any]:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }
    created = await client.request(api_server, "POST", DEPLOYMENTS, body)
    assert created.status == 201, created.text
    scale = await client.get(api_server, SCALE)
    assert scale.status == 200
    return dict(scale.body)


async def test_a_scale_with_an_unknown_field_follows_field_validation(
    api_server: ApiServer, client: Client
) -> None:
    scale = await deploy(api_server, client)

    def asking(replicas: int) -> dict[str, Any]:
        return {
            **scale,
            "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "replicass": 1},
        }

    strict = await client.request(api_server, "PUT", SCALE, asking(2), fieldValidation="Strict")
    warn = await client.request(api_server, "PUT", SCALE, asking(3), fieldValidation="Warn")
    default = await client.request(api_server, "PUT", SCALE, asking(4))
    ignore = await client.request(api_server, "PUT", SCALE, asking(5), fieldValidation="Ignore")

    assert strict.status == 400 and strict.body["reason"] == "BadRequest"
    assert (
        strict.body["message"] == f'Scale in version "v1" cannot be handled as a Scale: {UNKNOWN}'
    )
    warning = ['299 - "unknown field \\"spec.replicass\\""']
    assert warn.status == 200 and warn.headers.getall("Warning") == warning
    assert default.status == 200 and default.headers.getall("Warning") == warning
    assert ignore.status == 200 and "Warning" not in ignore.headers
    assert ignore.body["spec"] == {"replicas": 5}
    stored = await client.get(api_server, f"{DEPLOYMENTS}/web")
    assert stored.body["spec"]["replicas"] == 5


async def test_a_scale_naming_a_field_twice_or_of_another_kind_is_refused(
    api_server: ApiServer, client: Client
) -> None:
    await deploy(api_server, client)
    raw = b'{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web"},'
    raw += b'"spec":{"replicas":2,"replicas":3}}'

    async with client.http.put(
        api_server.url + SCALE,
        data=raw,
        params={"fieldValidation": "Strict"},
        headers={"Content-Type": "application/json"},
    ) as response:
        twice = (response.status, await response.json())
    other = await client.request(
        api_server,
        "PUT",
        SCALE,
        {"kind": "Deployment", "apiVersion": "apps/v1", "spec": {"replicas": 2}},
    )

    assert twice[0] == 400
    assert twice[1]["message"] == (
        'Scale in version "v1" cannot be handled as a Scale: strict decoding error: '
        'duplicate field "spec.replicas"'
    )
    assert other.status == 400
    assert other.body["message"] == (
        "the API version in the data (apps/v1) does not match the expected API version "
        "(autoscaling/v1)"
    )


async def test_a_patch_of_a_scale_to_an_unknown_field_is_invalid_under_strict(
    api_server: ApiServer, client: Client
) -> None:
    await deploy(api_server, client)
    patch = {"spec": {"replicas": 2, "replicass": 1}}

    merge = await client.request(
        api_server, "PATCH", SCALE, patch, "application/merge-patch+json", fieldValidation="Strict"
    )
    strategic = await client.request(
        api_server,
        "PATCH",
        SCALE,
        patch,
        "application/strategic-merge-patch+json",
        fieldValidation="Strict",
    )
    warned = await client.request(api_server, "PATCH", SCALE, patch, "application/merge-patch+json")

    assert merge.status == 422 and merge.body["reason"] == "Invalid"
    message = merge.body["message"].removesuffix(f": {UNKNOWN}")
    patched = json.loads(json.loads(message.split("Invalid value: ", 1)[1]))
    assert patched["kind"] == "Scale" and patched["spec"] == {"replicas": 2, "replicass": 1}
    assert strategic.status == 422
    assert strategic.body["message"] == (
        f' "" is invalid: patch: Invalid value: "map[spec:map[replicas:2 replicass:1]]": {UNKNOWN}'
    )
    assert warned.status == 200 and warned.body["spec"] == {"replicas": 2}
    assert warned.headers.getall("Warning") == ['299 - "unknown field \\"spec.replicass\\""']
