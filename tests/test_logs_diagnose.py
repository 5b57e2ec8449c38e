"""Logs that diagnose without leaking: a failed reconcile's record names the failed request (HTTP
status, reason, verb, resource, namespace, name) and the application's line, never the library's;
DEBUG shows every request (client-go's -v=6), watches opening and closing with why, and relists;
successful reconciles stay at DEBUG; under ``configure_logging`` every record has a timestamp; and
no record shows an object's data or the token, whatever renderer the application uses."""

from __future__ import annotations

import io
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from informer import CONFIGMAPS, NAMESPACES, SECRETS, Client, Controller, Informer
from informer._log import capture_logs, get_logger
from informer.controller import Request
from informer.log_config import configure_logging
from informer.testing import ApiServer, Fault
from informer.transport import Transport
from tests.conftest import FAST, cm, wait_until

THIS_FILE = str(Path(__file__).resolve())
SECRET_VALUE = "aHVudGVyMi1zM2NyM3Q="
TOKEN = "s3cr3t-b3ar3r-t0k3n"


def line_of(marker: str) -> int:
    """The line of this file that contains ``marker`` (where the reconcile calls the library)."""
    for number, text in enumerate(Path(__file__).read_text().splitlines(), 1):
        if marker in text and "line_of(" not in text:
            return number
    raise AssertionError(marker)


async def test_a_failed_reconcile_names_the_request_and_the_applications_line(
    api_server: ApiServer,
) -> None:
    api_server.create(NAMESPACES, {"metadata": {"name": "ns"}})
    api_server.create(CONFIGMAPS, cm("a", "ns"))
    api = api_server.api_client()
    client = Client(api)

    async def reconcile(request: Request) -> None:
        await client.get(CONFIGMAPS, "missing", request.namespace)  # <- the failing call

    try:
        async with Informer(Transport(api), CONFIGMAPS, options=FAST) as inf:
            with capture_logs() as logs:
                async with Controller(reconcile, for_=inf, name="mirror") as ctl:
                    await wait_until(lambda: ctl.statistics().errors >= 1)
    finally:
        await api.close()
    failures = [e for e in logs if e["event"] == "controller.reconciled" and "error" in e]
    record = failures[0]
    assert record["log_level"] == "warning"
    assert record["error"] == (
        f"NotFound in reconcile ({THIS_FILE}:{line_of('# <- the failing call')})"
    )
    assert "informer/client.py" not in repr(record)
    assert {
        k: record[k] for k in ("status", "reason", "verb", "resource", "namespace", "name")
    } == {
        "status": 404,
        "reason": "NotFound",
        "verb": "get",
        "resource": "configmaps",
        "namespace": "ns",
        "name": "missing",
    }
    assert "not found" not in repr(record)  # the message (it can quote object data) is not


async def test_successful_reconciles_are_logged_at_debug(api_server: ApiServer) -> None:
    api_server.create(CONFIGMAPS, cm("a"))

    async def reconcile(request: Request) -> None:
        return None

    api = api_server.api_client()
    try:
        async with Informer(Transport(api), CONFIGMAPS, options=FAST) as inf:
            with capture_logs() as logs:
                async with Controller(reconcile, for_=inf) as ctl:
                    await wait_until(lambda: ctl.statistics().succeeded == 1)
    finally:
        await api.close()
    [record] = [e for e in logs if e["event"] == "controller.reconciled"]
    assert record["log_level"] == "debug" and record["result"] == "succeeded"


async def test_debug_shows_each_request_each_watch_with_why_it_closed_and_relists(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, cm("a", "ns"))
    api_server.faults.add(Fault(verb="watch", nth=1, status=410))  # the first watch expires
    api = api_server.api_client()
    try:
        with capture_logs() as logs:
            async with Informer(
                Transport(api), CONFIGMAPS, namespace="ns", options=FAST, name="watcher"
            ) as inf:
                await inf.wait_for_sync(timeout=10)
                await api_server.wait_for_requests(lambda r: r.verb == "watch", count=2)
                api_server.disrupt_watches(Fault(close_after_events=0))
                await api_server.wait_for_requests(lambda r: r.verb == "watch", count=3)
                await wait_until(
                    lambda: sum(e["event"] == "reflector.watch_started" for e in logs) >= 3
                )
    finally:
        await api.close()
    requests = [e for e in logs if e["event"] == "transport.request"]
    assert all(e["log_level"] == "debug" for e in requests)
    first = requests[0]
    assert first["verb"] == "GET" and first["status"] == 200
    assert first["path"].startswith("/api/v1/namespaces/ns/configmaps?")
    assert first["host"] == f"127.0.0.1:{api_server.port}"
    assert isinstance(first["duration"], float)
    assert any(e["status"] == 410 and "watch=true" in e["path"] for e in requests)
    closed = [e["why"] for e in logs if e["event"] == "reflector.watch_closed"]
    assert closed[:2] == ["Expired", "server_closed_early"]
    assert any(e["event"] == "reflector.relist" for e in logs)
    reflector = [e for e in logs if e["event"].startswith("reflector.")]
    assert all(e["informer"] == "watcher" and e["namespace"] == "ns" for e in reflector)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(**config)


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("fmt", ["json", "console"])
def test_every_record_has_a_timestamp_under_configure_logging(fmt: str) -> None:
    out = io.StringIO()
    configure_logging("debug", fmt, stream=out)
    get_logger("informer.reflector").bind(resource="configmaps").info("reflector.relist", rv="5")
    logging.getLogger("app").info("hello")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    if fmt == "json":
        records = [json.loads(line) for line in lines]
        assert [r["event"] for r in records] == ["reflector.relist", "hello"]
        assert all(r["timestamp"].endswith("Z") for r in records)
    else:  # both lines start with the ISO timestamp
        assert all(line[:4].isdigit() and line[10] == "T" for line in lines), lines


