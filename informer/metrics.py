"""Prometheus metrics for informers, controllers, work queues, requests and leader election
(``pip install "kube-informer[metrics]"``).

``register_metrics(*sources)`` registers one collector that reads the ``statistics()`` of what it
watches at scrape time: nothing is added to the hot path, and informers a
``SharedInformerFactory`` creates later appear on their own. ``render_metrics()`` gives a scrape's
body and content type (for a server of one's own, e.g. a Manager's ``/metrics``);
``serve_metrics(port)`` serves the registry in a thread of its own (``await shutdown()`` stops it
without blocking the event loop).

Names, labels and bucket layouts are controller-runtime's and client-go's, so their dashboards work
unchanged (every duration is a cumulative histogram: ``rate(..._count)`` and ``histogram_quantile``
over ``..._bucket`` work for any number of observations, and replicas add up):

- controllers: ``controller_runtime_reconcile_total{controller,result}`` (``success``, ``error``,
  ``requeue``, ``requeue_after``; a timed-out reconcile is an ``error``),
  ``controller_runtime_reconcile_errors_total``, ``controller_runtime_reconcile_timeouts_total``,
  ``controller_runtime_reconcile_time_seconds``
  (controller-runtime's buckets), ``controller_runtime_max_concurrent_reconciles``,
  ``controller_runtime_active_workers``; ours: ``controller_stale_skips_total``,
  ``controller_freshness_wait_seconds`` (read-your-own-writes waits),
  ``controller_reconcile_cancelled_total`` (cut by a shutdown deadline).
- work queues (labels ``name`` and ``controller``, both the queue's name, as controller-runtime
  sets them): ``workqueue_depth{priority}``, ``workqueue_adds_total``, ``workqueue_retries_total``,
  ``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds`` (buckets
  ``ExponentialBuckets(10e-9, 10, 12)``), ``workqueue_unfinished_work_seconds``,
  ``workqueue_longest_running_processor_seconds``; ours: ``workqueue_waiting``,
  ``workqueue_processing``.
- requests, every one the library sends (lists, watches, discovery, the writes ``Client``):
  ``rest_client_requests_total{code,method,host}`` and
  ``rest_client_request_duration_seconds{verb,host}`` (client-go's buckets; a watch counts until
  it is open), ``rest_client_request_retries_total{code,verb,host}`` (the writes ``Client``'s
  requests sent again after a 429 or a 5xx with Retry-After).
- leader election: ``leader_election_master_status{name}`` (1 while leading the Lease ``name``).
- a sharding ring's member (``informer.ring.Ring``, labels ``ring`` and ``identity``):
  ``ring_members``, ``ring_share{kind}`` (``target``, ``held``, ``acting``), ``ring_ranges``,
  ``ring_ranges_started_total``, ``ring_ranges_stopped_total``, ``ring_takeovers_total``,
  ``ring_conflicts_total``, ``ring_fencings_total``, ``ring_round_errors_total``,
  ``ring_handover_duration_seconds``.
- informers (labels ``resource`` = ``plural.group``, ``namespace`` (""= all), ``selector`` (the
  label selector), ``field_selector`` and ``informer`` (its name: see ``Informer``)):
  ``reflector_lists_total``, ``reflector_watches_total``, ``reflector_last_resource_version``, ...,
  ``informer_cache_objects``, ``informer_cache_bytes``, ``informer_cache_json_bytes``,
  ``informer_cache_compressed_objects``, ``informer_cache_compression_ratio``,
  ``informer_synced``; a sharded informer (KEP-5866) also
  ``informer_shard_share`` (its share of the hash space), ``informer_shard_ranges``,
  ``informer_shard_lanes`` (its reflectors), ``informer_shard_lane_merges_total`` (lanes merged
  into one once its ranges were quiet), ``informer_shard_lane_merge_list_failures_total`` (failed
  lists of a merge's lane), ``informer_shard_lane_merges_given_up_total`` (merges given up after
  ``lane_merge_attempts`` of them), ``informer_shard_lane_merge_errors_total`` (merges undone by
  an unexpected error of the merge step), ``reflector_shard_filtered_total`` (objects the
  server sent outside its ranges, dropped by the hash) and
  ``reflector_shard_unfiltered_lists_total``; handler metrics add ``handler``, with
  ``informer_handler_delivery_latency_seconds`` (a sample of deliveries: the first of the changes
  queued at once and every 64th). Two informers never share a series: when two would have the
  same labels (same selection, unnamed, transforms of the same name), the later one's
  ``informer`` label gets ``#2``, ``#3``, ... in the order they were added. Controllers, work
  queues and one informer's handlers of one name are told apart the same way (controller-runtime
  refuses a second controller of a name; here two controllers of one kind both default to it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from informer._histogram import HistogramSnapshot
from informer._requests import REQUESTS
from informer.controller import Controller
from informer.informer import Informer, SharedInformerFactory
from informer.leader_election import LeaderElector
from informer.resource_version import is_comparable
from informer.ring import Ring
from informer.workqueue import Priority

__all__ = [
    "InformerCollector",
    "MetricsServer",
    "register_metrics",
    "render_metrics",
    "serve_metrics",
]

_INFORMER_LABELS = ["resource", "namespace", "selector", "field_selector", "informer"]
_QUEUE_LABELS = ["name", "controller"]

# (name, help, ReflectorStats field): counters per informer
_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("reflector_lists_total", "Lists applied to the cache (paginated or streamed).", "lists"),
    ("reflector_list_pages_total", "List pages fetched.", "list_pages"),
    ("reflector_relists_total", "Lists after the first one.", "relists"),
    ("reflector_watches_total", "Watch requests started (first watch and restarts).", "watches"),
    ("reflector_watch_expired_total", "410 Gone answers (expired resource versions).", "expired"),
    ("reflector_too_large_resource_version_total", "504 Too large RV answers.", "too_large"),
    ("reflector_stale_lists_total", "Lists refused as older than the cache.", "stale_lists"),
    (
        "reflector_stale_events_dropped_total",
        "Events older than the cache, dropped.",
        "stale_events_dropped",
    ),
    (
        "reflector_duplicate_events_dropped_total",
        "Events the cache already held, dropped.",
        "duplicate_events_dropped",
    ),
    ("reflector_bookmarks_total", "Bookmarks received.", "bookmarks"),
    ("reflector_events_applied_total", "Watch events that changed the cache.", "events_applied"),
    ("reflector_errors_total", "List and watch failures recovered from.", "errors"),
    (
        "reflector_resource_version_regressions_total",
        "Times the server's RVs went backwards (an etcd restore).",
        "backwards",
    ),
)


class _Statistics(Protocol):
    def statistics(self) -> Any: ...


Source = Informer | SharedInformerFactory | Controller | LeaderElector | _Statistics


def _source(source: Any) -> Callable[[], Iterable[Any]]:
    if isinstance(source, SharedInformerFactory):
        return lambda: source.informers
    return lambda: (source,)


def _rv_number(rv: str) -> float | None:
    return float(rv) if rv and is_comparable(rv) and rv.isdigit() else None


def _buckets(h: HistogramSnapshot) -> list[tuple[str, float]]:
    return [(floatToGoString(b), float(n)) for b, n in h.buckets()]  # type: ignore[no-untyped-call]


def _histogram(name: str, doc: str, labels: Sequence[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=list(labels))


def _add(family: HistogramMetricFamily, labels: list[str], h: HistogramSnapshot) -> None:
    family.add_metric(labels, _buckets(h), sum_value=h.sum)


def _distinct(label_sets: list[list[str]]) -> list[list[str]]:
    """The label sets, the last label of a repeated one suffixed ``#2``, ``#3``, ... (in order)."""
    seen: dict[tuple[str, ...], int] = {}
    out: list[list[str]] = []
    for labels in label_sets:
        key = tuple(labels)
        n = seen.get(key, 0) + 1
        seen[key] = n
        out.append(labels if n == 1 else [*labels[:-1], f"{labels[-1]}#{n}"])
    return out


