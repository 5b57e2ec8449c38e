"""Custom resources are held to their CRD's structural schema as a real v1.36 apiserver holds
them (write-semantics-v1.36.md): 422 with every cause, field path and message; unknown fields
pruned, refused under ``fieldValidation=Strict`` or reported under ``Warn``; ``default:``
applied; list types and CEL ``x-kubernetes-validations`` rules checked; updates ratchet."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informer.resource import Resource
from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBSITES = "/apis/fidelity.example.com/v1/namespaces/default/websites"
WEBSITE = Resource("fidelity.example.com", "v1", "websites", "Website")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.maxReplicas) || self.replicas <= self.maxReplicas",
                    "message": "replicas must not exceed maxReplicas",
                }
            ],
            "properties": {
                "image": {"type": "string", "minLength": 1},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "maxReplicas": {"type": "integer"},
                "tier": {"type": "string", "enum": ["web", "batch"]},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                "contact": {"type": "string", "format": "email"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {
                    "type": "array",
                    "maxItems": 3,
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "routes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["path"],
                        "properties": {
                            "path": {"type": "string"},
                            "weight": {"type": "integer", "default": 100},
                        },
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
                "step": {"type": "integer", "multipleOf": 5},
                "hosts": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "selector": {
                    "type": "object",
                    "minProperties": 1,
                    "maxProperties": 2,
                    "additionalProperties": {"type": "string"},
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def website_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "websites.fidelity.example.com"},
        "spec": {
            "group": "fidelity.example.com",
            "names": {"plural": "websites", "singular": "website", "kind": "Website"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)},
                }
            ],
        },
    }


def website(obj_name: str, /, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fidelity.example.com/v1",
        "kind": "Website",
        "metadata": {"name": obj_name},
        "spec": spec,
    }


@pytest.fixture
async def crd(api_server: ApiServer, client: Client) -> ApiServer:
    created = await client.request(api_server, "POST", CRD_PATH, website_crd())
    assert created.status == 201, created.body
    return api_server


async def create(server: ApiServer, client: Client, body: Any, **params: Any) -> Any:
    return await client.request(server, "POST", WEBSITES, body, **params)


async def test_every_violation_is_one_422_with_the_apiservers_causes(
    crd: ApiServer, client: Client
) -> None:
    reply = await create(crd, client, website("x1", replicas="string", tier="gold"))
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == (
        'Website.fidelity.example.com "x1" is invalid: [spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string", spec.tier: Unsupported value: '
        '"gold": supported values: "web", "batch", spec.image: Required value]'
    )
    assert reply.body["details"] == {
        "name": "x1",
        "group": "fidelity.example.com",
        "kind": "Website",
        "causes": [
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "string": spec.replicas in body must be of type '
                'integer: "string"',
                "field": "spec.replicas",
            },
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "gold": supported values: "web", "batch"',
                "field": "spec.tier",
            },
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.image"},
        ],
    }
    assert crd.get(WEBSITE, "x1", "default") is None


async def test_one_violation_has_no_brackets(crd: ApiServer, client: Client) -> None:
    reply = await create(crd, client, website("bad-min", image="nginx", replicas=-1))
    assert reply.status == 422
    assert reply.body["message"] == (
        'Website.fidelity.example.com "bad-min" is invalid: spec.replicas: Invalid value: -1: '
        "spec.replicas in body should be greater than or equal to 0"
    )


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            {"image": ""},
            "spec.image",
            'Invalid value: "": spec.image in body should be at least 1 chars long',
        ),
        ({"image": "i", "name": "toolong"}, "spec.name", "Too long: may not be more than 5 bytes"),
        (
            {"image": "i", "name": "A"},
            "spec.name",
            "Invalid value: \"A\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            {"image": "i", "contact": "nobody"},
            "spec.contact",
            'Invalid value: "nobody": spec.contact in body must be of type email: "nobody"',
        ),
        (
            {"image": "i", "port": True},
            "spec.port",
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        ),
        (
            {"image": "i", "tags": ["a", "b", "c", "d"]},
            "spec.tags",
            "Too many: 4: must have at most 3 items",
        ),
        ({"image": "i", "tags": ["a", "b", "a"]}, "spec.tags[2]", 'Duplicate value: "a"'),
        ({"image": "i", "routes": [{"weight": 1}]}, "spec.routes[0].path", "Required value"),
        (
            {"image": "i", "labels": {"a": 1}},
            "spec.labels.a",
            'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
        ),
        (
            {"image": "i", "ratio": 0},
            "spec.ratio",
            "Invalid value: 0: spec.ratio in body should be greater than 0",
        ),
        (
            {"image": "i", "ratio": 1.5},
            "spec.ratio",
            "Invalid value: 1.5: spec.ratio in body should be less than or equal to 1",
        ),
        (
            {"image": "i", "step": 7},
            "spec.step",
            "Invalid value: 7: spec.step in body should be a multiple of 5",
        ),
        (
            {"image": "i", "hosts": []},
            "spec.hosts",
            "Invalid value: 0: spec.hosts in body should have at least 1 items",
        ),
        (
            {"image": "i", "selector": {}},
            "spec.selector",
            "Invalid value: 0: spec.selector in body should have at least 1 properties",
        ),
        (
            {"image": "i", "selector": {"a": "1", "b": "2", "c": 3}},
            "spec.selector",
            "Too many: 3: must have at most 2 items",
        ),
        (
            {"image": "i", "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]},
            "spec.ports[1]",
            'Duplicate value: {"name":"http"}',
        ),
        (
            {"image": "i", "replicas": 5, "maxReplicas": 3},
            "spec",
            'Invalid value: "object": replicas must not exceed maxReplicas',
        ),
    ],
)
async def test_each_schema_rule_is_refused_as_a_cluster_refuses_it(
    crd: ApiServer, client: Client, spec: dict[str, Any], field: str, message: str
) -> None:
    reply = await create(crd, client, website("w", **spec))
    assert reply.status == 422, reply.body
    causes = [(c["field"], c["message"]) for c in reply.body["details"]["causes"]]
    assert causes == [(field, message)]


async def test_valid_values_pass(crd: ApiServer, client: Client) -> None:
    body = website(
        "ok",
        image="nginx",
        port="http",
        note=None,
        tags=["a", "b"],
        labels={"a": "b"},
        extra={"anything": {"goes": [1]}},
    )
    reply = await create(crd, client, body)
    assert reply.status == 201, reply.body
    assert reply.body["spec"]["note"] is None  # nullable: kept
    assert reply.body["spec"]["extra"] == {"anything": {"goes": [1]}}


async def test_unknown_fields_strict_is_400(crd: ApiServer, client: Client) -> None:
    reply = await create(
        crd, client, website("s", image="nginx", colour="red"), fieldValidation="Strict"
    )
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == (
        'Website in version "v1" cannot be handled as a Website: strict decoding error: '
        'unknown field "spec.colour"'
    )


async def test_a_patch_with_unknown_fields_is_invalid_under_strict(
    crd: ApiServer, client: Client
) -> None:
    assert (await create(crd, client, website("p", image="nginx"))).status == 201
    reply = await client.request(
        crd,
        "PATCH",
        f"{WEBSITES}/p",
        {"spec": {"colour": "red"}},
        content_type="application/merge-patch+json",
        fieldValidation="Strict",
    )
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert reply.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert reply.body["message"].endswith('": strict decoding error: unknown field "spec.colour"')
    assert reply.body["details"]["causes"][0]["field"] == "patch"


async def test_unknown_fields_warn_prunes_with_a_warning(crd: ApiServer, client: Client) -> None:
    reply = await create(
        crd, client, website("w", image="nginx", colour="red"), fieldValidation="Warn"
    )
    assert reply.status == 201
    assert reply.headers.getall("Warning") == ['299 - "unknown field \\"spec.colour\\""']
    assert "colour" not in reply.body["spec"]


async def test_unknown_fields_are_pruned_silently_by_default(
    crd: ApiServer, client: Client
) -> None:
    for params in ({"fieldValidation": "Ignore"}, {}):
        body = website(f"i{len(params)}", image="nginx", colour="red")
        body["topLevel"] = 1
        body["spec"]["routes"] = [{"path": "/", "x": 1}]
        reply = await create(crd, client, body, **params)
        assert reply.status == 201
        assert "Warning" not in reply.headers
        assert "colour" not in reply.body["spec"] and "topLevel" not in reply.body
        assert reply.body["spec"]["routes"] == [{"path": "/", "weight": 100}]


async def test_defaults_apply_on_create_update_and_read(crd: ApiServer, client: Client) -> None:
    created = await create(crd, client, website("defaulted", image="nginx"))
    assert created.body["spec"] == {"image": "nginx", "replicas": 1}
    body = created.body
    body["spec"] = {"image": "httpd", "replicas": None}
    updated = await client.request(crd, "PUT", WEBSITES + "/defaulted", body)
    assert updated.status == 200 and updated.body["spec"] == {"image": "httpd", "replicas": 1}
    crd.create(WEBSITE, {"metadata": {"name": "seeded", "namespace": "default"}, "spec": {}})
    read = await client.get(crd, WEBSITES + "/seeded")
    assert read.body["spec"] == {"replicas": 1}


async def test_updates_ratchet_unchanged_invalid_fields(crd: ApiServer, client: Client) -> None:
    crd.create(
        WEBSITE,
        {"metadata": {"name": "old", "namespace": "default"}, "spec": {"image": "i", "tier": "x"}},
    )
    patched = await client.request(
        crd,
        "PATCH",
        WEBSITES + "/old",
        {"spec": {"replicas": 2}},
        "application/merge-patch+json",
    )
    assert patched.status == 200, patched.body  # tier was invalid before and is unchanged
    worse = await client.request(
        crd, "PATCH", WEBSITES + "/old", {"spec": {"tier": "y"}}, "application/merge-patch+json"
    )
    assert worse.status == 422


async def test_status_is_validated_through_its_subresource(crd: ApiServer, client: Client) -> None:
    created = await create(crd, client, website("st", image="nginx"))
    body = created.body
    body["status"] = {"ready": "yes"}
    reply = await client.request(crd, "PUT", WEBSITES + "/st/status", body)
    assert reply.status == 422
    assert reply.body["details"]["causes"][0]["field"] == "status.ready"


async def test_a_crd_with_a_schema_the_apiserver_refuses_is_422(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    spec["properties"]["tags"]["uniqueItems"] = True
    spec["properties"]["untyped"] = {"description": "no type"}
    reply = await client.request(api_server, "POST", CRD_PATH, crd)
    assert reply.status == 422
    causes = {(c["field"], c["message"]) for c in reply.body["details"]["causes"]}
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"
    assert causes == {
        (
            f"{base}[tags].uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes "
            "quadratic",
        ),
        (f"{base}[untyped].type", "Required value: must not be empty for specified object fields"),
    }


async def test_embedded_resources_need_api_version_and_kind(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["template"] = {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    body = website("e", image="nginx", template={"kind": "ConfigMap", "data": {"a": "b"}})
    reply = await create(api_server, client, body)
    assert reply.status == 422
    causes = [(c["field"], c["message"]) for c in reply.body["details"]["causes"]]
    assert causes == [("spec.template.apiVersion", "Required value: must not be empty")]
    body["spec"]["template"]["apiVersion"] = "v1"
    assert (await create(api_server, client, body)).status == 201


async def test_server_side_apply_merges_map_lists_by_their_keys(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["routes"]["x-kubernetes-list-type"] = "map"
    spec["properties"]["routes"]["x-kubernetes-list-map-keys"] = ["path"]
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    apply = "application/apply-patch+yaml"

    async def applied(manager: str, routes: list[Any]) -> Any:
        body = website("ssa", image="nginx", routes=routes)
        return await client.request(
            api_server, "PATCH", WEBSITES + "/ssa", body, apply, fieldManager=manager
        )

    assert (await applied("a", [{"path": "/a", "weight": 1}])).status == 201
    second = await applied("b", [{"path": "/b", "weight": 2}])
    assert second.status == 200, second.body
    assert second.body["spec"]["routes"] == [
        {"path": "/a", "weight": 1},
        {"path": "/b", "weight": 2},
    ]
    conflict = await applied("b", [{"path": "/a", "weight": 5}])
    assert conflict.status == 409


async def test_server_side_apply_of_an_undeclared_field_is_refused_whatever_the_directive(
    crd: ApiServer, client: Client
) -> None:
    reply = await client.request(
        crd,
        "PATCH",
        WEBSITES + "/undeclared",
        website("undeclared", image="nginx", colour="red"),
        "application/apply-patch+yaml",
        fieldManager="test",
        fieldValidation="Ignore",
    )
    assert reply.status == 500 and "reason" not in reply.body
    assert reply.body["message"] == (
        "failed to create typed patch object (/undeclared; fidelity.example.com/v1, "
        "Kind=Website): .spec.colour: field not declared in schema"
    )
    assert (await client.get(crd, WEBSITES + "/undeclared")).status == 404


async def test_a_default_added_later_shows_on_objects_stored_before(
    crd: ApiServer, client: Client
) -> None:
    created = await create(crd, client, website("early", image="nginx"))
    assert "tier" not in created.body["spec"]
    current = (await client.get(crd, CRD_PATH + "/websites.fidelity.example.com")).body
    schema = current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["tier"]["default"] = "web"
    updated = await client.request(crd, "PUT", CRD_PATH + "/websites.fidelity.example.com", current)
    assert updated.status == 200, updated.body
    read = await client.get(crd, WEBSITES + "/early")
    assert read.body["spec"]["tier"] == "web"
    assert read.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]


async def test_duplicate_fields_follow_field_validation(crd: ApiServer, client: Client) -> None:
    raw = (
        b'{"apiVersion":"fidelity.example.com/v1","kind":"Website","metadata":{"name":"%s"},'
        b'"spec":{"image":"a","image":"b"}}'
    )

    async def post(name: bytes, mode: str) -> Any:
        async with client.http.post(
            crd.url + WEBSITES,
            data=raw % name,
            params={"fieldValidation": mode},
            headers={"Content-Type": "application/json"},
        ) as response:
            return response.status, await response.json(), response.headers.getall("Warning", [])

    status, body, _ = await post(b"strict", "Strict")
    assert status == 400
    assert body["message"] == (
        'Website in version "v1" cannot be handled as a Website: strict decoding error: '
        'duplicate field "spec.image"'
    )
    status, body, warnings = await post(b"warn", "Warn")
    assert status == 201 and body["spec"]["image"] == "b"
    assert warnings == ['299 - "duplicate field \\"spec.image\\""']
    configmap = b'{"metadata":{"name":"dup"},"data":{"a":"1","a":"2"}}'
    async with client.http.post(
        crd.url + "/api/v1/namespaces/default/configmaps",
        data=configmap,
        params={"fieldValidation": "Strict"},
        headers={"Content-Type": "application/json"},
    ) as response:
        assert response.status == 400
        assert 'duplicate field "data.a"' in (await response.json())["message"]


async def test_cel_rules_transition_rules_and_unsupported_functions(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["image"]["x-kubernetes-validations"] = [
        {"rule": "self == oldSelf", "message": "image is immutable"}
    ]
    spec["properties"]["name"]["x-kubernetes-validations"] = [
        {
            "rule": "self.lowerAscii() == self",
            "messageExpression": "'name ' + self + ' must be lower case'",
            "reason": "FieldValueForbidden",
        },
        {"rule": "!isIP(self) || ip(self).family() == 4"},
    ]
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    created = await create(api_server, client, website("cel", image="nginx", name="abc"))
    assert created.status == 201  # no oldSelf on create
    unchecked = "!isIP(self) || ip(self).family() == 4"
    assert created.headers.getall("Warning") == [
        f'299 - "x-kubernetes-validations rule not checked: {unchecked} '
        '(unsupported function family, ip, isIP)"'
    ]
    body = created.body
    body["spec"]["image"] = "httpd"
    changed = await client.request(api_server, "PUT", WEBSITES + "/cel", body)
    assert changed.status == 422
    assert changed.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "string": image is immutable',
            "field": "spec.image",
        }
    ]
    upper = await create(api_server, client, website("cel2", image="nginx", name="ABC"))
    assert upper.status == 422
    assert upper.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'",
            "field": "spec.name",
        },
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: name ABC must be lower case",
            "field": "spec.name",
        },
    ]


async def test_transition_rules_on_map_list_items_compare_the_same_key(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    ports = spec["properties"]["ports"]
    ports["items"]["x-kubernetes-validations"] = [
        {"rule": "self.port == oldSelf.port", "message": "port is immutable"}
    ]
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    first = [{"name": "http", "port": 80}]
    created = await create(api_server, client, website("ports", image="i", ports=first))
    assert created.status == 201
    body = created.body
    body["spec"]["ports"] = [{"name": "admin", "port": 9000}, {"name": "http", "port": 80}]
    added = await client.request(api_server, "PUT", WEBSITES + "/ports", body)
    assert added.status == 200, added.body  # a new key has no old value; http unchanged
    body = added.body
    body["spec"]["ports"][1]["port"] = 81
    changed = await client.request(api_server, "PUT", WEBSITES + "/ports", body)
    assert changed.status == 422
    assert changed.body["details"]["causes"][0]["field"] == "spec.ports[1]"


async def test_server_side_apply_replaces_atomic_maps_whole(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["selector"]["x-kubernetes-map-type"] = "atomic"
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    apply = "application/apply-patch+yaml"
    first = website("atom", image="nginx", selector={"a": "1", "b": "2"})
    made = await client.request(
        api_server, "PATCH", WEBSITES + "/atom", first, apply, fieldManager="m"
    )
    assert made.status == 201
    second = website("atom", image="nginx", selector={"c": "3"})
    replaced = await client.request(
        api_server, "PATCH", WEBSITES + "/atom", second, apply, fieldManager="m"
    )
    assert replaced.status == 200 and replaced.body["spec"]["selector"] == {"c": "3"}
    other = website("atom", selector={"d": "4"})
    conflict = await client.request(
        api_server, "PATCH", WEBSITES + "/atom", other, apply, fieldManager="n"
    )
    assert conflict.status == 409  # the whole map is m's


async def test_cel_rules_with_quantities_urls_and_regular_expressions(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["name"]["x-kubernetes-validations"] = []
    spec["properties"]["memory"] = {
        "type": "string",
        "x-kubernetes-validations": [
            {
                "rule": "quantity(self).compareTo(quantity('1Gi')) <= 0",
                "message": "at most 1Gi",
            }
        ],
    }
    spec["properties"]["contact"] = {
        "type": "string",
        "x-kubernetes-validations": [{"rule": "url(self).getScheme() == 'https'"}],
    }
    assert (await client.request(api_server, "POST", CRD_PATH, crd)).status == 201
    ok = await create(
        api_server, client, website("q", image="i", memory="512Mi", contact="https://x.example")
    )
    assert ok.status == 201 and "Warning" not in ok.headers
    bad = await create(
        api_server, client, website("q2", image="i", memory="2Gi", contact="http://x.example")
    )
    assert bad.status == 422
    # CEL rules run in no particular order on a real server (Go map iteration)
    assert {(c["field"], c["message"]) for c in bad.body["details"]["causes"]} == {
        ("spec.memory", 'Invalid value: "string": at most 1Gi'),
        (
            "spec.contact",
            "Invalid value: \"string\": failed rule: url(self).getScheme() == 'https'",
        ),
    }
    malformed = await create(api_server, client, website("q3", image="i", memory="1 core"))
    assert malformed.status == 422
    assert [(c["field"], c["message"]) for c in malformed.body["details"]["causes"]] == [
        (  # quantity() is resource.ParseQuantity, its error Go's
            "spec.memory",
            'Invalid value: "string": quantities must match the regular expression '
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: at most 1Gi",
        )
    ]


async def test_bulk_loaded_custom_resources_read_defaulted(crd: ApiServer, client: Client) -> None:
    crd.bulk_load(
        WEBSITE,
        [{"metadata": {"name": f"b{i}", "namespace": "default"}, "spec": {}} for i in range(3)],
    )
    listed = await client.get(crd, WEBSITES)
    assert [i["spec"] for i in listed.body["items"]] == [{"replicas": 1}] * 3


async def test_a_crd_with_a_rule_that_does_not_compile_is_422(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": "self.replicas >"}]
    reply = await client.request(api_server, "POST", CRD_PATH, crd)
    assert reply.status == 422
    cause = reply.body["details"]["causes"][0]
    assert cause["field"] == (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )
    assert "compilation failed" in cause["message"]


async def test_a_crd_whose_default_breaks_its_schema_is_422(
    api_server: ApiServer, client: Client
) -> None:
    crd = website_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["replicas"]["default"] = -1
    reply = await client.request(api_server, "POST", CRD_PATH, crd)
    assert reply.status == 422
    field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default"
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: -1: {field} in body should be greater than or equal to 0",
            "field": field,
        }
    ]