def renderers() -> list[logging.Handler]:
    """Handlers with the renderers people use (rich tracebacks print every frame's locals)."""
    handlers: list[logging.Handler] = []
    for processor in (
        structlog.dev.ConsoleRenderer(colors=False),
        structlog.processors.JSONRenderer(),
        structlog.processors.KeyValueRenderer(),
        structlog.processors.LogfmtRenderer(),
    ):
        handler = logging.StreamHandler(io.StringIO())
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.dict_tracebacks,
                    processor,
                ]
            )
        )
        handlers.append(handler)
    plain = logging.StreamHandler(io.StringIO())
    plain.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s %(pathname)s %(message)s")
    )
    handlers.append(plain)
    return handlers


async def test_request_and_reconcile_records_show_no_object_data_or_token(
    api_server: ApiServer,
) -> None:
    api_server.create(NAMESPACES, {"metadata": {"name": "ns"}})
    api_server.create(CONFIGMAPS, cm("a", "ns"))
    invalid = f'Secret "s" is invalid: data[password]: Invalid value: "{SECRET_VALUE}"'
    api_server.faults.add(Fault(verb="create", status=422, reason="Invalid", message=invalid))
    configuration = api_server.configuration()
    configuration.api_key = {"BearerToken": TOKEN}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    from kubernetes_asyncio.client import ApiClient

    api = ApiClient(configuration=configuration)
    client = Client(api)
    sent: dict[str, str] = {}
    await api.update_params_for_auth(sent, [], ["BearerToken"])
    assert sent == {"authorization": f"Bearer {TOKEN}"}  # every request carries the token

    async def reconcile(request: Request) -> None:
        secret: dict[str, Any] = {
            "metadata": {"name": "s", "namespace": request.namespace},
            "data": {"password": SECRET_VALUE},
        }
        await client.create(SECRETS, secret)

    handlers = renderers()
    root = logging.getLogger("informer")
    for handler in handlers:
        root.addHandler(handler)
    old = root.level
    root.setLevel(logging.DEBUG)
    try:
        async with Informer(Transport(api), CONFIGMAPS, options=FAST) as inf:
            async with Controller(reconcile, for_=inf, name="mirror") as ctl:
                await wait_until(lambda: ctl.statistics().errors >= 1)
    finally:
        for handler in handlers:
            root.removeHandler(handler)
        root.setLevel(old)
        await api.close()
    as_json = handlers[1]
    assert isinstance(as_json, logging.StreamHandler)
    records = [json.loads(line) for line in as_json.stream.getvalue().splitlines()]
    failure = next(r for r in records if r["event"] == "controller.reconciled")
    assert {
        k: failure[k] for k in ("status", "reason", "verb", "resource", "namespace", "name")
    } == {
        "status": 422,
        "reason": "Invalid",
        "verb": "create",
        "resource": "secrets",
        "namespace": "ns",
        "name": "s",  # a create's URL names no object: the body's name
    }
    for handler in handlers:
        assert isinstance(handler, logging.StreamHandler)
        text = handler.stream.getvalue()
        assert "controller.reconciled" in text and "transport.request" in text
        assert "422" in text and "Invalid" in text and "secrets" in text  # what failed is said
        assert "test_logs_diagnose.py" in text  # and the application's line
        assert SECRET_VALUE not in text and "password" not in text
        assert TOKEN not in text


async def test_a_reconcile_whose_request_found_no_server_names_the_request(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, cm("a", "ns"))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    from kubernetes_asyncio.client import ApiClient, Configuration

    api = api_server.api_client()
    nowhere = ApiClient(configuration=Configuration(host=f"http://127.0.0.1:{closed}"))
    client = Client(nowhere)

    async def reconcile(request: Request) -> None:
        await client.delete(CONFIGMAPS, request.name, request.namespace)  # <- unreachable

    try:
        async with Informer(Transport(api), CONFIGMAPS, options=FAST) as inf:
            with capture_logs() as logs:
                async with Controller(reconcile, for_=inf) as ctl:
                    await wait_until(lambda: ctl.statistics().errors >= 1)
    finally:
        await api.close()
        await nowhere.close()
    record = next(e for e in logs if e["event"] == "controller.reconciled" and "error" in e)
    assert record["error"] == (
        f"TransportError in reconcile ({THIS_FILE}:{line_of('# <- unreachable')})"
    )
    assert {k: record[k] for k in ("verb", "resource", "namespace", "name")} == {
        "verb": "delete",
        "resource": "configmaps",
        "namespace": "ns",
        "name": "a",
    }
    assert "status" not in record  # no HTTP answer
