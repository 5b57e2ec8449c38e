"""One failure, one error line: a part of a manager that fails while this replica leads is
logged once, as ``manager.part_failed`` naming the part, whatever renderer the application uses
(structlog's ConsoleRenderer and JSONRenderer through stdlib ``logging``); the election says at
warning that the term ended because of it, and ``run()`` raises the failure."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import structlog
from prometheus_client import CollectorRegistry

from informer import CONFIGMAPS, Manager
from informer.testing import ApiServer
from tests.conftest import FAST


@contextmanager
def rendered() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """What the ``informer`` loggers write through a ConsoleRenderer and a JSONRenderer."""
    streams = (io.StringIO(), io.StringIO())
    renderers = (structlog.dev.ConsoleRenderer(colors=False), structlog.processors.JSONRenderer())
    handlers = []
    for stream, renderer in zip(streams, renderers, strict=True):
        handler = logging.StreamHandler(stream)
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer]
            )
        )
        handlers.append(handler)
    root = logging.getLogger("informer")
    old = root.level
    root.setLevel(logging.INFO)
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield streams
    finally:
        for handler in handlers:
            root.removeHandler(handler)
        root.setLevel(old)


async def test_a_leader_part_failing_gives_one_error_line_that_names_it(
    api_server: ApiServer,
) -> None:
    manager = Manager(
        api_server.api_client(),
        host="127.0.0.1",
        port=0,
        options=FAST,
        registry=CollectorRegistry(),
        leader_election="one-line",
    )
    manager.informer(CONFIGMAPS)
    everywhere = asyncio.Event()

    async def runs_everywhere() -> None:  # the stop has a runnable to end before the election
        everywhere.set()
        await asyncio.Event().wait()

    async def fails() -> None:
        await everywhere.wait()
        raise ValueError("planted")

    manager.add_runnable(runs_everywhere, name="everywhere")
    manager.add_runnable(fails, name="fails", needs_leader=True)
    with rendered() as (console, as_json), pytest.raises(ValueError, match="planted"):
        await manager.run(handle_signals=False)
    errors = [line for line in console.getvalue().splitlines() if line.startswith("[error")]
    assert len(errors) == 1, errors
    assert "manager.part_failed" in errors[0] and "part=runnable:fails" in errors[0]
    records = [json.loads(line) for line in as_json.getvalue().splitlines()]
    assert [(r["event"], r.get("part")) for r in records if r["level"] == "error"] == [
        ("manager.part_failed", "runnable:fails")
    ]
    ended = [r for r in records if r["event"] == "leader_election.stopped_leading"]
    assert [(r["level"], r["reason"]) for r in ended] == [("warning", "leader_work_failed")]


class Fatal(BaseException):
    """Not an ``Exception``: a reconcile cannot be retried past it (a bug, like ``SystemExit``)."""


async def test_a_controller_failing_under_a_manager_gives_one_error_line_that_names_it(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    manager = Manager(
        api_server.api_client(),
        host="127.0.0.1",
        port=0,
        options=FAST,
        registry=CollectorRegistry(),
        leader_election="one-line-controller",
    )
    inf = manager.informer(CONFIGMAPS)

    async def reconcile(request: object) -> None:
        raise Fatal

    manager.controller(reconcile, for_=inf, name="mirror")
    with rendered() as (console, as_json), pytest.raises(Fatal):
        await manager.run(handle_signals=False)
    errors = [line for line in console.getvalue().splitlines() if line.startswith("[error")]
    assert len(errors) == 1, errors
    assert "manager.part_failed" in errors[0] and "part=controller:mirror" in errors[0]
    records = [json.loads(line) for line in as_json.getvalue().splitlines()]
    assert [(r["event"], r.get("part")) for r in records if r["level"] == "error"] == [
        ("manager.part_failed", "controller:mirror")
    ]
    # which worker ended and why is still said, at warning, by the controller
    (ended,) = [r for r in records if r["event"] == "controller.worker_ended"]
    assert ended["level"] == "warning" and ended["controller"] == "mirror"
    assert ended["error"].startswith("Fatal in reconcile")
