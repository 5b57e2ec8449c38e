"""Second review: races, lifecycle, statistics, waiters across a restore, index consistency, logs.

Each test shows a bug found in the second review (it failed before its fix). Waits are on events
or counters; ``asyncio.timeout`` only bounds a hang, nothing asserts timing.
"""

from __future__ import annotations

from typing import Any

import msgspec
from conftest import cm, running_informer, wait_until
from structlog.testing import capture_logs

from informer.objects import KubeObject
from informer.resource import CONFIGMAPS
from informer.store import Store
from informer.testing import ApiServer, Fault


# -- statistics -----------------------------------------------------------------------------------
async def test_one_restore_counts_one_backwards() -> None:
    # The probe after the watch ended finds the server behind (counted), then the consistent relist
    # comes back older as expected: that is the same restore, not a second one.
    async with ApiServer("restored", too_large_wait=0.01) as server:
        for i in range(3):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        backup = server.revision
        for i in range(3, 6):
            server.create(CONFIGMAPS, cm(f"c{i}"))
        async with running_informer(server) as inf:
            await server.wait_for_watchers(1)
            server.restore(backup)
            await wait_until(lambda: inf.statistics().relists >= 1)
            assert inf.statistics().backwards == 1


async def test_consistent_list_410_counts_one_expired() -> None:
    # A 410 on a consistent list was counted by the list phase and again by the run loop.
    async with ApiServer(too_large_wait=0.01) as server:
        server.create(CONFIGMAPS, cm("a"))
        server.faults.add(Fault(verb="list", status=410, times=2))
        async with running_informer(server) as inf:
            stats = inf.statistics()
    assert [r.status for r in server.requests if r.verb == "list"] == [410, 410, 200]
    assert stats.expired == 2


# -- store indexes --------------------------------------------------------------------------------
def _obj(name: str, rv: str) -> KubeObject:
    body = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"u-{name}",
            "resourceVersion": rv,
        },
    }
    return KubeObject.from_raw(msgspec.json.encode(body))


def test_index_function_raising_midway_leaves_no_dangling_key() -> None:
    # An index function that yields a value and then raises left the key in that bucket; after
    # the object was deleted, by_index raised KeyError for every reader of that value.
    def values(obj: KubeObject) -> Any:
        yield "x"
        raise RuntimeError("broken index")

    store = Store()
    store.add_index("by-x", values)
    store.replace([], "1")
    with capture_logs():
        store.apply_event("ADDED", _obj("a", "2"))
        store.apply_event("DELETED", _obj("a", "3"))
        assert store.by_index("by-x", "x") == []
        assert store.index_values("by-x") == []
        store.replace([_obj("b", "4")], "4")
        assert store.by_index("by-x", "x") == []
        store.apply_event("DELETED", _obj("b", "5"))
        assert store.by_index("by-x", "x") == []