class InformerCollector(Collector):
    """Collects the metrics of the informers, factories, controllers, work queues and leader
    electors given to ``add``, and of every request the library sent (process-wide)."""

    def __init__(self) -> None:
        self._sources: list[Callable[[], Iterable[Any]]] = []

    def add(self, *sources: Source) -> None:
        """Watch these (an informer; a factory: also its future informers; a controller: also its
        work queue; a work queue; a leader elector)."""
        for source in sources:
            self._sources.append(_source(source))

    def _objects(self) -> Iterator[Any]:
        seen: set[int] = set()
        for source in self._sources:
            for obj in source():
                if id(obj) not in seen:
                    seen.add(id(obj))
                    yield obj

    def describe(self) -> Iterable[Metric]:
        return []  # collected at scrape time only: the set of informers changes

    def collect(self) -> Iterable[Metric]:
        objects = list(self._objects())
        informers = [o for o in objects if isinstance(o, Informer)]
        controllers = [o for o in objects if isinstance(o, Controller)]
        electors = [o for o in objects if isinstance(o, LeaderElector)]
        rings = [o for o in objects if isinstance(o, Ring)]
        queues = [
            o for o in objects if not isinstance(o, Informer | Controller | LeaderElector | Ring)
        ]
        queues += [c.queue for c in controllers if all(c.queue is not q for q in queues)]
        yield from self._informer_metrics(informers)
        yield from self._controller_metrics(controllers)
        yield from self._queue_metrics(queues)
        yield from _leader_metrics(electors)
        yield from _ring_metrics(rings)
        yield from _request_metrics()

    def _controller_metrics(self, controllers: list[Controller]) -> Iterator[Metric]:
        if not controllers:
            return
        total = CounterMetricFamily(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            labels=["controller", "result"],
        )
        errors = CounterMetricFamily(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            labels=["controller"],
        )
        timeouts = CounterMetricFamily(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            labels=["controller"],
        )
        durations = _histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
        )
        workers = GaugeMetricFamily(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            labels=["controller"],
        )
        active = GaugeMetricFamily(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            labels=["controller"],
        )
        stale = CounterMetricFamily(
            "controller_stale_skips",
            "Keys requeued because the caches had not yet shown the controller's own writes.",
            labels=["controller"],
        )
        cancelled = CounterMetricFamily(
            "controller_reconcile_cancelled",
            "Reconciles cut by a shutdown deadline (not counted as results).",
            labels=["controller"],
        )
        names = _distinct([[c.name] for c in controllers])
        freshness = _histogram(
            "controller_freshness_wait_seconds",
            "Seconds a key waited for the caches to show the controller's own writes before its "
            "reconcile (keys with writes pending only).",
            ["controller"],
        )
        for c, name in zip(controllers, names, strict=True):
            s = c.statistics()
            failed = float(s.errors + s.timeouts)
            for result, value in (
                ("error", failed),
                ("requeue", 0.0),
                ("requeue_after", float(s.requeued_after)),
                ("success", float(s.succeeded)),
            ):
                total.add_metric([*name, result], value)
            errors.add_metric(name, failed)
            timeouts.add_metric(name, float(s.timeouts))
            _add(durations, name, s.duration.histogram)
            workers.add_metric(name, float(s.workers))
            active.add_metric(name, float(s.active))
            stale.add_metric(name, float(s.stale_skips))
            cancelled.add_metric(name, float(s.cancelled))
            _add(freshness, name, s.freshness_wait.histogram)
        yield from (total, errors, timeouts, durations, workers, active, stale, cancelled)
        yield freshness

    def _informer_metrics(self, informers: list[Informer]) -> Iterator[Metric]:
        counters = {
            field: CounterMetricFamily(name, doc, labels=_INFORMER_LABELS)
            for name, doc, field in _COUNTERS
        }
        hl = [*_INFORMER_LABELS, "handler"]
        g = GaugeMetricFamily
        last_rv = g(
            "reflector_last_resource_version",
            "The cache's resource version as a number (absent when RVs are opaque).",
            labels=_INFORMER_LABELS,
        )
        since = g(
            "informer_seconds_since_progress",
            "Seconds since the last list, event or bookmark was applied.",
            labels=_INFORMER_LABELS,
        )
        synced = g(
            "informer_synced", "1 once the first list is in the cache.", labels=_INFORMER_LABELS
        )
        objects = g("informer_cache_objects", "Objects in the cache.", labels=_INFORMER_LABELS)
        cache_bytes = g(
            "informer_cache_bytes",
            "Bytes the cache holds: objects, their strings, the store's tables and indexes, "
            "compression dictionaries (computed from the contents, not sampled from RSS).",
            labels=_INFORMER_LABELS,
        )
        json_bytes = g(
            "informer_cache_json_bytes",
            "Bytes of the JSON of the objects in the cache (uncompressed).",
            labels=_INFORMER_LABELS,
        )
        compressed = g(
            "informer_cache_compressed_objects",
            "Objects the cache holds compressed (ReflectorOptions.compression).",
            labels=_INFORMER_LABELS,
        )
        ratio = g(
            "informer_cache_compression_ratio",
            "informer_cache_bytes over informer_cache_json_bytes (below 1: the cache is "
            "smaller than the JSON it holds).",
            labels=_INFORMER_LABELS,
        )
        share = g(
            "informer_shard_share",
            "Share of the shard hash space a sharded informer holds (0 to 1).",
            labels=_INFORMER_LABELS,
        )
        ranges = g(
            "informer_shard_ranges",
            "Hash ranges a sharded informer holds.",
            labels=_INFORMER_LABELS,
        )
        lanes = g(
            "informer_shard_lanes",
            "Reflectors of a sharded informer (one per set of ranges taken at once, until merged).",
            labels=_INFORMER_LABELS,
        )
        merges = CounterMetricFamily(
            "informer_shard_lane_merges",
            "Merges of a sharded informer's lanes into one (its ranges quiet, every lane listed).",
            labels=_INFORMER_LABELS,
        )
        merge_failures = CounterMetricFamily(
            "informer_shard_lane_merge_list_failures",
            "Lists of a lane merge's reflector that failed (each a failed attempt of a merge).",
            labels=_INFORMER_LABELS,
        )
        merges_given_up = CounterMetricFamily(
            "informer_shard_lane_merges_given_up",
            "Lane merges given up after ReflectorOptions.lane_merge_attempts failed lists "
            "(the lanes kept, the merge tried again later).",
            labels=_INFORMER_LABELS,
        )
        merge_errors = CounterMetricFamily(
            "informer_shard_lane_merge_errors",
            "Lane merges undone by an unexpected error of the merge step (the lanes kept, the "
            "merge tried again later).",
            labels=_INFORMER_LABELS,
        )
        filtered = CounterMetricFamily(
            "reflector_shard_filtered",
            "Objects outside the shard ranges the server sent all the same, dropped by the hash.",
            labels=_INFORMER_LABELS,
        )
        unfiltered = CounterMetricFamily(
            "reflector_shard_unfiltered_lists",
            "List pages or streaming lists the server did not filter by the shard selector.",
            labels=_INFORMER_LABELS,
        )
        depth = g("informer_handler_queue_depth", "Changes waiting for a handler.", labels=hl)
        delivered = CounterMetricFamily(
            "informer_handler_deliveries", "Changes delivered to a handler.", labels=hl
        )
        coalesced = CounterMetricFamily(
            "informer_handler_coalesced",
            "Changes merged into a pending one while the handler was behind.",
            labels=hl,
        )
        errors = CounterMetricFamily(
            "informer_handler_errors", "Handler calls that raised.", labels=hl
        )
        latency = _histogram(
            "informer_handler_delivery_latency_seconds",
            "Seconds from a change being queued for a handler to the handler's call (a sample: "
            "the first of the changes queued at once and every 64th).",
            hl,
        )
        label_sets = _distinct(
            [
                [
                    inf.resource.group_resource,
                    inf.reflector.namespace or "",
                    inf.reflector.label_selector or "",
                    inf.reflector.field_selector or "",
                    inf.name,
                ]
                for inf in informers
            ]
        )
        for inf, labels in zip(informers, label_sets, strict=True):
            stats = inf.statistics()
            for field, family in counters.items():
                family.add_metric(labels, float(getattr(stats, field)))
            rv = _rv_number(stats.cache_resource_version)
            if rv is not None:
                last_rv.add_metric(labels, rv)
            fresh = inf.store.freshness().seconds_since_progress
            if fresh is not None:
                since.add_metric(labels, fresh)
            synced.add_metric(labels, 1.0 if stats.synced else 0.0)
            objects.add_metric(labels, float(len(inf.store)))
            size = stats.cache
            cache_bytes.add_metric(labels, float(size.bytes))
            json_bytes.add_metric(labels, float(size.json_bytes))
            compressed.add_metric(labels, float(size.compressed_objects))
            ratio.add_metric(labels, size.ratio)
            shard = inf.shard_statistics()
            if shard is not None:
                share.add_metric(labels, shard.share)
                ranges.add_metric(labels, float(len(shard.shards)))
                lanes.add_metric(labels, float(shard.lanes))
                merges.add_metric(labels, float(shard.merges))
                merge_failures.add_metric(labels, float(shard.merge_list_failures))
                merges_given_up.add_metric(labels, float(shard.merges_given_up))
                merge_errors.add_metric(labels, float(shard.merge_errors))
                filtered.add_metric(labels, float(stats.shard_filtered))
                unfiltered.add_metric(labels, float(stats.shard_unfiltered_lists))
            handlers = inf.handlers  # two of one name (a default one reused, twin controllers)
            named = _distinct([[*labels, handler.name] for handler in handlers])
            for handler, hlabels in zip(handlers, named, strict=True):
                h = handler.statistics()
                depth.add_metric(hlabels, float(h.pending))
                delivered.add_metric(hlabels, float(h.delivered))
                coalesced.add_metric(hlabels, float(h.coalesced))
                errors.add_metric(hlabels, float(h.errors))
                _add(latency, hlabels, h.latency.histogram)
        yield from counters.values()
        yield from (last_rv, since, synced, objects, cache_bytes, json_bytes, compressed, ratio)
        yield from (depth, delivered, coalesced, errors, latency)
        yield from (share, ranges, lanes, merges, merge_failures, merges_given_up, merge_errors)
        yield from (filtered, unfiltered)

    def _queue_metrics(self, queues: list[Any]) -> Iterator[Metric]:
        if not queues:
            return
        g = GaugeMetricFamily
        depth = g(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            labels=[*_QUEUE_LABELS, "priority"],
        )
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=_QUEUE_LABELS
        )
        retries = CounterMetricFamily(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            labels=_QUEUE_LABELS,
        )
        queue_duration = _histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            _QUEUE_LABELS,
        )
        work_duration = _histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            _QUEUE_LABELS,
        )
        unfinished = g(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads.",
            labels=_QUEUE_LABELS,
        )
        longest = g(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=_QUEUE_LABELS,
        )
        waiting = g("workqueue_waiting", "Keys whose delay has not passed.", labels=_QUEUE_LABELS)
        processing = g("workqueue_processing", "Keys held by workers.", labels=_QUEUE_LABELS)
        kept = [(q, q.statistics()) for q in queues]
        kept = [(q, s) for q, s in kept if hasattr(s, "depth")]
        names = _distinct([[str(getattr(q, "name", "") or "")] for q, _ in kept])
        for (_, stats), (name,) in zip(kept, names, strict=True):
            labels = [name, name]
            by_priority = {int(p): 0 for p in Priority}
            by_priority.update(stats.depth_by_priority)
            for priority, count in sorted(by_priority.items(), reverse=True):
                depth.add_metric([*labels, str(priority)], float(count))
            adds.add_metric(labels, float(getattr(stats, "new_keys", stats.adds)))
            retries.add_metric(labels, float(stats.retries))
            _add(queue_duration, labels, stats.queue_latency.histogram)
            _add(work_duration, labels, stats.work_duration.histogram)
            unfinished.add_metric(labels, float(getattr(stats, "unfinished_work", 0.0)))
            longest.add_metric(labels, float(stats.longest_running))
            waiting.add_metric(labels, float(stats.waiting))
            processing.add_metric(labels, float(stats.processing))
        yield from (depth, adds, retries, queue_duration, work_duration, unfinished, longest)
        yield from (waiting, processing)


