"""Server-side apply of a body that names something twice, as a v1.36 apiserver answers it.

A key a mapping repeats (``image: a`` then ``image: b``) is YAML's strict decoder's complaint,
checked once the apply itself succeeded: 400 ``error strict decoding YAML: ...`` under
``fieldValidation=Strict`` (apply's default), naming the line of the repeated key's value;
under ``Warn`` the warning has line breaks, which the apiserver drops, so nothing is seen and
the last value wins. An item a keyed list or a set names twice fails the typed conversion of
the applied configuration, whatever the directive: 500 ``failed to create typed patch object
(...): .spec.containers: duplicate entries for key [name="c"]``; nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

POD = "/api/v1/namespaces/default/pods/p"
APPLY = "application/apply-patch+yaml"
REPEATED_IMAGE = b"""apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: nginx:1.26
    image: nginx:1.27
"""


async def apply(
    client: Client, server: ApiServer, raw: bytes, **params: str
) -> tuple[int, Any, list[str]]:
    async with client.http.patch(
        server.url + POD,
        data=raw,
        params={"fieldManager": "tester", **params},
        headers={"Content-Type": APPLY},
    ) as response:
        return response.status, await response.json(), response.headers.getall("Warning", [])


async def test_an_applied_key_named_twice_follows_field_validation(
    api_server: ApiServer, client: Client
) -> None:
    strict = await apply(client, api_server, REPEATED_IMAGE)
    explicit = await apply(client, api_server, REPEATED_IMAGE, fieldValidation="Strict")
    assert (await client.get(api_server, POD)).status == 404
    warn = await apply(client, api_server, REPEATED_IMAGE, fieldValidation="Warn")
    ignore = await apply(client, api_server, REPEATED_IMAGE, fieldValidation="Ignore")

    message = (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 9: key "image" already set in map'
    )
    assert strict[0] == 400 and strict[1]["reason"] == "BadRequest"
    assert strict[1]["message"] == message and explicit[1]["message"] == message
    assert warn[0] == 201 and warn[2] == []  # the apiserver drops a warning with line breaks
    assert warn[1]["spec"]["containers"][0]["image"] == "nginx:1.27"  # the last one wins
    assert ignore[0] == 200 and ignore[2] == []


async def test_keys_named_twice_are_listed_inner_first_by_line(
    api_server: ApiServer, client: Client
) -> None:
    raw = (
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},\n'
        b' "spec": {"containers": [{"name": "c", "image": "a", "image": "b"}],\n'
        b'          "containers": [{"name": "c", "image": "a", "name": "c"}]}}'
    )

    status, body, _ = await apply(client, api_server, raw)

    assert status == 400
    assert body["message"].splitlines()[1:] == [
        '  line 2: key "image" already set in map',
        '  line 3: key "name" already set in map',
        '  line 3: key "containers" already set in map',
    ]


async def test_an_applied_list_naming_an_item_twice_fails_the_typed_conversion(
    api_server: ApiServer, client: Client
) -> None:
    def pod(**spec: Any) -> bytes:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
        return json.dumps(body).encode()

    twice = pod(containers=[{"name": "c", "image": "a"}, {"name": "c", "image": "b"}])
    nested = pod(
        containers=[
            {
                "name": "c",
                "image": "a",
                "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
                "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}],
            }
        ]
    )
    in_a_set = json.loads(pod(containers=[{"name": "c", "image": "a"}]))
    in_a_set["metadata"]["finalizers"] = ["example.com/x", "example.com/x"]

    replies = [
        await apply(client, api_server, body, fieldValidation="Ignore")
        for body in (twice, nested, json.dumps(in_a_set).encode())
    ]

    prefix = "failed to create typed patch object (/p; /v1, Kind=Pod): "
    assert [status for status, _, _ in replies] == [500, 500, 500]
    assert [body["message"] for _, body, _ in replies] == [
        prefix + '.spec.containers: duplicate entries for key [name="c"]',
        prefix
        + "errors:\n"
        + '  .spec.containers[name="c"].env: duplicate entries for key [name="A"]\n'
        # a port without protocol is named by its default, as the apiserver's schema has it
        + '  .spec.containers[name="c"].ports: duplicate entries for key '
        + '[containerPort=80,protocol="TCP"]',
        prefix + '.metadata.finalizers: duplicate entries for key [="example.com/x"]',
    ]
    assert (await client.get(api_server, POD)).status == 404


async def test_an_applied_custom_resource_naming_a_keyed_item_twice_is_refused(
    api_server: ApiServer, client: Client
) -> None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": item,
                    },
                    "tags": {
                        "type": "array",
                        "x-kubernetes-list-type": "set",
                        "items": {"type": "string"},
                    },
                },
            }
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gates.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "gates", "singular": "gate", "kind": "Gate"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }
    made = await client.request(
        api_server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
    assert made.status == 201, made.text
    gate = {
        "apiVersion": "example.com/v1",
        "kind": "Gate",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {
            "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 8080}],
            "tags": ["a", "b", "a"],
        },
    }

    async with client.http.patch(
        api_server.url + "/apis/example.com/v1/namespaces/default/gates/g",
        data=json.dumps(gate),
        params={"fieldManager": "tester"},
        headers={"Content-Type": APPLY},
    ) as response:
        status, body = response.status, await response.json()

    assert status == 500
    assert body["message"] == (
        "failed to create typed patch object (default/g; example.com/v1, Kind=Gate): errors:\n"
        '  .spec.ports: duplicate entries for key [name="http"]\n'
        '  .spec.tags: duplicate entries for key [="a"]'
    )
