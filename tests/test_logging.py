"""The library's logs belong to the application: quiet by default, routed through stdlib
``logging`` (loggers under ``informer.``), structured for structlog's ``ProcessorFormatter``, and
never carrying object data, whatever renderer the application chose (rich tracebacks print every
frame's locals)."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import structlog
from conftest import running_informer

from informer.objects import KubeObject
from informer.resource import SECRETS
from informer.testing import ApiServer, Fault

ROOT = Path(__file__).resolve().parent.parent
SECRET_VALUE = "aHVudGVyMi1zM2NyM3Q="

SCRIPT = textwrap.dedent(
    """
    import asyncio, logging, sys
    from informer import CONFIGMAPS, BackoffPolicy, Informer, ReflectorOptions
    from informer.testing import ApiServer, Fault
    from informer.transport import Transport

    async def scenario():
        async with ApiServer() as server:
            server.faults.add(Fault(verb="list", status=403))  # reflector.api_error: a warning
            api = server.api_client()
            # the 403 is retried after a millisecond, not the default 0.8-1.6 s
            options = ReflectorOptions(list_strategy="list", backoff=BackoffPolicy(initial=0.001))
            try:
                async with Informer(Transport(api), CONFIGMAPS, options=options) as inf:
                    failed = asyncio.Event()
                    def on_add(obj, initial):
                        failed.set()
                        raise RuntimeError("handler failed")
                    inf.add_handler(on_add)
                    await inf.wait_for_sync(timeout=10)
                    server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "d"}})
                    await failed.wait()
                    await asyncio.sleep(0)
            finally:
                await api.close()

    asyncio.run(scenario())
    print("--- the application enables logs", flush=True)
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(name)s %(message)s")
    asyncio.run(scenario())
    """
)


def test_library_is_quiet_until_the_application_configures_logging() -> None:
    # Nothing configured: no line at all (structlog's default printed every event to stdout,
    # and stdlib's lastResort would print warnings to stderr). Then logging.basicConfig decides.
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""
    quiet, _, enabled = done.stdout.partition("--- the application enables logs\n")
    assert quiet == ""
    lines = enabled.splitlines()
    assert any(line.startswith("informer.reflector reflector.api_error ") for line in lines)
    assert any(line.startswith("informer.reflector reflector.synced ") for line in lines)
    assert any("informer.handler_failed" in line and "RuntimeError" in line for line in lines)


def test_logger_levels_decide() -> None:
    # the application's level on the "informer" logger filters the library's events
    from informer._log import get_logger

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger("informer")
    root.addHandler(handler)
    old = root.level
    try:
        root.setLevel(logging.WARNING)
        log = get_logger("informer.reflector").bind(resource="configmaps")
        log.info("reflector.synced", rv="5")
        log.warning("reflector.stale_list", list_rv="3", cache_rv="5")
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
    assert out.getvalue() == (
        "reflector.stale_list resource='configmaps' list_rv='3' cache_rv='5'\n"
    )


def _leaky(obj: KubeObject, initial: bool) -> None:
    data = obj.to_dict()  # a local holding the Secret: rich tracebacks print it
    raise ValueError(f"cannot use {data['data']['password']}")  # a message quoting it


async def test_failing_handler_on_a_secret_logs_no_data_with_any_renderer(
    api_server: ApiServer,
) -> None:
    server = api_server
    console = io.StringIO()
    rich_console = logging.StreamHandler(console)
    # ConsoleRenderer's default exception formatter is rich's (locals shown) when rich is installed
    rich_console.setFormatter(
        structlog.stdlib.ProcessorFormatter(processor=structlog.dev.ConsoleRenderer(colors=False))
    )
    as_json = io.StringIO()
    json_handler = logging.StreamHandler(as_json)
    json_handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.dict_tracebacks,
                structlog.processors.JSONRenderer(),
            ]
        )
    )
    plain = io.StringIO()
    plain_handler = logging.StreamHandler(plain)
    plain_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("informer")
    handlers = [rich_console, json_handler, plain_handler]
    for h in handlers:
        root.addHandler(h)
    old = root.level
    root.setLevel(logging.DEBUG)
    server.faults.add(Fault(verb="watch", malformed_line=True))  # a line of Secret data
    try:
        server.create(
            SECRETS,
            {"metadata": {"name": "s", "namespace": "d"}, "data": {"password": SECRET_VALUE}},
        )
        async with running_informer(server, SECRETS) as inf:
            handler = inf.add_handler(_leaky, name="leaky")
            await handler.wait_idle()
            assert handler.statistics().errors == 1
    finally:
        for h in handlers:
            root.removeHandler(h)
        root.setLevel(old)
    for text in (console.getvalue(), as_json.getvalue(), plain.getvalue()):
        assert "informer.handler_failed" in text and "ValueError" in text  # what failed is said
        assert "_leaky" in text  # and where
        assert SECRET_VALUE not in text and "password" not in text