def _leader_metrics(electors: list[LeaderElector]) -> Iterator[Metric]:
    if not electors:
        return
    status = GaugeMetricFamily(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
        "1 indicates master. 'name' is the string used to identify the lease. Please make sure "
        "to group by name.",
        labels=["name"],
    )
    for elector in electors:
        status.add_metric([elector.name], 1.0 if elector.is_leader else 0.0)
    yield status


def _ring_metrics(rings: list[Ring]) -> Iterator[Metric]:
    """A sharding ring member's view (``informer.ring``), labelled ``ring`` and ``identity``."""
    if not rings:
        return
    labels = ["ring", "identity"]
    members = GaugeMetricFamily("ring_members", "Live members this member counts.", labels=labels)
    share = GaugeMetricFamily(
        "ring_share",
        "Share of the hash space: target (assigned), held (claimed), acting (reconciled).",
        labels=[*labels, "kind"],
    )
    ranges = GaugeMetricFamily("ring_ranges", "Ranges acted on.", labels=labels)
    counters = {
        field: CounterMetricFamily(f"ring_{name}", doc, labels=labels)
        for field, name, doc in (
            ("started", "ranges_started_total", "Ranges started (acted on)."),
            ("stopped", "ranges_stopped_total", "Ranges stopped (handed over or fenced)."),
            ("taken_over", "takeovers_total", "Starts of ranges of a member whose Lease expired."),
            ("conflicts", "conflicts_total", "Claims withdrawn because another member claimed."),
            ("fenced", "fencings_total", "Terms ended without a renewal: every range dropped."),
            ("round_errors", "round_errors_total", "Rounds that failed (retried next round)."),
        )
    }
    handover = _histogram(
        "ring_handover_duration_seconds",
        "Seconds from a change of this member's target to acting on all of it.",
        labels,
    )
    for ring in rings:
        s = ring.statistics()
        ids = [s.name, s.identity]
        members.add_metric(ids, float(s.members))
        for kind, value in (("target", s.target), ("held", s.held), ("acting", s.acting)):
            share.add_metric([*ids, kind], value)
        ranges.add_metric(ids, float(s.ranges))
        for field, family in counters.items():
            family.add_metric(ids, float(getattr(s, field)))
        _add(handover, ids, s.handover.histogram)
    yield from (members, share, ranges, *counters.values(), handover)


