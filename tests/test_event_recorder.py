"""EventRecorder through real HTTP against the test API server: events.k8s.io/v1 Events about
objects, aggregated into series (client-go's EventSeries), rate-limited per object, retried on
transport errors, recreated when gone, and logged without their note.

The test server does not serve events.k8s.io/v1 as a built-in yet: each test registers it.
Time-based rules run on a ManualClock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from informer import CONFIGMAPS, EVENTS, NAMESPACES, Client, EventRecorder
from informer._log import capture_logs
from informer.testing import ApiServer, Fault
from informer.workqueue import ManualClock
from tests.conftest import cm, wait_until

WALL = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=UTC)


@asynccontextmanager
async def recorder(
    server: ApiServer, **options: Any
) -> AsyncIterator[tuple[EventRecorder, Client]]:
    server.register(EVENTS)
    api = server.api_client()
    client = Client(api, request_timeout=options.pop("request_timeout", 30.0))
    try:
        options.setdefault("wall_clock", lambda: WALL)
        rec = EventRecorder(client, "example.com/mirror", reporting_instance="mirror-0", **options)
        async with rec:
            yield rec, client
    finally:
        await api.close()


def events(server: ApiServer, namespace: str = "default") -> list[dict[str, Any]]:
    return sorted(server.list_objects(EVENTS, namespace), key=lambda e: e["metadata"]["name"])


def writes(server: ApiServer) -> list[str]:
    return [r.verb for r in server.requests if r.resource == "events" and r.status < 300]


async def test_an_event_names_its_object_and_reporter(api_server: ApiServer) -> None:
    obj = api_server.create(CONFIGMAPS, cm("a"))
    node = api_server.create(NAMESPACES, {"metadata": {"name": "team"}})
    async with recorder(api_server) as (rec, _):
        rec.normal(obj, "Mirrored", "Update", "copied 1 key")
        rec.warning(node, "Terminating", "Delete", "x" * 2000, resource=NAMESPACES)
        await rec.flush()
        [event] = [e for e in events(api_server) if e["reason"] == "Mirrored"]
        assert event["metadata"]["name"].startswith("a.")
        assert event["eventTime"] == "2026-11-25T12:00:00.123456Z"
        assert {k: event[k] for k in ("reportingController", "reportingInstance", "type")} == {
            "reportingController": "example.com/mirror",
            "reportingInstance": "mirror-0",
            "type": "Normal",
        }
        assert (event["reason"], event["action"], event["note"]) == (
            "Mirrored",
            "Update",
            "copied 1 key",
        )
        assert event["regarding"] == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "namespace": "default",
            "name": "a",
            "uid": obj["metadata"]["uid"],
            "resourceVersion": obj["metadata"]["resourceVersion"],
        }
        assert "series" not in event
        # a cluster-scoped object's Events are in "default"
        [cluster_scoped] = [e for e in events(api_server) if e["reason"] == "Terminating"]
        assert cluster_scoped["regarding"] == {
            "apiVersion": "v1",
            "kind": "Namespace",
            "name": "team",
            "uid": node["metadata"]["uid"],
            "resourceVersion": node["metadata"]["resourceVersion"],
        }
        assert len(cluster_scoped["note"]) == 1024  # the API's limit
    with pytest.raises(ValueError):
        EventRecorder(Client(None), "c").event(obj, "Info", "R", "A")


async def test_repeated_events_become_one_series_written_twice_then_at_the_end(
    api_server: ApiServer,
) -> None:
    obj = api_server.create(CONFIGMAPS, cm("a"))
    async with recorder(api_server) as (rec, _):
        for _ in range(5):  # e.g. a reconcile failing in a loop, written as it goes
            rec.warning(obj, "SyncFailed", "Sync", "target missing")
            await rec.flush()
        rec.warning(obj, "SyncFailed", "Sync", "another note")  # another Event
        await rec.flush()
        first, other = sorted(events(api_server), key=lambda e: e["note"])[::-1]
        assert first["note"] == "target missing" and other["note"] == "another note"
        assert first["series"] == {"count": 2, "lastObservedTime": "2026-11-25T12:00:00.123456Z"}
        assert "series" not in other
        assert writes(api_server) == ["create", "patch", "create"]
        stats = rec.statistics()
        assert (stats.recorded, stats.aggregated, stats.created, stats.series_writes) == (
            6,
            4,
            2,
            1,
        )
    [first] = [e for e in events(api_server) if e["note"] == "target missing"]
    assert first["series"]["count"] == 5  # the final count, written on close
    assert writes(api_server) == ["create", "patch", "create", "patch"]


async def test_a_series_ends_after_it_was_idle_and_the_next_occurrence_starts_a_new_event(
    api_server: ApiServer,
) -> None:
    clock = ManualClock()
    obj = api_server.create(CONFIGMAPS, cm("a"))
    async with recorder(api_server, clock=clock, finish_after=360.0) as (rec, _):
        for _ in range(3):
            rec.normal(obj, "Waiting", "Wait")
            await rec.flush()
        clock.advance(360.0)  # idle: the series ends, its final count written
        await wait_until(lambda: rec.statistics().series == 0)
        await rec.flush()
        assert [e.get("series", {}).get("count") for e in events(api_server)] == [3]
        assert rec.statistics().series == 0
        rec.normal(obj, "Waiting", "Wait")
        await rec.flush()
        assert len(events(api_server)) == 2


async def test_a_series_whose_event_is_gone_is_created_again(api_server: ApiServer) -> None:
    obj = api_server.create(CONFIGMAPS, cm("a"))
    async with recorder(api_server) as (rec, _):
        rec.normal(obj, "Waiting", "Wait")
        await rec.flush()
        [event] = events(api_server)
        api_server.delete(EVENTS, event["metadata"]["name"], namespace="default")  # expired
        rec.normal(obj, "Waiting", "Wait")
        await rec.flush()
    [again] = events(api_server)
    assert again["metadata"]["name"] == event["metadata"]["name"]
    assert again["series"]["count"] == 2


async def test_events_about_one_object_are_rate_limited(api_server: ApiServer) -> None:
    clock = ManualClock()
    a = api_server.create(CONFIGMAPS, cm("a"))
    b = api_server.create(CONFIGMAPS, cm("b"))
    async with recorder(api_server, clock=clock, burst=3, refill_period=300.0) as (rec, _):
        for i in range(5):
            rec.normal(a, "Changed", "Update", f"change {i}")
        rec.normal(b, "Changed", "Update", "another object")  # its own bucket
        clock.advance(300.0)  # one token more for a
        rec.normal(a, "Changed", "Update", "change 5")
        rec.normal(a, "Changed", "Update", "change 6")
        await rec.flush()
        notes = sorted(e["note"] for e in events(api_server))
        assert notes == ["another object", "change 0", "change 1", "change 2", "change 5"]
        assert rec.statistics().throttled == 3


async def test_a_write_lost_in_transport_is_retried(api_server: ApiServer) -> None:
    clock = ManualClock()
    obj = api_server.create(CONFIGMAPS, cm("a"))
    api_server.faults.add(Fault(verb="create", resource="events", latency=0.5))
    async with recorder(api_server, clock=clock, request_timeout=0.05) as (rec, _):
        rec.normal(obj, "Mirrored", "Update")
        await rec.flush()
        assert rec.statistics().retries == 1 and rec.statistics().pending == 1
        clock.advance(12.5)  # retry_delay 10 s, jittered by up to 25%
        await rec.flush()
        assert rec.statistics().pending == 0
    [event] = events(api_server)  # once, whether the first attempt reached the server or not
    assert event["reason"] == "Mirrored" and rec.statistics().failed == 0


async def test_a_refused_write_is_logged_without_the_note(api_server: ApiServer) -> None:
    obj = api_server.create(CONFIGMAPS, cm("a"))
    api_server.faults.add(Fault(verb="create", resource="events", status=422))
    with capture_logs() as logs:
        async with recorder(api_server) as (rec, _):
            rec.warning(obj, "Leaked", "Sync", "password=hunter2")
            await rec.flush()
            assert rec.statistics().failed == 1 and events(api_server) == []
    [failure] = [e for e in logs if e["event"] == "event_recorder.write_failed"]
    assert (failure["event_reason"], failure["regarding_kind"], failure["regarding_name"]) == (
        "Leaked",
        "ConfigMap",
        "a",
    )
    assert (failure["status"], failure["reason"]) == (422, "Invalid")
    assert "hunter2" not in repr(logs)
