"""Log lines never carry the server's text: a Status ``message`` (a validation error quotes the
field's value, an admission webhook answers any text, a conflict quotes names), its ``details``
or a ``reason`` that is not one. What an operator needs to act is there instead: the status, the
reason, the request (verb, resource, namespace) and what the Status says was refused."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog
from conftest import running_informer, wait_until
from kubernetes_asyncio.client import ApiClient

from informer import Client, Controller, LeaderElector
from informer.controller import Request
from informer.errors import Forbidden, TransportError
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault
from informer.transport import Transport

MARKER = "s3cr3t-pl4nted-t0ken"


def planted(code: int, reason: str) -> dict[str, Any]:
    """A Status whose every text field quotes the marker (as real ones quote object data)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'configmaps "{MARKER}" is forbidden: data[password]: "{MARKER}"',
        "reason": reason,
        "code": code,
        "details": {
            "name": MARKER,
            "kind": "configmaps",
            "causes": [{"reason": "FieldValueInvalid", "message": MARKER, "field": MARKER}],
        },
    }


@contextmanager
def rendered() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """The library's records at DEBUG through structlog's ConsoleRenderer (rich tracebacks when
    rich is installed) and JSONRenderer (with dict_tracebacks), routed through stdlib logging."""
    console, as_json = io.StringIO(), io.StringIO()
    handlers: list[logging.Handler] = []
    meta = structlog.stdlib.ProcessorFormatter.remove_processors_meta
    for stream, processors in (
        (console, [meta, structlog.dev.ConsoleRenderer(colors=False)]),
        (as_json, [meta, structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]),  # noqa: E501
    ):
        handler = logging.StreamHandler(stream)
        handler.setFormatter(structlog.stdlib.ProcessorFormatter(processors=processors))
        handlers.append(handler)
    root = logging.getLogger("informer")
    old = root.level
    root.setLevel(logging.DEBUG)
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield console, as_json
    finally:
        for handler in handlers:
            root.removeHandler(handler)
        root.setLevel(old)


def records(as_json: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in as_json.getvalue().splitlines()]


async def test_status_errors_of_lists_and_watches_log_no_server_text(
    api_server: ApiServer,
) -> None:
    server = api_server
    for name in ("a", "b", "c"):  # two pages of two
        server.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "d"}})
    server.faults.add(Fault(verb="list", page=1, status=403, status_body=planted(403, "Forbidden")))
    server.faults.add(Fault(verb="list", page=2, status=500, status_body=planted(500, "Internal")))
    server.faults.add(Fault(verb="watch", status=410, status_body=planted(410, "Expired")))
    webhook = planted(500, f"denied: {MARKER}")  # a reason that is the webhook's text
    server.faults.add(Fault(verb="watch", nth=2, error_event=webhook))
    with rendered() as (console, as_json):
        async with running_informer(server, CONFIGMAPS, namespace="d", sync=False):

            def logged() -> bool:
                events = [(r["event"], r.get("phase")) for r in records(as_json)]
                return {
                    ("reflector.api_error", "list"),
                    ("reflector.page_retry", None),
                    ("reflector.watch_expired", "watch"),
                    ("reflector.api_error", "watch"),
                } <= set(events)

            await wait_until(logged)
    for text in (console.getvalue(), as_json.getvalue()):
        assert MARKER not in text
    logs = records(as_json)
    refused = next(r for r in logs if r["event"] == "reflector.api_error" and r["phase"] == "list")
    assert {k: refused.get(k) for k in ("error", "status", "reason", "kind")} == {
        "error": "Forbidden",
        "status": 403,
        "reason": "Forbidden",
        "kind": "configmaps",  # what the Status says was refused
    }
    assert {k: refused.get(k) for k in ("verb", "resource", "namespace")} == {
        "verb": "list",
        "resource": "configmaps",
        "namespace": "d",
    }
    assert refused["level"] == "warning"
    retried = next(r for r in logs if r["event"] == "reflector.page_retry")
    assert (retried["status"], retried["reason"], retried["verb"]) == (500, "Internal", "list")
    expired = next(r for r in logs if r["event"] == "reflector.watch_expired")
    assert (expired["status"], expired["reason"], expired["verb"]) == (410, "Expired", "watch")
    ended = next(r for r in logs if r["event"] == "reflector.api_error" and r["phase"] == "watch")
    assert ended["status"] == 500 and ended["reason"] == "<not an identifier>"
    closed = [r["why"] for r in logs if r["event"] == "reflector.watch_closed"]
    assert "Expired" in closed and "ApiError" in closed  # the webhook's reason is not a why