def _request_metrics() -> Iterator[Metric]:
    results = CounterMetricFamily(
        "rest_client_requests",
        "Number of HTTP requests, partitioned by status code, method, and host.",
        labels=["code", "method", "host"],
    )
    for (code, method, host), count in sorted(REQUESTS.results().items()):
        results.add_metric([code, method, host], float(count))
    latency = _histogram(
        "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb, and host.",
        ["verb", "host"],
    )
    for (verb, host), h in sorted(REQUESTS.latencies().items()):
        _add(latency, [verb, host], h)
    retries = CounterMetricFamily(
        "rest_client_request_retries",
        "Number of request retries, partitioned by status code, verb, and host.",
        labels=["code", "verb", "host"],
    )
    for (code, method, host), count in sorted(REQUESTS.retries().items()):
        retries.add_metric([code, method, host], float(count))
    yield from (results, latency, retries)


def register_metrics(
    *sources: Source,
    registry: CollectorRegistry | None = None,
) -> InformerCollector:
    """Register one collector for these informers, factories, controllers, work queues and
    leader electors (and the library's requests); returns it (its ``add`` watches more).

    Register one collector per registry (add sources to it): two would export the request
    metrics twice."""
    collector = InformerCollector()
    collector.add(*sources)
    (registry if registry is not None else REGISTRY).register(collector)
    return collector


