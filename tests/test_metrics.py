"""Prometheus metrics: one call registers an informer's counters, scraped over HTTP; durations are
cumulative histograms in controller-runtime's and client-go's layouts; every request the library
sends is counted; every informer has series of its own."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from informer import (
    CONFIGMAPS,
    NAMESPACES,
    Client,
    Controller,
    DropFields,
    LeaderElector,
    ReflectorOptions,
    SharedInformerFactory,
)
from informer._histogram import RECONCILE_BUCKETS, REQUEST_BUCKETS, WORKQUEUE_BUCKETS
from informer.controller import Request
from informer.errors import NotFound
from informer.metrics import register_metrics, render_metrics, serve_metrics
from informer.testing import ApiServer, Fault
from informer.workqueue import ManualClock
from tests.conftest import wait_until

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def series(got: Samples, metric: str, /, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return {lbls: v for (n, lbls), v in got.items() if n == metric and want <= lbls}


def buckets(got: Samples, metric: str, /, **labels: str) -> list[tuple[float, float]]:
    """``(le, cumulative count)`` of one histogram, in bound order."""
    found = [
        (float(dict(lbls)["le"]), v)
        for lbls, v in series(got, f"{metric}_bucket", **labels).items()
    ]
    return sorted(found)


def scrape(registry: CollectorRegistry) -> Samples:
    body, content_type = render_metrics(registry)
    assert content_type.startswith("text/plain")
    return samples(body.decode())


def informer_labels(**labels: str) -> frozenset[tuple[str, str]]:
    base = {"resource": "configmaps", "namespace": "", "selector": "", "field_selector": ""}
    return frozenset({**base, "informer": "", **labels}.items())


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
        await inf.handlers[0].wait_idle()
        server = serve_metrics(0, registry=registry)
        try:
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{server.server_port}/metrics"
                async with http.get(url) as reply:
                    assert reply.status == 200
                    text = await reply.text()
        finally:
            await server.shutdown()
    got = samples(text)
    labels = informer_labels(namespace="ns")
    assert got[("reflector_lists_total", labels)] == 2  # the first list and the relist after 410
    assert got[("reflector_relists_total", labels)] == 1
    assert got[("reflector_watch_expired_total", labels)] == 1
    assert got[("reflector_watches_total", labels)] >= 2
    assert got[("reflector_events_applied_total", labels)] == 1
    assert got[("reflector_last_resource_version", labels)] == int(
        written["metadata"]["resourceVersion"]
    )
    assert got[("informer_cache_objects", labels)] == 2
    cache, json = got[("informer_cache_bytes", labels)], got[("informer_cache_json_bytes", labels)]
    assert cache > json > 0  # two small objects: the fixed cost per object dominates
    assert got[("informer_cache_compression_ratio", labels)] == pytest.approx(cache / json)
    assert got[("informer_cache_compressed_objects", labels)] == 0
    assert got[("informer_synced", labels)] == 1
    assert ("informer_seconds_since_progress", labels) in got
    handler = labels | {("handler", "noop")}
    assert got[("informer_handler_queue_depth", handler)] >= 0
    assert got[("informer_handler_deliveries_total", handler)] == 2
    assert got[("informer_handler_delivery_latency_seconds_count", handler)] == 2
    latency = buckets(got, "informer_handler_delivery_latency_seconds", handler="noop")
    assert [le for le, _ in latency] == [*WORKQUEUE_BUCKETS, float("inf")]
    assert latency[-1][1] == 2


@pytest.mark.asyncio
async def test_metrics_server_shutdown_leaves_the_event_loop_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = serve_metrics(0, registry=CollectorRegistry())
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    # The stdlib server's stop (which waits for its serving thread's next poll) is held until
    # the loop has scraped: a stop blocking the loop would never see that scrape.
    held = threading.Event()
    stop = server._server.shutdown

    def held_stop() -> None:
        released = held.wait(timeout=30)  # a safety net, not a timing: a failure ends the test
        stop()
        assert released, "the stop ran on the event loop"

    monkeypatch.setattr(server._server, "shutdown", held_stop)
    stopping = asyncio.create_task(server.shutdown())
    async with aiohttp.ClientSession() as http, http.get(url) as reply:
        assert reply.status == 200  # the loop runs, and the server serves, during the stop
    assert not stopping.done()
    held.set()
    await stopping
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectorError):  # the listening socket is closed
            await http.get(url)
    await server.shutdown()  # again: already stopped


async def test_informers_that_differ_only_by_field_selector_or_transform_have_distinct_series(
    api_server: ApiServer,
) -> None:
    def strip_data(obj: dict[str, Any]) -> dict[str, Any]:
        obj.pop("data", None)
        return obj

    registry = CollectorRegistry()
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        register_metrics(factory, registry=registry)
        plain = factory.informer(CONFIGMAPS)
        by_name = factory.informer(CONFIGMAPS, field_selector="metadata.name=a")
        by_ns = factory.informer(CONFIGMAPS, field_selector="metadata.namespace=ns")
        stripped = factory.informer(CONFIGMAPS, transform=strip_data)
        dropped = factory.informer(CONFIGMAPS, transform=DropFields("data"))
        named = factory.informer(CONFIGMAPS, transform=DropFields("binaryData"), name="no-data")
        unnamed_twin = factory.informer(CONFIGMAPS, transform=DropFields("metadata.annotations"))
        informers = [plain, by_name, by_ns, stripped, dropped, named, unnamed_twin]
        await factory.wait_for_sync(timeout=10)
        got = scrape(registry)
    lists = series(got, "reflector_lists_total")
    assert len(lists) == len(informers)  # one series each: none dropped, none merged
    assert informer_labels() in lists
    assert informer_labels(field_selector="metadata.name=a") in lists
    assert informer_labels(field_selector="metadata.namespace=ns") in lists
    assert informer_labels(informer="strip_data") in lists
    assert informer_labels(informer="DropFields") in lists
    assert informer_labels(informer="no-data") in lists
    assert informer_labels(informer="DropFields#2") in lists  # same labels otherwise: numbered


async def reconciled(request: Request) -> None:
    return None


@pytest.mark.asyncio
async def test_controller_durations_are_cumulative_histograms_past_a_thousand_reconciles(
    api_server: ApiServer,
) -> None:
    # a Summary over a 1024-sample window stops counting at 1024: rate(_count) would read 0
    n = 1100
    api_server.bulk_load(
        CONFIGMAPS, [{"metadata": {"name": f"cm-{i}", "namespace": "ns"}} for i in range(n)]
    )
    registry = CollectorRegistry()
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        inf = factory.informer(CONFIGMAPS)
        controller = Controller(reconciled, for_=inf, workers=2, name="mirror", catch_up=False)
        register_metrics(factory, controller, registry=registry)
        async with controller:
            await wait_until(lambda: controller.statistics().reconciles >= n, timeout=60)
            got = scrape(registry)
    mirror = {"controller": "mirror"}
    assert got[("controller_runtime_reconcile_time_seconds_count", frozenset(mirror.items()))] == n
    reconcile_buckets = buckets(got, "controller_runtime_reconcile_time_seconds", **mirror)
    assert [le for le, _ in reconcile_buckets] == [*RECONCILE_BUCKETS, float("inf")]
    counts = [c for _, c in reconcile_buckets]
    assert counts == sorted(counts) and counts[-1] == n  # cumulative
    assert ("controller_runtime_reconcile_time_seconds_sum", frozenset(mirror.items())) in got
    total = series(got, "controller_runtime_reconcile_total", controller="mirror")
    by_result = {dict(lbls)["result"]: v for lbls, v in total.items()}
    assert by_result == {"success": n, "error": 0, "requeue": 0, "requeue_after": 0}
    assert got[("controller_runtime_reconcile_errors_total", frozenset(mirror.items()))] == 0
    assert got[("controller_runtime_reconcile_timeouts_total", frozenset(mirror.items()))] == 0
    assert got[("controller_runtime_max_concurrent_reconciles", frozenset(mirror.items()))] == 2
    assert ("controller_runtime_active_workers", frozenset(mirror.items())) in got
    assert got[("controller_freshness_wait_seconds_count", frozenset(mirror.items()))] == 0
    queue = {"name": "mirror", "controller": "mirror"}
    assert got[("workqueue_adds_total", frozenset(queue.items()))] == n  # keys newly queued
    assert got[("workqueue_retries_total", frozenset(queue.items()))] == 0
    for histogram in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        found = buckets(got, histogram, **queue)
        assert [le for le, _ in found] == [*WORKQUEUE_BUCKETS, float("inf")]
        assert found[-1][1] == n == got[(f"{histogram}_count", frozenset(queue.items()))]
    depth = series(got, "workqueue_depth", **queue)
    assert {dict(lbls)["priority"] for lbls in depth} >= {"0", "-100", "-200"}
    assert sum(depth.values()) == 0
    assert ("workqueue_unfinished_work_seconds", frozenset(queue.items())) in got
    assert ("workqueue_longest_running_processor_seconds", frozenset(queue.items())) in got


@pytest.mark.asyncio
async def test_every_request_is_counted_by_code_method_and_host(api_server: ApiServer) -> None:
    registry = CollectorRegistry()
    register_metrics(registry=registry)
    host = f"127.0.0.1:{api_server.port}"

    def requests(got: Samples, code: str, method: str) -> float:
        labels = frozenset({"code": code, "method": method, "host": host}.items())
        return got.get(("rest_client_requests_total", labels), 0.0)

    api_server.create(NAMESPACES, {"metadata": {"name": "ns"}})
    before = scrape(registry)
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        inf = factory.informer(CONFIGMAPS, namespace="ns")
        await factory.wait_for_sync(timeout=10)
        await api_server.wait_for_requests(lambda r: r.verb == "watch")
        client = Client(api)
        await client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
        with pytest.raises(NotFound):
            await client.get(CONFIGMAPS, "missing", "ns")
        await inf.wait_for_resource_version(api_server.format_resource_version(api_server.revision))
        got = scrape(registry)
    gets = requests(got, "200", "GET") - requests(before, "200", "GET")
    assert gets >= 2  # the list and the watch
    assert requests(got, "201", "POST") - requests(before, "201", "POST") == 1
    assert requests(got, "404", "GET") - requests(before, "404", "GET") == 1
    latency = buckets(got, "rest_client_request_duration_seconds", verb="GET", host=host)
    assert [le for le, _ in latency] == [*REQUEST_BUCKETS, float("inf")]
    counts = [c for _, c in latency]
    assert counts == sorted(counts)
    labels = frozenset({"verb": "GET", "host": host}.items())
    assert got[("rest_client_request_duration_seconds_count", labels)] == counts[-1] >= 3


@pytest.mark.asyncio
async def test_leader_status_follows_the_lease(api_server: ApiServer) -> None:
    api_server.create(NAMESPACES, {"metadata": {"name": "ns"}})
    registry = CollectorRegistry()
    async with api_server.api_client() as api:
        elector = LeaderElector(
            Client(api), "my-operator", "ns", lease_duration=3.0, renew_deadline=2.0,
            retry_period=0.5,
        )  # fmt: skip
        collector = register_metrics(registry=registry)
        collector.add(elector)
        status = ("leader_election_master_status", frozenset({"name": "my-operator"}.items()))
        assert scrape(registry)[status] == 0
        leading = asyncio.Event()

        async def lead() -> None:
            leading.set()
            await asyncio.Event().wait()

        task = asyncio.create_task(elector.run(on_started_leading=lead))
        try:
            await asyncio.wait_for(leading.wait(), 10)
            assert scrape(registry)[status] == 1
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert scrape(registry)[status] == 0


@pytest.mark.asyncio
async def test_failed_timed_out_and_requeued_reconciles_count_as_controller_runtime_counts_them(
    api_server: ApiServer,
) -> None:
    for name in ("fails", "hangs", "later"):
        api_server.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "ns"}})

    async def reconcile(request: Request) -> float | None:
        if request.name == "fails":
            raise RuntimeError("no")
        if request.name == "hangs":
            await asyncio.Event().wait()  # cut by reconcile_timeout
        return 5.0  # requeue after 5 s (a manual clock: never comes)

    registry = CollectorRegistry()
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        controller = Controller(
            reconcile,
            for_=factory.informer(CONFIGMAPS),
            name="c",
            workers=3,
            reconcile_timeout=0.05,
            clock=ManualClock(),
            catch_up=False,
        )
        register_metrics(factory, controller, registry=registry)
        async with controller:
            await wait_until(lambda: controller.statistics().reconciles == 3)
            got = scrape(registry)
    c = frozenset({"controller": "c"}.items())
    total = series(got, "controller_runtime_reconcile_total", controller="c")
    by_result = {dict(lbls)["result"]: v for lbls, v in total.items()}
    assert by_result == {"success": 0, "error": 2, "requeue": 0, "requeue_after": 1}
    assert got[("controller_runtime_reconcile_errors_total", c)] == 2
    assert got[("controller_runtime_reconcile_timeouts_total", c)] == 1
    assert got[("controller_runtime_reconcile_time_seconds_count", c)] == 3
    queue = frozenset({"name": "c", "controller": "c"}.items())
    assert got[("workqueue_retries_total", queue)] == 2  # the failure and the timeout


@pytest.mark.asyncio
async def test_two_controllers_of_one_name_have_series_of_their_own(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
    registry = CollectorRegistry()
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        inf = factory.informer(CONFIGMAPS)
        first = Controller(reconciled, for_=inf, catch_up=False)
        second = Controller(reconciled, for_=inf, catch_up=False)
        assert first.name == second.name == "configmap"  # the default: the kind
        register_metrics(first, second, registry=registry)
        async with first, second:
            await wait_until(
                lambda: first.statistics().succeeded == second.statistics().succeeded == 1
            )
            got = scrape(registry)
    for metric in ("controller_runtime_reconcile_time_seconds_count", "workqueue_adds_total"):
        found = series(got, metric)
        assert sorted(dict(lbls).get("controller") for lbls in found) == [
            "configmap",
            "configmap#2",
        ]
        assert set(found.values()) == {1.0}


@pytest.mark.asyncio
async def test_handlers_of_one_name_on_one_informer_have_series_of_their_own(
    api_server: ApiServer,
) -> None:
    api_server.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
    registry = CollectorRegistry()
    async with (
        api_server.api_client() as api,
        SharedInformerFactory(api, options=ReflectorOptions(list_strategy="list")) as factory,
    ):
        inf = factory.informer(CONFIGMAPS)
        first = Controller(reconciled, for_=inf, catch_up=False)
        second = Controller(reconciled, for_=inf, catch_up=False)  # same name: the kind
        gone = inf.add_handler(on_add=lambda obj, initial: None)  # handler-2
        kept = inf.add_handler(on_add=lambda obj, initial: None)  # handler-3
        await inf.remove_handler(gone)
        inf.add_handler(on_add=lambda obj, initial: None)  # the default name again: handler-3
        assert kept.name == inf.handlers[-1].name
        register_metrics(factory, first, second, registry=registry)
        async with first, second:
            await wait_until(
                lambda: first.statistics().succeeded == second.statistics().succeeded == 1
            )
            body, _ = render_metrics(registry)
    lines = [
        line.rsplit(" ", 1)[0]
        for line in body.decode().splitlines()
        if line.startswith("informer_handler_deliveries_total{")
    ]
    assert len(lines) == len(set(lines)) == 4, lines  # no two handlers share a series
