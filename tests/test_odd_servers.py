"""Servers outside KEP-5504: opaque resource versions, and RVs that go backwards (etcd restore)."""

from __future__ import annotations

import pytest
from conftest import cm, running_informer, three_then_backup_then_three, wait_until

from informer.resource import CONFIGMAPS
from informer.resource_version import InvalidResourceVersion
from informer.testing import ApiServer, Fault


async def test_opaque_rv_server_falls_back_to_equality_semantics() -> None:
    async with ApiServer("opaque-rv", too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="watch", nth=1, duplicate_events=True, close_after_events=2))
        server.faults.add(Fault(verb="watch", nth=2, status=410))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            made = server.create(CONFIGMAPS, cm("b"))
            patched = server.patch(CONFIGMAPS, "b", {"data": {"k": "2"}}, namespace="default")
            await inf.wait_for_write(patched, timeout=10)
            stats = inf.statistics()
            assert stats.comparable is False
            assert stats.duplicate_events_dropped >= 1  # exact duplicates still dropped
            assert inf.store.get("b", "default")["data"] == {"k": "2"}  # type: ignore[index]
            assert not made["metadata"]["resourceVersion"].isdigit()
            with pytest.raises(InvalidResourceVersion):
                await inf.wait_for_resource_version("12345", timeout=1)
            # the watch ends, the next is 410: a relist NotOlderThan the opaque RV the server gave
            await server.wait_for_requests(lambda r: r.verb == "list" and r.page == 1, count=2)
        relist = [r for r in server.requests if r.verb == "list" and r.page == 1][1]
        assert relist.query["resourceVersionMatch"] == "NotOlderThan"
        assert not relist.query["resourceVersion"].isdigit()


async def test_restored_server_is_detected_and_relisted_consistently() -> None:
    async with ApiServer("restored", too_large_wait=0.01) as server:
        backup = three_then_backup_then_three(server)
        async with running_informer(server) as inf:
            assert len(inf.store) == 6
            await server.wait_for_watchers(1)
            server.restore(backup)  # state and counter go back; watches close
            made = server.create(CONFIGMAPS, cm("after-restore"))  # an RV we have "seen" before
            await wait_until(lambda: inf.statistics().relists >= 1)
            await inf.wait_for_write(made, timeout=10)
            assert sorted(o.name for o in inf.store.list()) == [
                "after-restore",
                "c0",
                "c1",
                "c2",
            ]
            stats = inf.statistics()
            assert stats.backwards >= 1
            assert inf.store.resource_version == made["metadata"]["resourceVersion"]
        lists = [r.query for r in server.requests if r.verb == "list" and r.page == 1]
        assert lists[-2:] == [{"limit": "1"}, {"limit": "2"}]  # probe, then a consistent relist


async def test_one_restore_counts_one_backwards() -> None:
    # The probe after the watch ended finds the server behind (counted), then the consistent relist
    # comes back older as expected: that is the same restore, not a second one.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        backup = three_then_backup_then_three(server)
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            server.restore(backup)
            await wait_until(lambda: inf.statistics().relists >= 1)
            assert inf.statistics().backwards == 1
