"""A ring member's metrics: members, shares of the space, ranges, counters and handover
durations, read from its statistics at scrape time."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from informer.metrics import register_metrics
from informer.testing import ApiServer
from tests.election_helpers import RETRY
from tests.ring_helpers import cluster

pytestmark = pytest.mark.asyncio


async def test_a_ring_member_exports_its_share_and_handovers(api_server: ApiServer) -> None:
    async with cluster(api_server, "ab") as c:
        await c.until_converged(limit=3 * RETRY)
        registry = CollectorRegistry()
        register_metrics(*c.rings.values(), registry=registry)
        text = generate_latest(registry).decode()
        shares = {name: r.acting.share for name, r in c.rings.items()}
    for name in "ab":
        ids = f'identity="{name}",ring="ops"'
        assert f"ring_members{{{ids}}} 2.0" in text
        share = shares[name]
        assert 0.3 < share < 0.7
        assert f'ring_share{{identity="{name}",kind="acting",ring="ops"}} {share}' in text
        assert f"ring_ranges_started_total{{{ids}}}" in text
        assert f"ring_handover_duration_seconds_count{{{ids}}}" in text
    assert "workqueue_depth" not in text  # a ring is not taken for a work queue
