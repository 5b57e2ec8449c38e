"""The demo's faults stand for what a healthy but busy API server does, over real HTTP."""

from __future__ import annotations

from informer.cli._workload import FaultSchedule
from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.transport import Transport


async def test_a_lagging_list_lags_only_reads_a_watch_cache_may_answer(
    api_server: ApiServer,
) -> None:
    # a consistent read (no resourceVersion) is a quorum read of etcd: behind the cache only
    # after an etcd restore, which is not what the demo's "lagging list" stands for
    for i in range(60):
        api_server.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}", "namespace": "lag"}})
    current = api_server.format_resource_version(api_server.revision)
    schedule = FaultSchedule(api_server, 1.0, idle_timeout=2.0)
    fault = api_server.faults.add(schedule.fault("lagging list"))
    async with api_server.api_client() as api:
        transport = Transport(api)
        consistent = await transport.list_page(CONFIGMAPS, namespace="lag", limit=1)
        assert consistent.resource_version == current
        assert fault.fired == 0
        cached = await transport.list_page(
            CONFIGMAPS,
            namespace="lag",
            resource_version=current,
            resource_version_match="NotOlderThan",
        )
    assert fault.fired == 1
    assert api_server.parse_resource_version(cached.resource_version) < api_server.revision
