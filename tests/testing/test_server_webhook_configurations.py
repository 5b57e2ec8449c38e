"""Admission webhook configurations are validated as a v1.36 apiserver validates them
(``pkg/apis/admissionregistration/validation``): one 422 naming every problem, in the
apiserver's order, so a webhook registration that a cluster refuses fails here too."""

from __future__ import annotations

from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

GROUP = "/apis/admissionregistration.k8s.io/v1"
VALIDATING = f"{GROUP}/validatingwebhookconfigurations"
MUTATING = f"{GROUP}/mutatingwebhookconfigurations"
SERVICE = {"service": {"name": "hooks", "namespace": "system", "path": "/validate"}}


def configuration(kind: str, name: str, *webhooks: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }


def hook(name: str = "check.example.com", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": SERVICE,
        **fields,
    }


def causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(cause["field"], cause["message"]) for cause in body["details"]["causes"]]


async def test_a_webhook_without_what_the_apiserver_requires_is_invalid(
    api_server: ApiServer, client: Client
) -> None:
    bare = configuration("ValidatingWebhookConfiguration", "bare", {"name": "check"})

    reply = await client.request(api_server, "POST", VALIDATING, bare)

    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert causes(reply.body) == [
        (
            "webhooks[0].name",
            'Invalid value: "check": should be a domain with at least three segments separated '
            "by dots",
        ),
        ("webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun"),
        ("webhooks[0].clientConfig", "Required value: exactly one of url or service is required"),
        ("webhooks[0].admissionReviewVersions", "Required value: must specify one of v1, v1beta1"),
    ]
    assert reply.body["message"].startswith(
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "bare" is invalid: ['
    )
    assert (await client.get(api_server, f"{VALIDATING}/bare")).status == 404


async def test_rules_url_and_policies_of_a_webhook_are_checked(
    api_server: ApiServer, client: Client
) -> None:
    rules = [
        {
            "operations": ["*", "CREATE", "PATCH"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["*/*", "pods"],
            "scope": "Everywhere",
        }
    ]
    bad = hook(
        rules=rules,
        clientConfig={"url": "http://admin@hooks.example.com/check?x=1#top"},
        failurePolicy="Sometimes",
        timeoutSeconds=31,
        sideEffects="Some",
        objectSelector={"matchExpressions": [{"key": "app", "operator": "Equals"}]},
    )

    reply = await client.request(
        api_server, "POST", VALIDATING, configuration("ValidatingWebhookConfiguration", "r", bad)
    )

    assert reply.status == 422
    at = "webhooks[0]."
    form = "; desired format: https://host[/path]"
    operations = 'supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"'
    assert causes(reply.body) == [
        (
            at + "rules[0].operations",
            'Invalid value: ["*","CREATE","PATCH"]: if \'*\' is present, must not specify other '
            "operations",
        ),
        (at + "rules[0].operations[2]", f'Unsupported value: "PATCH": {operations}'),
        (
            at + "rules[0].resources",
            'Invalid value: ["*/*","pods"]: if \'*/*\' is present, must not specify other '
            "resources",
        ),
        (
            at + "rules[0].scope",
            'Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced"',
        ),
        (
            at + "failurePolicy",
            'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"',
        ),
        (
            at + "sideEffects",
            'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
        ),
        (
            at + "timeoutSeconds",
            "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ),
        (
            at + "objectSelector.matchExpressions[0].operator",
            'Invalid value: "Equals": not a valid selector operator',
        ),
        (
            at + "clientConfig.url",
            f"Invalid value: \"http\": 'https' is the only allowed URL scheme{form}",
        ),
        (
            at + "clientConfig.url",
            'Invalid value: "admin": user information is not permitted in the URL',
        ),
        (at + "clientConfig.url", 'Invalid value: "top": fragments are not permitted in the URL'),
        (
            at + "clientConfig.url",
            'Invalid value: "x=1": query parameters are not permitted in the URL',
        ),
    ]


async def test_a_mutating_configuration_checks_its_service_reinvocation_and_names(
    api_server: ApiServer, client: Client
) -> None:
    service = {"service": {"name": "hooks", "namespace": "system", "port": 70000, "path": "/a//b"}}
    first = hook(
        clientConfig=service,
        reinvocationPolicy="Always",
        matchConditions=[
            {"name": "only-pods", "expression": "true"},
            {"name": "only-pods", "expression": " "},
        ],
        admissionReviewVersions=["v2", "v2"],
    )

    reply = await client.request(
        api_server,
        "POST",
        MUTATING,
        configuration("MutatingWebhookConfiguration", "m", first, hook()),
    )

    assert reply.status == 422
    at = "webhooks[0]."
    assert causes(reply.body) == [
        (
            at + "reinvocationPolicy",
            'Unsupported value: "Always": supported values: "IfNeeded", "Never"',
        ),
        (
            at + "clientConfig.service.port",
            "Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
        ),
        (at + "clientConfig.service.path", 'Invalid value: "/a//b": segment[1] may not be empty'),
        (at + "matchConditions[1].expression", "Required value"),
        (at + "matchConditions[1].name", 'Duplicate value: "only-pods"'),
        (at + "admissionReviewVersions[1]", 'Invalid value: "v2": duplicate version'),
        (
            at + "admissionReviewVersions",
            'Invalid value: ["v2","v2"]: must include at least one of v1, v1beta1',
        ),
        ("webhooks[1].name", 'Duplicate value: "check.example.com"'),
    ]


async def test_a_valid_configuration_is_stored_with_its_defaults(
    api_server: ApiServer, client: Client
) -> None:
    rules = [
        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
    ]

    reply = await client.request(
        api_server,
        "POST",
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "ok", hook(rules=rules)),
    )

    assert reply.status == 201, reply.text
    stored = reply.body["webhooks"][0]
    assert stored["failurePolicy"] == "Fail" and stored["timeoutSeconds"] == 10
    assert stored["rules"][0]["scope"] == "*"
