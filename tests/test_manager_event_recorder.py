"""The Manager's event recorders through real HTTP: one per reporting controller, writing through
the manager's client, and flushed on the graceful stop after the controllers (an event recorded
by a reconcile finishing during the stop is written) and before the API client closes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from informer import CONFIGMAPS, EVENTS, EventRecorder, Manager, ManagerState, Request
from informer.testing import ApiServer
from tests.conftest import FAST, cm, wait_until


def events(server: ApiServer) -> list[dict[str, Any]]:
    return server.list_objects(EVENTS, "default")


async def test_a_recorder_of_the_manager_writes_through_its_client_and_is_flushed_on_stop(
    api_server: ApiServer,
) -> None:
    obj = api_server.create(CONFIGMAPS, cm("a"))
    manager = Manager(api_server.api_client(), port=None, options=FAST, field_manager="tests")
    recorder = manager.event_recorder("example.com/mirror", reporting_instance="replica-0")
    assert isinstance(recorder, EventRecorder) and recorder.client is manager.client
    assert manager.event_recorder("example.com/mirror") is recorder  # one per controller
    assert manager.event_recorder("example.com/other") is not recorder
    taken = asyncio.Event()
    finish = asyncio.Event()

    async def reconcile(request: Request) -> None:
        obj = inf.store.get(request.name, request.namespace)
        assert obj is not None
        recorder.normal(obj, "Mirrored", "Update", "first")
        taken.set()
        await finish.wait()  # the stop comes while this reconcile is in flight
        for _ in range(3):  # a series, written by the recorder's close
            recorder.warning(obj, "Late", "Update", "recorded while the manager stops")

    inf = manager.informer(CONFIGMAPS)
    manager.controller(reconcile, for_=inf, shutdown_timeout=10.0)
    await manager.start()
    await asyncio.wait_for(taken.wait(), 10)
    stopping = asyncio.create_task(manager.stop())
    await wait_until(lambda: manager.state is ManagerState.STOPPING)
    finish.set()
    await stopping
    assert manager.failure is None
    written = {e["reason"]: e for e in events(api_server)}
    assert set(written) == {"Mirrored", "Late"}
    late = written["Late"]
    assert late["series"]["count"] == 3  # the count not yet written when the reconcile ended
    assert late["regarding"]["uid"] == obj["metadata"]["uid"]
    assert (late["reportingController"], late["reportingInstance"]) == (
        "example.com/mirror",
        "replica-0",
    )
    stats = recorder.statistics()
    assert (stats.created, stats.failed, stats.dropped, stats.pending) == (2, 0, 0, 0)
    with pytest.raises(RuntimeError):
        manager.event_recorder("example.com/mirror")  # stopped: nothing would write it


async def test_options_of_a_recorder_are_set_once(api_server: ApiServer) -> None:
    manager = Manager(api_server.api_client(), port=None)
    recorder = manager.event_recorder("example.com/mirror", burst=5)
    assert recorder.burst == 5
    with pytest.raises(ValueError, match="already"):
        manager.event_recorder("example.com/mirror", burst=10)
    await manager.stop()  # never started
    await manager.api.close()
