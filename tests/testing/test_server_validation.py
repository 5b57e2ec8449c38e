"""Validation of HTTP writes: names, kind and apiVersion, required fields, label and data keys,
unknown fields under fieldValidation Strict/Warn/Ignore (dropped in every case)."""

from __future__ import annotations

from typing import Any

import pytest

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer

from .server_helpers import CM_PATH, Client, cm

pytestmark = pytest.mark.asyncio


async def test_names_must_be_dns_1123_subdomains(api_server: ApiServer, client: Client) -> None:
    reply = await client.request(api_server, "POST", CM_PATH, cm("Bad_Name"))
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert reply.body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase '
        "RFC 1123 subdomain must consist of"
    )
    assert reply.body["details"]["causes"][0]["field"] == "metadata.name"
    dotted = await client.request(api_server, "POST", CM_PATH, cm("a.b-c"))
    assert dotted.status == 201


async def test_namespace_names_must_be_dns_1123_labels(
    api_server: ApiServer, client: Client
) -> None:
    reply = await client.request(
        api_server, "POST", "/api/v1/namespaces", {"metadata": {"name": "a.b"}}
    )
    assert reply.status == 422
    assert "a lowercase RFC 1123 label must consist of" in reply.body["message"]


async def test_kind_and_api_version_must_match_the_endpoint(
    api_server: ApiServer, client: Client
) -> None:
    wrong_kind = await client.request(api_server, "POST", CM_PATH, {**cm("a"), "kind": "Secret"})
    assert wrong_kind.status == 400
    assert wrong_kind.body["message"].startswith(
        'Secret in version "v1" cannot be handled as a ConfigMap'
    )
    wrong_version = await client.request(
        api_server, "POST", CM_PATH, {**cm("a"), "apiVersion": "apps/v1"}
    )
    assert wrong_version.status == 400
    assert wrong_version.body["message"] == (
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    )
    assert api_server.get(CONFIGMAPS, "a", "default") is None


async def test_pods_need_containers_with_name_and_image(
    api_server: ApiServer, client: Client
) -> None:
    path = "/api/v1/namespaces/default/pods"
    empty = await client.request(api_server, "POST", path, {"metadata": {"name": "p"}})
    assert empty.status == 422
    assert empty.body["message"] == 'Pod "p" is invalid: spec.containers: Required value'
    nameless = await client.request(
        api_server,
        "POST",
        path,
        {"metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}},
    )
    assert nameless.body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "spec.containers[0].name",
        }
    ]


async def test_label_and_data_keys_are_validated(api_server: ApiServer, client: Client) -> None:
    bad_label = await client.request(api_server, "POST", CM_PATH, cm("a", **{"bad key": "v"}))
    assert bad_label.status == 422
    assert 'metadata.labels: Invalid value: "bad key"' in bad_label.body["message"]
    bad_data = await client.request(api_server, "POST", CM_PATH, {**cm("b"), "data": {"a b": "1"}})
    assert bad_data.status == 422
    assert 'data[a b]: Invalid value: "a b"' in bad_data.body["message"]


def with_unknown(name: str) -> dict[str, Any]:
    return {**cm(name), "extra": 1, "metadata": {"name": name, "labelz": {"a": "b"}}}


async def test_unknown_fields_strict_warn_ignore(api_server: ApiServer, client: Client) -> None:
    strict = await client.request(
        api_server, "POST", CM_PATH, with_unknown("s"), fieldValidation="Strict"
    )
    assert strict.status == 400
    assert strict.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "metadata.labelz", unknown field "extra"'
    )
    warn = await client.request(
        api_server, "POST", CM_PATH, with_unknown("w"), fieldValidation="Warn"
    )
    assert warn.status == 201
    assert warn.headers.getall("Warning") == [
        '299 - "unknown field \\"metadata.labelz\\""',
        '299 - "unknown field \\"extra\\""',
    ]
    assert "extra" not in warn.body and "labelz" not in warn.body["metadata"]
    ignore = await client.request(
        api_server, "POST", CM_PATH, with_unknown("i"), fieldValidation="Ignore"
    )
    assert ignore.status == 201 and "Warning" not in ignore.headers
    assert "extra" not in ignore.body
    bogus = await client.request(api_server, "POST", CM_PATH, cm("b"), fieldValidation="Bogus")
    assert bogus.status == 422


async def test_unknown_nested_fields_of_a_pod_are_named_by_path(
    api_server: ApiServer, client: Client
) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x", "imagePullPolcy": "Always"}]},
    }
    reply = await client.request(
        api_server, "POST", "/api/v1/namespaces/default/pods", pod, fieldValidation="Strict"
    )
    assert reply.status == 400
    assert reply.body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagePullPolcy"'
    )


async def test_python_api_stores_what_it_is_given(api_server: ApiServer) -> None:
    stored = api_server.create(CONFIGMAPS, {**cm("Not_Valid"), "status": {"free": "form"}})
    assert stored["status"] == {"free": "form"}
