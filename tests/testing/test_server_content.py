"""Request bodies by content type: JSON, YAML, the protobuf kubectl's typed commands send (a
ConfigMap decoded; a type not decoded here is 415 with a Status), anything else 415."""

from __future__ import annotations

import pytest

from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client

pytestmark = pytest.mark.asyncio

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (lengths < 128 here)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def protobuf_object(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw)


async def post(api_server: ApiServer, client: Client, body: bytes, ctype: str) -> tuple[int, dict]:
    async with client.http.post(
        api_server.url + CM_PATH, data=body, headers={"Content-Type": ctype}
    ) as response:
        return response.status, await response.json()


async def test_a_protobuf_config_map_is_decoded(api_server: ApiServer, client: Client) -> None:
    meta = _field(1, b"pb")
    entry = _field(1, b"key") + _field(2, b"value")
    config_map = _field(1, meta) + _field(2, entry)
    status, body = await post(
        api_server, client, protobuf_object("v1", "ConfigMap", config_map), PROTOBUF
    )
    assert status == 201
    assert body["metadata"]["name"] == "pb" and body["data"] == {"key": "value"}
    assert "generateName" not in body["metadata"]  # empty protobuf strings are omitted


async def test_protobuf_of_other_types_is_unsupported(
    api_server: ApiServer, client: Client
) -> None:
    status, body = await post(api_server, client, protobuf_object("v1", "Pod", b""), PROTOBUF)
    assert status == 415
    assert body["reason"] == "UnsupportedMediaType"
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )


async def test_yaml_bodies_and_unknown_content_types(api_server: ApiServer, client: Client) -> None:
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  n: '1'\n"
    status, body = await post(api_server, client, yaml_body, "application/yaml")
    assert status == 201 and body["data"] == {"n": "1"}
    status, body = await post(api_server, client, b"<x/>", "application/xml")
    assert status == 415
