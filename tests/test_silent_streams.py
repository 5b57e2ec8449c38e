"""A watch that stays open but delivers nothing (a stuck proxy, a half-dead connection) is
detected by ``idle_timeout`` (65 s by default, about a minute) and re-opened from the last RV:
no relist, no backoff, not an error; a ``limit=1`` probe list before the new watch checks that
the server has not gone behind the cache (a restored server's watch is silent too)."""

from __future__ import annotations

from conftest import cm, is_probe, relists, running_informer

from informer.reflector import ReflectorOptions
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer, Fault, RecordedRequest


def _watches(server: ApiServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.verb == "watch"]


def test_a_silent_watch_is_detected_within_about_a_minute_by_default() -> None:
    idle = ReflectorOptions().idle_timeout
    assert idle is not None and 60 <= idle <= 70  # was: watch timeout + 30 s (330 to 630 s)


async def test_a_stalled_watch_is_reopened_from_the_last_rv_and_sees_the_change() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", stall=60.0))  # open, then silent
        async with running_informer(server, idle_timeout=0.2) as inf:
            list_rv = inf.store.resource_version
            made = server.create(CONFIGMAPS, cm("b"))  # the stalled stream holds it back
            await inf.wait_for_write(made, timeout=10)
            stats = inf.statistics()
        watches = _watches(server)
        assert len(watches) == 2 and watches[1].query["resourceVersion"] == list_rv
        assert len(relists(server)) == 1  # the initial list only
        assert [is_probe(r) for r in server.requests if r.verb == "list"] == [False, True]
        assert stats.idle_rewatches == 1 and stats.errors == 0 and stats.relists == 0


async def test_a_quiet_resource_is_rewatched_not_relisted() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        async with running_informer(server, idle_timeout=0.05) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=4)
            stats = inf.statistics()
            rv = inf.store.resource_version
        assert all(r.query["resourceVersion"] == rv for r in _watches(server)[:4])
        assert len(relists(server)) == 1  # probes (limit=1) only, never a relist
        assert stats.idle_rewatches >= 3 and stats.errors == 0 and stats.relists == 0
