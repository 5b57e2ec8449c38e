"""examples/configmap_mirror.py, two replicas against the test API server with faults injected
(410s, dropped and stalled watches, 429s, a lagging list) and the leader killed midway: the
mirrors end as the sources say, and no mirror was ever created twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from conftest import ELECTION, FAST, created_since, load_example

from informer import CONFIGMAPS, LEASES, NAMESPACES
from informer.testing import ApiServer, Fault

pytestmark = pytest.mark.asyncio

mirror = load_example("configmap_mirror")


def source(name: str, namespace: str, labelled: bool = True, **data: str) -> dict[str, Any]:
    labels = {"mirror": "true"} if labelled else {}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": data}


def mirrors(server: ApiServer) -> dict[str, Any]:
    return {m["metadata"]["name"]: m.get("data") for m in server.list_objects(CONFIGMAPS, "mirror")}


async def converged(server: ApiServer, want: dict[str, Any]) -> None:
    """Until the mirrors are ``want`` (checked after every request the server answers)."""
    await server.wait_for_requests(lambda _: mirrors(server) == want, timeout=30)


async def test_mirror_under_faults_with_a_leader_change(api_server: ApiServer) -> None:
    server = api_server
    for ns in ("team-a", "team-b", "mirror"):
        server.create(NAMESPACES, {"metadata": {"name": ns}})
    server.create(CONFIGMAPS, source("one", "team-a", v="1"))
    server.create(CONFIGMAPS, source("two", "team-b", v="2"))
    server.create(CONFIGMAPS, source("plain", "team-a", labelled=False, v="x"))
    orphan = {mirror.FROM_NS: "team-a", mirror.FROM_NAME: "gone"}
    server.create(
        CONFIGMAPS, {"metadata": {"name": "team-a.gone", "namespace": "mirror", "labels": orphan}}
    )
    for fault in (
        Fault(verb="watch", resource="configmaps", nth=1, status=410),
        Fault(verb="watch", resource="configmaps", nth=3, close_after_events=1),
        Fault(verb="watch", resource="configmaps", nth=4, after_events=1, stall=0.3),
        Fault(verb="watch", resource="configmaps", nth=6, status=429, retry_after=0),
        Fault(verb="list", resource="configmaps", nth=3, list_lag=3),
        Fault(
            verb="create",
            resource="configmaps",
            namespace="mirror",
            status=429,
            retry_after=0,
            times=2,
        ),
    ):
        server.faults.add(fault)
    start = str(server.revision)
    api = server.api_client()
    managers = {
        name: mirror.operator(api, identity=name, options=FAST, close_client=False, **ELECTION)
        for name in ("a", "b")
    }
    replicas = {
        name: asyncio.create_task(m.run(handle_signals=False)) for name, m in managers.items()
    }
    try:
        await converged(server, {"team-a.one": {"v": "1"}, "team-b.two": {"v": "2"}})
        server.patch(CONFIGMAPS, "one", {"data": {"v": "1b"}}, "team-a")
        server.create(CONFIGMAPS, source("three", "team-b", v="3"))
        server.patch(CONFIGMAPS, "two", {"metadata": {"labels": {"mirror": None}}}, "team-b")
        await converged(server, {"team-a.one": {"v": "1b"}, "team-b.three": {"v": "3"}})

        lease = server.get(LEASES, "configmap-mirror", "default")
        assert lease is not None
        leader = lease["spec"]["holderIdentity"]
        handover = len(server.requests)
        replicas[leader].cancel()  # a clean shutdown: the lease is released, the other takes over
        await asyncio.wait({replicas[leader]})
        server.create(CONFIGMAPS, source("four", "team-a", v="4"))
        server.delete(CONFIGMAPS, "one", "team-a")
        await converged(server, {"team-a.four": {"v": "4"}, "team-b.three": {"v": "3"}})
        lease = server.get(LEASES, "configmap-mirror", "default")
        assert lease is not None and lease["spec"]["holderIdentity"] not in (None, leader)
    finally:
        for task in replicas.values():
            task.cancel()
        await asyncio.gather(*replicas.values(), return_exceptions=True)
        await api.close()

    assert sum(f.fired for f in server.faults) >= 5  # the faults did happen
    # Within one leader's term read-your-own-writes prevents even an attempt to create a mirror
    # twice. A new leader's caches can lag behind the old leader's writes (here its watches were
    # cut and stalled): it may try a create the server refuses (409 AlreadyExists, retried).
    first_term = server.requests[:handover]
    refused = [r for r in first_term if r.verb == "create" and r.status == 409]
    assert not [r for r in refused if r.resource == "configmaps"]
    end = {"metadata": {"name": "~end", "namespace": "mirror"}}
    history = await created_since(server, CONFIGMAPS, "mirror", start, end)
    created = Counter(obj["metadata"]["name"] for obj in history)
    assert created == {"team-a.one": 1, "team-b.two": 1, "team-b.three": 1, "team-a.four": 1}
