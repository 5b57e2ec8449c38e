"""410 Gone on a watch: relist at NotOlderThan the last RV; vanished keys become tombstones."""

from __future__ import annotations

from conftest import Recorder, cm, relists, running_informer

from informer.resource import CONFIGMAPS
from informer.store import Tombstone
from informer.testing import ApiServer, Fault


async def test_watch_410_relists_not_older_than_last_rv_with_tombstones() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        for name in ("a", "b", "c"):
            server.create(CONFIGMAPS, cm(name))
        # the first watch ends after one event; the second is answered 410 Gone
        server.faults.add(Fault(verb="watch", nth=1, close_after_events=1))
        server.faults.add(Fault(verb="watch", nth=2, status=410))
        async with running_informer(server) as inf:
            rec = Recorder()
            rec.attach(inf)
            await server.wait_for_watchers(1)
            server.create(CONFIGMAPS, cm("d"))  # delivered, then the watch closes
            server.delete(CONFIGMAPS, "a", namespace="default")  # never seen by a watch
            await rec.wait(lambda calls: any(c[0] == "delete" for c in calls))
            deletes = rec.of("delete")
            assert len(deletes) == 1
            tomb = deletes[0][1]
            assert isinstance(tomb, Tombstone)
            assert tomb.key == "default/a" and tomb.obj.name == "a"
            assert sorted(o.name for o in inf.store.list()) == ["b", "c", "d"]
            stats = inf.statistics()
            assert stats.expired == 1 and stats.relists == 1
        watches = [r for r in server.requests if r.verb == "watch"]
        lists = relists(server)
        assert len(lists) == 2
        relist = lists[1]
        assert relist.query["resourceVersionMatch"] == "NotOlderThan"
        assert relist.query["resourceVersion"] == watches[1].query["resourceVersion"]


async def test_watch_error_event_410_relists() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        expired = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "The resourceVersion for the provided watch is too old.",
            "reason": "Expired",
            "code": 410,
        }
        server.faults.add(Fault(verb="watch", nth=1, error_event=expired))
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "list", count=2)
            await server.wait_for_requests(lambda r: r.verb == "watch", count=2)
            assert inf.statistics().expired == 1


async def test_consistent_list_answering_410_every_time_backs_off() -> None:
    # A consistent list answering 410 every time (a broken proxy, a misbehaving aggregated API)
    # must not make the reflector hammer the server in a tight loop: it must back off.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=410, times=None))
        async with running_informer(server, sync=False) as inf:
            await server.wait_for_requests(lambda r: r.verb == "list", count=6)
            assert inf.reflector._backoff.attempt >= 1, "6 failed lists, not one backoff"


async def test_watch_answering_410_every_time_backs_off() -> None:
    # list OK, watch 410, relist OK, watch 410, ... : client-go backs off between ListAndWatch
    # rounds; here every round is immediate, forever.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", status=410, times=None))
        async with running_informer(server) as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=5)
            assert len(relists(server)) >= 4
            assert inf.reflector._backoff.attempt >= 1, "5 list+410 rounds, not one backoff"


async def test_streaming_list_expiring_every_time_backs_off() -> None:
    # auto strategy on a modern server: the streaming list's stream answers an ERROR 410 each time
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(
            Fault(
                verb="watch",
                times=None,
                error_event={"kind": "Status", "code": 410, "reason": "Expired", "message": "old"},
            )
        )
        async with running_informer(server, sync=False, list_strategy="auto") as inf:
            await server.wait_for_requests(lambda r: r.verb == "watch", count=6)
            assert inf.reflector._backoff.attempt >= 1, "6 expired streams, not one backoff"


async def test_consistent_list_410_counts_one_expired() -> None:
    # A 410 on a consistent list was counted by the list phase and again by the run loop.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=410, times=2))
        async with running_informer(server) as inf:
            stats = inf.statistics()
    assert [r.status for r in server.requests if r.verb == "list"] == [410, 410, 200]
    assert stats.expired == 2