async def test_a_refused_streaming_list_logs_no_server_text(api_server: ApiServer) -> None:
    server = api_server
    server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "d"}})
    server.faults.add(Fault(verb="watch", status=403, status_body=planted(403, "Forbidden")))
    with rendered() as (console, as_json):
        async with running_informer(server, CONFIGMAPS, sync=False, list_strategy="auto"):

            def logged() -> bool:
                return "reflector.streaming_list_failed" in as_json.getvalue()

            await wait_until(logged)
    for text in (console.getvalue(), as_json.getvalue()):
        assert MARKER not in text
    failed = next(r for r in records(as_json) if r["event"] == "reflector.streaming_list_failed")
    assert (failed["status"], failed["reason"], failed["verb"]) == (403, "Forbidden", "watch")


async def test_a_refused_lease_and_a_refused_reconcile_log_the_request_not_the_text(
    api_server: ApiServer,
) -> None:
    # RBAC on leases is the classic first failure of an operator: the record must say which
    # request was refused (verb, resource, namespace) and why (status, reason), no more
    server = api_server
    server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "d"}})
    denied = planted(403, f"denied: {MARKER}")  # an admission webhook's reason: text
    server.faults.add(Fault(verb="get", resource="leases", status=403, status_body=denied))
    server.faults.add(Fault(verb="get", resource="configmaps", status=403, status_body=denied))
    api = server.api_client()
    client = Client(api)

    async def reconcile(request: Request) -> None:
        await client.get(CONFIGMAPS, request.name, request.namespace)

    elector = LeaderElector(client, "op", "kube-system", identity="a")
    try:
        with rendered() as (console, as_json):
            campaign = asyncio.create_task(elector.run())
            try:
                async with running_informer(server, CONFIGMAPS) as inf:
                    async with Controller(reconcile, for_=inf, name="mirror") as ctl:
                        await wait_until(lambda: ctl.statistics().errors >= 1)
                        await wait_until(lambda: "leader_election.get_failed" in as_json.getvalue())
            finally:
                campaign.cancel()
                await asyncio.gather(campaign, return_exceptions=True)
    finally:
        await api.close()
    for text in (console.getvalue(), as_json.getvalue()):
        assert MARKER not in text
    logs = records(as_json)
    lease = next(r for r in logs if r["event"] == "leader_election.get_failed")
    want = ("status", "verb", "resource", "namespace", "name")
    assert {k: lease.get(k) for k in want} == {
        "status": 403,
        "verb": "get",
        "resource": "leases.coordination.k8s.io",
        "namespace": "kube-system",
        "name": "op",
    }
    reconciled = next(r for r in logs if r["event"] == "controller.reconciled")
    assert {k: reconciled.get(k) for k in (*want, "reason", "kind")} == {
        "status": 403,
        "verb": "get",
        "resource": "configmaps",
        "namespace": "d",
        "name": "a",
        "reason": "<not an identifier>",
        "kind": "configmaps",
    }


TOKEN = "eyJhbGciOiJSUzI1NiJ9.planted-bearer-token"


async def test_an_application_logging_our_errors_with_tracebacks_shows_no_text_or_token(
    api_server: ApiServer,
) -> None:
    # An application's own log.exception() of an error of ours: its str() and the locals of
    # the library's frames (rich tracebacks and dict_tracebacks print them) must not hold the
    # Status's text or the request's headers (the bearer token). The object the application
    # passed is a local of its own frames (and of the call's): its own data, its own choice.
    server = api_server
    server.faults.add(Fault(verb="create", status=403, status_body=planted(403, "Forbidden")))
    server.faults.add(Fault(verb="list", status=403, status_body=planted(403, "Forbidden")))
    configuration = server.configuration()
    configuration.api_key = {"BearerToken": TOKEN}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    nobody = server.configuration()
    nobody.host = f"http://127.0.0.1:{closed}"
    nobody.api_key, nobody.api_key_prefix = configuration.api_key, configuration.api_key_prefix
    app = logging.getLogger("informer.tests.app")  # under informer: rendered() sees it
    failures: list[type[BaseException]] = []
    with rendered() as (console, as_json):
        for config in (configuration, nobody):
            async with ApiClient(configuration=config) as api:
                cm = {"metadata": {"name": "a", "namespace": "d"}}
                try:
                    await Client(api).create(CONFIGMAPS, cm)
                except Exception as exc:
                    failures.append(type(exc))
                    app.exception("app.create_failed")
                try:
                    await Transport(api).list_page(CONFIGMAPS, namespace="d")
                except Exception as exc:
                    failures.append(type(exc))
                    app.exception("app.list_failed")
    assert failures == [Forbidden, Forbidden, TransportError, TransportError]
    for text in (console.getvalue(), as_json.getvalue()):
        assert "app.create_failed" in text and "403 Forbidden: create configmaps" in text
        assert "app.list_failed" in text and "403 Forbidden: list configmaps" in text
        assert "Traceback" in text or "exc_type" in text or "exception" in text
        assert MARKER not in text and TOKEN not in text
