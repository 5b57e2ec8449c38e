"""Prometheus metrics: one call registers an informer's counters, scraped over HTTP."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from informer import CONFIGMAPS, ReflectorOptions, SharedInformerFactory
from informer.metrics import register_metrics, serve_metrics
from informer.testing import ApiServer, Fault


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.asyncio
async def test_informer_metrics_are_scraped_with_their_values(api_server: ApiServer) -> None:
    api_server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
    api_server.faults.add(Fault(verb="watch", nth=1, status=410))  # the first watch expires
    registry = CollectorRegistry()
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        register_metrics(factory, registry=registry)
        inf = factory.informer(CONFIGMAPS, namespace="ns", label_selector="")  # after register
        inf.add_handler(on_add=lambda obj, initial: None, name="noop")
        await inf.wait_for_sync(timeout=10)
        await api_server.wait_for_requests(lambda r: r.verb == "watch", count=2)
        written = api_server.create(CONFIGMAPS, {"metadata": {"name": "b", "namespace": "ns"}})
        await inf.wait_for_write(written, timeout=10)
        server = serve_metrics(0, registry=registry)
        try:
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{server.server_port}/metrics"
                async with http.get(url) as reply:
                    assert reply.status == 200
                    text = await reply.text()
        finally:
            server.shutdown()
    got = samples(text)
    labels = frozenset({"resource": "configmaps", "namespace": "ns", "selector": ""}.items())
    assert got[("reflector_lists_total", labels)] == 2  # the first list and the relist after 410
    assert got[("reflector_relists_total", labels)] == 1
    assert got[("reflector_watch_expired_total", labels)] == 1
    assert got[("reflector_watches_total", labels)] >= 2
    assert got[("reflector_events_applied_total", labels)] == 1
    assert got[("reflector_last_resource_version", labels)] == int(
        written["metadata"]["resourceVersion"]
    )
    assert got[("informer_cache_objects", labels)] == 2
    assert got[("informer_synced", labels)] == 1
    assert ("informer_seconds_since_progress", labels) in got
    handler = labels | {("handler", "noop")}
    assert got[("informer_handler_queue_depth", handler)] >= 0
    assert got[("informer_handler_deliveries_total", handler)] == 2
    assert got[("informer_handler_delivery_latency_seconds_count", handler)] == 2
    assert ("informer_handler_delivery_latency_seconds", handler | {("quantile", "0.99")}) in got
