"""Admission webhooks: the server calls the webhooks of Mutating/ValidatingWebhookConfigurations
as the apiserver does (rules, selectors, JSONPatch answers, refusals with the webhook's code,
failure policies, dry run and side effects, warnings), here with a small aiohttp webhook served
over HTTPS with a certificate of a self-signed CA given as ``caBundle``."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from informer.testing import ApiServer
from informer.testing._tls.certificates import CertificateAuthority

Json = dict[str, Any]


@dataclass
class Webhook:
    """An HTTPS admission webhook: /mutate adds a label, /validate refuses ``data.forbidden``
    and warns on ``data.warn``; every review it got is kept."""

    url: str = ""
    ca_bundle: str = ""
    reviews: list[Json] = field(default_factory=list)

    async def mutate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        req = review["request"]
        answer: Json = {"uid": req["uid"], "allowed": True}
        if req["operation"] in ("CREATE", "UPDATE"):
            labels = (req["object"]["metadata"] or {}).get("labels")
            ops: list[Json] = []
            if labels is None:
                ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
            ops.append({"op": "add", "path": "/metadata/labels/mutated", "value": "yes"})
            answer["patchType"] = "JSONPatch"
            answer["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
        )

    async def validate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        req = review["request"]
        obj = req["object"] or req["oldObject"]
        data = obj.get("data") or {}
        answer: Json = {"uid": req["uid"], "allowed": "forbidden" not in data}
        if "forbidden" in data:
            answer["status"] = {"code": 422, "message": f"forbidden is {data['forbidden']}"}
        if "warn" in data:
            answer["warnings"] = [f"warned: {data['warn']}"]
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
        )

    async def hang(self, request: web.Request) -> web.Response:
        self.reviews.append(await request.json())
        await asyncio.Event().wait()  # never answers; cancelled when the caller gives up
        raise AssertionError("unreachable")

    async def relabel(self, request: web.Request) -> web.Response:
        """A second mutating webhook: adds ``second: yes`` (the first is then reinvoked)."""
        review = await request.json()
        self.reviews.append(review)
        ops = [{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]
        answer = {
            "uid": review["request"]["uid"],
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(ops).encode()).decode(),
        }
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
        )


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    ca = CertificateAuthority()
    hook = Webhook(ca_bundle=base64.b64encode(ca.pem).decode())
    app = web.Application()
    app.router.add_post("/mutate", hook.mutate)
    app.router.add_post("/validate", hook.validate)
    app.router.add_post("/hang", hook.hang)
    app.router.add_post("/relabel", hook.relabel)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ca.issue().server_context())
    await site.start()
    hook.url = f"https://127.0.0.1:{runner.addresses[0][1]}"
    yield hook
    await runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    async with ApiServer() as server:
        yield server


def configuration(kind: str, name: str, client: Json, **hook: Any) -> Json:
    entry: Json = {
        "name": name,
        "clientConfig": client,
        "rules": [
            {
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **hook,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [entry],
    }


def both(webhook: Webhook, **hook: Any) -> list[Json]:
    return [
        configuration(
            "MutatingWebhookConfiguration",
            "mutate.example.com",
            {"url": f"{webhook.url}/mutate", "caBundle": webhook.ca_bundle},
            **hook,
        ),
        configuration(
            "ValidatingWebhookConfiguration",
            "validate.example.com",
            {"url": f"{webhook.url}/validate", "caBundle": webhook.ca_bundle},
            **hook,
        ),
    ]


def cm(name: str, **data: str) -> Json:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def post(
    session: aiohttp.ClientSession, server: ApiServer, obj: Json, query: str = ""
) -> tuple[int, Json, list[str]]:
    url = f"{server.url}/api/v1/namespaces/default/configmaps{query}"
    async with session.post(url, json=obj) as response:
        return response.status, await response.json(), response.headers.getall("Warning", [])


async def test_mutating_then_validating_webhooks_admit_creates_updates_and_deletes(
    server: ApiServer, webhook: Webhook
) -> None:
    server.seed(both(webhook))
    async with aiohttp.ClientSession() as session:
        code, created, warnings = await post(session, server, cm("kept", warn="careful"))
        assert code == 201
        assert created["metadata"]["labels"] == {"mutated": "yes"}
        stored = server.get(server.registry.resource_of("v1", "ConfigMap"), "kept", "default")
        assert stored is not None and stored["metadata"]["labels"] == {"mutated": "yes"}
        assert warnings == ['299 - "warned: careful"']

        mutate_review, validate_review = webhook.reviews[-2:]
        assert mutate_review["apiVersion"] == "admission.k8s.io/v1"
        assert list(mutate_review) == ["kind", "apiVersion", "request"]  # Go's field order
        request = mutate_review["request"]
        assert list(request) == [
            "uid",
            "kind",
            "resource",
            "requestKind",
            "requestResource",
            "name",
            "namespace",
            "operation",
            "userInfo",
            "object",
            "oldObject",
            "dryRun",
            "options",
        ]
        assert request["operation"] == "CREATE"
        assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert request["namespace"] == "default" and request["name"] == "kept"
        assert request["options"]["kind"] == "CreateOptions"
        assert request["oldObject"] is None and request["dryRun"] is False
        assert "uid" not in request["object"]["metadata"]  # set after mutating admission
        # validating webhooks see the mutated object
        assert validate_review["request"]["object"]["metadata"]["labels"] == {"mutated": "yes"}

        # refused: the webhook's code and message, as the apiserver words it
        code, status, _ = await post(session, server, cm("refused", forbidden="x"))
        assert code == 422
        assert status["kind"] == "Status" and status["code"] == 422
        assert status["message"] == (
            'admission webhook "validate.example.com" denied the request: forbidden is x'
        )
        assert server.get(server.registry.resource_of("v1", "ConfigMap"), "refused") is None

        # updates by merge patch: mutated again, oldObject given; refused ones change nothing
        url = f"{server.url}/api/v1/namespaces/default/configmaps/kept"
        merge = {"Content-Type": "application/merge-patch+json"}
        patch = {"metadata": {"labels": None}, "data": {"more": "1"}}
        async with session.patch(url, data=json.dumps(patch), headers=merge) as response:
            assert response.status == 200
            patched = await response.json()
        assert patched["metadata"]["labels"] == {"mutated": "yes"}
        assert patched["data"] == {"warn": "careful", "more": "1"}
        request = webhook.reviews[-1]["request"]
        assert request["operation"] == "UPDATE" and request["options"]["kind"] == "PatchOptions"
        assert request["oldObject"]["data"] == {"warn": "careful"}
        async with session.patch(
            url, data=json.dumps({"data": {"forbidden": "y"}}), headers=merge
        ) as response:
            assert response.status == 422
        stored = server.get(server.registry.resource_of("v1", "ConfigMap"), "kept", "default")
        assert stored is not None and "forbidden" not in stored["data"]

        # deletes: validating webhooks get the old object
        async with session.delete(url) as response:
            assert response.status == 200
        assert webhook.reviews[-1]["request"]["operation"] == "DELETE"
        assert webhook.reviews[-1]["request"]["object"] is None


async def test_failure_policy_decides_when_a_webhook_cannot_be_called(
    server: ApiServer, webhook: Webhook
) -> None:
    unreachable = {"url": "https://127.0.0.1:1/validate", "caBundle": webhook.ca_bundle}
    server.seed([configuration("ValidatingWebhookConfiguration", "down.example.com", unreachable)])
    async with aiohttp.ClientSession() as session:
        code, status, _ = await post(session, server, cm("failed"))
        assert code == 500 and status["reason"] == "InternalError"
        assert status["message"].startswith(
            'Internal error occurred: failed calling webhook "down.example.com": '
            'failed to call webhook: Post "https://127.0.0.1:1/validate?timeout=10s"'
        )
        mapping = server.registry.resource_of(
            "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
        )
        assert mapping is not None
        current = server.get(mapping, "down.example.com")
        assert current is not None
        hook = {**current["webhooks"][0], "failurePolicy": "Ignore"}
        server.patch(mapping, "down.example.com", {"webhooks": [hook]})
        code, _, _ = await post(session, server, cm("ignored"))
        assert code == 201


async def test_a_wrong_ca_bundle_is_a_call_failure(server: ApiServer, webhook: Webhook) -> None:
    other = base64.b64encode(CertificateAuthority().pem).decode()
    client = {"url": f"{webhook.url}/validate", "caBundle": other}
    server.seed([configuration("ValidatingWebhookConfiguration", "wrong.example.com", client)])
    async with aiohttp.ClientSession() as session:
        code, status, _ = await post(session, server, cm("untrusted"))
    assert code == 500 and "certificate verify failed" in status["message"]
    assert webhook.reviews == []


async def test_dry_run_needs_webhooks_without_side_effects(
    server: ApiServer, webhook: Webhook
) -> None:
    server.seed(both(webhook, sideEffects="Some"))
    async with aiohttp.ClientSession() as session:
        code, status, _ = await post(session, server, cm("dry"), "?dryRun=All")
        assert code == 400
        assert status["message"] == (
            'admission webhook "mutate.example.com" does not support dry run'
        )
        code, created, _ = await post(session, server, cm("wet"))
        assert code == 201 and created["metadata"]["labels"] == {"mutated": "yes"}


async def test_selectors_and_rules_choose_the_webhooks_called(
    server: ApiServer, webhook: Webhook
) -> None:
    server.seed(both(webhook, objectSelector={"matchLabels": {"admit": "yes"}}))
    async with aiohttp.ClientSession() as session:
        code, created, _ = await post(session, server, cm("unlabelled", forbidden="x"))
        assert code == 201 and "labels" not in created["metadata"]
        labelled = cm("labelled")
        labelled["metadata"]["labels"] = {"admit": "yes"}
        code, created, _ = await post(session, server, labelled)
        assert code == 201
        assert created["metadata"]["labels"] == {"admit": "yes", "mutated": "yes"}
        # a resource no rule names is not admitted
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
        async with session.post(
            f"{server.url}/api/v1/namespaces/default/secrets", json=secret
        ) as response:
            assert response.status == 201
    assert {r["request"]["name"] for r in webhook.reviews} == {"labelled"}


async def test_service_references_are_called_through_webhook_services(
    server: ApiServer, webhook: Webhook
) -> None:
    service = {
        "service": {"namespace": "hooks", "name": "admission", "path": "/validate"},
        "caBundle": webhook.ca_bundle,
    }
    server.seed([configuration("ValidatingWebhookConfiguration", "svc.example.com", service)])
    server.webhook_services[("hooks", "admission")] = webhook.url
    async with aiohttp.ClientSession() as session:
        code, status, _ = await post(session, server, cm("via-service", forbidden="z"))
    assert code == 422
    assert status["message"].endswith("denied the request: forbidden is z")


async def test_a_webhook_past_its_timeout_fails_the_request(
    server: ApiServer, webhook: Webhook
) -> None:
    client = {"url": f"{webhook.url}/hang", "caBundle": webhook.ca_bundle}
    server.seed(
        [
            configuration(
                "ValidatingWebhookConfiguration", "slow.example.com", client, timeoutSeconds=1
            )
        ]
    )
    async with aiohttp.ClientSession() as session:
        code, status, _ = await post(session, server, cm("timed-out"))
    assert code == 500
    assert status["message"].endswith(
        f'Post "{webhook.url}/hang?timeout=1s": context deadline exceeded'
    )


async def test_server_side_apply_creates_are_mutated_and_mutators_reinvoked_if_needed(
    server: ApiServer, webhook: Webhook
) -> None:
    first, _ = both(webhook, reinvocationPolicy="IfNeeded")
    second = configuration(
        "MutatingWebhookConfiguration",
        "second.example.com",
        {"url": f"{webhook.url}/relabel", "caBundle": webhook.ca_bundle},
    )
    server.seed([first, second])
    url = f"{server.url}/api/v1/namespaces/default/configmaps/applied?fieldManager=test"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    async with aiohttp.ClientSession() as session:
        async with session.patch(url, data=json.dumps(cm("applied")), headers=headers) as answer:
            assert answer.status == 201
            applied = await answer.json()
    assert applied["metadata"]["labels"] == {"mutated": "yes", "second": "yes"}
    operations = [r["request"]["operation"] for r in webhook.reviews]
    assert operations == ["CREATE", "CREATE", "CREATE"]  # first, second, first again
    assert webhook.reviews[0]["request"]["options"]["kind"] == "PatchOptions"


async def test_match_conditions_choose_the_webhooks_called_and_errors_follow_failure_policy(
    server: ApiServer, webhook: Webhook
) -> None:
    conditions = [
        {"name": "not-kube-system", "expression": 'request.namespace != "kube-system"'},
        {"name": "admitted", "expression": 'object.metadata.labels["admit"] == "yes"'},
    ]
    server.seed(both(webhook, matchConditions=conditions))
    async with aiohttp.ClientSession() as session:
        labelled = cm("labelled", forbidden="x")
        labelled["metadata"]["labels"] = {"admit": "yes"}
        code, status, _ = await post(session, server, labelled)
        assert code == 422 and "forbidden is x" in status["message"]
        other = cm("other", forbidden="x")
        other["metadata"]["labels"] = {"admit": "no"}
        code, created, _ = await post(session, server, other)  # a false condition: not called
        assert code == 201 and created["metadata"]["labels"] == {"admit": "no"}
        # no labels: the second condition fails to evaluate, the webhook fails closed
        code, status, _ = await post(session, server, cm("unlabelled"))
        assert code == 403 and status["reason"] == "Forbidden"
        assert status["message"] == (
            'configmaps "unlabelled" is forbidden: expression '
            '\'object.metadata.labels["admit"] == "yes"\' resulted in error: no such key: labels'
        )
        assert status["details"] == {"name": "unlabelled", "kind": "configmaps"}
    assert {r["request"]["name"] for r in webhook.reviews} == {"labelled"}


async def test_a_false_match_condition_wins_over_errors_and_ignore_skips_on_errors(
    server: ApiServer, webhook: Webhook
) -> None:
    failing = {"name": "fails", "expression": 'object.data["missing"] == "x"'}
    false = {"name": "false", "expression": "oldObject != null"}
    client = {"url": f"{webhook.url}/validate", "caBundle": webhook.ca_bundle}
    server.seed(
        [
            configuration(
                "ValidatingWebhookConfiguration",
                "false.example.com",
                client,
                matchConditions=[failing, false],
            ),
            configuration(
                "ValidatingWebhookConfiguration",
                "ignore.example.com",
                client,
                matchConditions=[failing],
                failurePolicy="Ignore",
            ),
        ]
    )
    async with aiohttp.ClientSession() as session:
        code, _, _ = await post(session, server, cm("created", forbidden="x"))
    assert code == 201
    assert webhook.reviews == []