def render_metrics(
    registry: CollectorRegistry | None = None, accept: str | None = None
) -> tuple[bytes, str]:
    """One scrape of ``registry`` (the default one): the body and its ``Content-Type``, in the
    format the ``Accept`` header asks (Prometheus text, or OpenMetrics). For a ``/metrics``
    handler of one's own (an aiohttp route: ``web.Response(body=body,
    headers={"Content-Type": content_type})``)."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry if registry is not None else REGISTRY), content_type


class MetricsServer:
    """The endpoint ``serve_metrics`` started: prometheus_client's WSGI server, serving in a
    daemon thread of its own; ``async with`` it, or ``await shutdown()``."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self._stopped: asyncio.Future[None] | None = None

    @property
    def server_port(self) -> int:
        """The port it listens on (the one chosen, when asked for port 0)."""
        return self._server.server_port

    async def shutdown(self) -> None:
        """Stop serving and close the listening socket; returns once both are done (a second
        call waits for the first one's stop).

        The stdlib server notices a stop request only at its next poll (up to 0.5 s later):
        that wait runs in a worker thread, so the event loop keeps running meanwhile."""
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(asyncio.to_thread(self._stop))
        await asyncio.shield(self._stopped)

    def _stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    async def __aenter__(self) -> MetricsServer:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()


def serve_metrics(
    port: int, addr: str = "127.0.0.1", registry: CollectorRegistry | None = None
) -> MetricsServer:
    """Serve ``registry`` (the default one) on ``http://addr:port/metrics`` in a thread; returns
    the server (``server_port`` is the port, useful with 0; ``await shutdown()`` stops it)."""
    server, thread = start_http_server(
        port, addr=addr, registry=registry if registry is not None else REGISTRY
    )
    return MetricsServer(server, thread)
