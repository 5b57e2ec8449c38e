"""examples/owned_pods.py, two replicas against the test API server with faults injected (410s,
dropped and stalled watches, 429s, a lagging list): PodSets end with exactly their replicas of
Pods (owned, reported in status), a deleted PodSet takes its Pods with it (its finalizer), and no
Pod was ever created beyond what a PodSet asked for."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from conftest import ELECTION, FAST, created_since, load_example

from informer import PODS
from informer.testing import ApiServer, Fault

pytestmark = pytest.mark.asyncio

example = load_example("owned_pods")
PODSETS = example.PODSETS


def podset(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"replicas": replicas}}


def state(server: ApiServer) -> dict[str, Any]:
    """Per PodSet: (Pods it controls, its status.pods, its finalizers)."""
    pods = server.list_objects(PODS, "default")
    out: dict[str, Any] = {}
    for ps in server.list_objects(PODSETS, "default"):
        uid = ps["metadata"]["uid"]
        owned = [
            p
            for p in pods
            if any(r["uid"] == uid for r in p["metadata"].get("ownerReferences", []))
        ]
        status = (ps.get("status") or {}).get("pods")
        out[ps["metadata"]["name"]] = (len(owned), status, ps["metadata"].get("finalizers"))
    out["pods"] = len(pods)
    return out


async def until(server: ApiServer, want: dict[str, Any]) -> None:
    """Until ``state`` is ``want`` (checked after every request the server answers)."""
    await server.wait_for_requests(lambda _: state(server) == want, timeout=30)


async def test_owned_pods_under_faults(api_server: ApiServer) -> None:
    server = api_server
    for fault in (
        Fault(verb="watch", resource="pods", nth=1, status=410),
        Fault(verb="watch", resource="pods", nth=3, close_after_events=2),
        Fault(verb="watch", resource="pods", nth=4, after_events=1, stall=0.3),
        Fault(verb="watch", resource="podsets", nth=2, status=429, retry_after=0),
        Fault(verb="list", resource="pods", nth=3, list_lag=3),
        Fault(verb="create", resource="pods", status=429, retry_after=0, nth=2, times=2),
    ):
        server.faults.add(fault)
    start = str(server.revision)
    api = server.api_client()
    replicas = [
        asyncio.create_task(example.operator(api, identity=name, options=FAST, **ELECTION))
        for name in ("a", "b")
    ]
    try:
        await server.wait_for_requests(lambda r: r.resource == "podsets" and r.verb == "watch")
        server.create(PODSETS, podset("web", 3))
        server.create(PODSETS, podset("db", 2))
        server.create(PODSETS, podset("tmp", 1))
        fin = ["example.com/pods"]
        await until(server, {"web": (3, 3, fin), "db": (2, 2, fin), "tmp": (1, 1, fin), "pods": 6})
        server.patch(PODSETS, "web", {"spec": {"replicas": 5}}, "default")
        server.patch(PODSETS, "db", {"spec": {"replicas": 1}}, "default")
        server.delete(PODSETS, "tmp", "default")  # held by the finalizer until its Pod is gone
        await until(server, {"web": (5, 5, fin), "db": (1, 1, fin), "pods": 6})
    finally:
        for task in replicas:
            task.cancel()
        await asyncio.gather(*replicas, return_exceptions=True)
        await api.close()

    assert sum(f.fired for f in server.faults) >= 5  # the faults did happen
    # never more Pods created than asked for: 3 then 2 more for web, 2 for db, 1 for tmp
    end = {
        "metadata": {"name": "zz-end", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    history = await created_since(server, PODS, "default", start, end)
    created = Counter(p["metadata"].get("labels", {}).get("example.com/podset") for p in history)
    assert created == {"web": 5, "db": 2, "tmp": 1}
