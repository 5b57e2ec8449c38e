"""Prometheus metrics for informers and work queues (``pip install 'informer[metrics]'``).

``register_metrics(factory)`` registers one collector that reads ``statistics()`` of everything it
watches at scrape time: nothing is added to the hot path, and informers a ``SharedInformerFactory``
creates later appear on their own. ``serve_metrics(port)`` exposes the registry over HTTP.

Names follow the Prometheus conventions (``_total`` counters, base units) and client-go's where
client-go has one (``reflector_lists_total``, ``reflector_watches_total``,
``reflector_last_resource_version``, ``workqueue_depth``, ``workqueue_adds_total``,
``workqueue_retries_total``, ``workqueue_queue_duration_seconds``,
``workqueue_work_duration_seconds``, ``workqueue_longest_running_processor_seconds``).
Informer metrics carry ``resource`` (``plural.group``), ``namespace`` ("" = all) and ``selector``;
handler metrics add ``handler``; work queue metrics carry ``name``. Controllers export
controller-runtime's ``controller_runtime_reconcile_total{controller,result}``,
``controller_runtime_reconcile_errors_total``, ``controller_runtime_reconcile_time_seconds`` and
``controller_runtime_active_workers``, plus ``controller_stale_skips_total``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from informer.controller import Controller
from informer.informer import Informer, SharedInformerFactory
from informer.resource_version import is_comparable

__all__ = ["InformerCollector", "register_metrics", "serve_metrics"]

_INFORMER_LABELS = ["resource", "namespace", "selector"]

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


def _source(source: Any) -> Callable[[], Iterable[Any]]:
    if isinstance(source, SharedInformerFactory):
        return lambda: source.informers
    return lambda: (source,)


def _rv_number(rv: str) -> float | None:
    return float(rv) if rv and is_comparable(rv) and rv.isdigit() else None


class InformerCollector(Collector):
    """Collects the metrics of the informers, factories and work queues given to ``add``."""

    def __init__(self) -> None:
        self._sources: list[Callable[[], Iterable[Any]]] = []

    def add(self, *sources: Informer | SharedInformerFactory | Controller | _Statistics) -> None:
        """Watch these (an informer; a factory: also its future informers; a controller: also its
        work queue; a work queue)."""
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
        queues = [o for o in objects if not isinstance(o, Informer | Controller)]
        queues += [c.queue for c in controllers if all(c.queue is not q for q in queues)]
        yield from self._informer_metrics(informers)
        yield from self._controller_metrics(controllers)
        yield from self._queue_metrics(queues)

    def _controller_metrics(self, controllers: list[Controller]) -> Iterator[Metric]:
        if not controllers:
            return
        total = CounterMetricFamily(
            "controller_runtime_reconcile_total",
            "Reconciles by result (success, requeue_after, error, timeout, cancelled).",
            labels=["controller", "result"],
        )
        errors = CounterMetricFamily(
            "controller_runtime_reconcile_errors_total",
            "Reconciles that raised or timed out.",
            labels=["controller"],
        )
        stale = CounterMetricFamily(
            "controller_stale_skips_total",
            "Keys requeued because the caches had not yet shown the controller's own writes.",
            labels=["controller"],
        )
        active = GaugeMetricFamily(
            "controller_runtime_active_workers", "Workers reconciling now.", labels=["controller"]
        )
        durations = Metric(
            "controller_runtime_reconcile_time_seconds",
            "Seconds per reconcile, over a recent window.",
            "summary",
        )
        for c in controllers:
            s = c.statistics()
            name = [c.name]
            for result, value in (
                ("success", s.succeeded),
                ("requeue_after", s.requeued_after),
                ("error", s.errors),
                ("timeout", s.timeouts),
                ("cancelled", s.cancelled),
            ):
                total.add_metric([c.name, result], float(value))
            errors.add_metric(name, float(s.errors + s.timeouts))
            stale.add_metric(name, float(s.stale_skips))
            active.add_metric(name, float(s.active))
            for q, seconds in (("0.5", s.duration.p50), ("0.99", s.duration.p99)):
                durations.add_sample(durations.name, {"controller": c.name, "quantile": q}, seconds)
            durations.add_sample(
                durations.name + "_count", {"controller": c.name}, float(s.duration.count)
            )
        yield from (total, errors, stale, active, durations)

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
        depth = g("informer_handler_queue_depth", "Changes waiting for a handler.", labels=hl)
        delivered = CounterMetricFamily(
            "informer_handler_deliveries_total", "Changes delivered to a handler.", labels=hl
        )
        coalesced = CounterMetricFamily(
            "informer_handler_coalesced_total",
            "Changes merged into a pending one while the handler was behind.",
            labels=hl,
        )
        errors = CounterMetricFamily(
            "informer_handler_errors_total", "Handler calls that raised.", labels=hl
        )
        latency = Metric(
            "informer_handler_delivery_latency_seconds",
            "Seconds from a change reaching the cache to its handler call, over a recent window.",
            "summary",
        )
        for inf in informers:
            r = inf.reflector
            labels = [r.resource.group_resource, r.namespace or "", r.label_selector or ""]
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
            for handler in inf.handlers:
                h = handler.statistics()
                hlabels = [*labels, handler.name]
                depth.add_metric(hlabels, float(h.pending))
                delivered.add_metric(hlabels, float(h.delivered))
                coalesced.add_metric(hlabels, float(h.coalesced))
                errors.add_metric(hlabels, float(h.errors))
                window = h.latency
                if window.count:
                    names = dict(
                        zip(("resource", "namespace", "selector", "handler"), hlabels, strict=True)
                    )
                    for q, value in (("0.5", window.p50), ("0.99", window.p99)):
                        latency.add_sample(latency.name, {**names, "quantile": q}, value)
                    latency.add_sample(latency.name + "_count", names, float(window.count))
        yield from counters.values()
        yield from (last_rv, since, synced, objects, depth, delivered, coalesced, errors, latency)

    def _queue_metrics(self, queues: list[Any]) -> Iterator[Metric]:
        if not queues:
            return
        g = GaugeMetricFamily
        depth = g("workqueue_depth", "Keys ready to be handed out.", labels=["name"])
        waiting = g("workqueue_waiting", "Keys whose delay has not passed.", labels=["name"])
        processing = g("workqueue_processing", "Keys held by workers.", labels=["name"])
        adds = CounterMetricFamily("workqueue_adds_total", "Adds accepted.", labels=["name"])
        retries = CounterMetricFamily(
            "workqueue_retries_total", "Rate-limited re-adds.", labels=["name"]
        )
        longest = g(
            "workqueue_longest_running_processor_seconds",
            "Age of the oldest key held by a worker.",
            labels=["name"],
        )
        durations = {
            "queue_latency": Metric(
                "workqueue_queue_duration_seconds",
                "Seconds a key waited ready before a worker took it, over a recent window.",
                "summary",
            ),
            "work_duration": Metric(
                "workqueue_work_duration_seconds",
                "Seconds a worker held a key, over a recent window.",
                "summary",
            ),
        }
        for queue in queues:
            stats = queue.statistics()
            if not hasattr(stats, "depth"):
                continue
            name = [str(getattr(queue, "name", "") or "")]
            depth.add_metric(name, float(stats.depth))
            waiting.add_metric(name, float(stats.waiting))
            processing.add_metric(name, float(stats.processing))
            adds.add_metric(name, float(stats.adds))
            retries.add_metric(name, float(stats.retries))
            longest.add_metric(name, float(stats.longest_running))
            for field, metric in durations.items():
                p = getattr(stats, field)
                for q, value in (("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99)):
                    metric.add_sample(metric.name, {"name": name[0], "quantile": q}, value)
                metric.add_sample(metric.name + "_count", {"name": name[0]}, float(p.count))
        yield from (depth, waiting, processing, adds, retries, longest, *durations.values())


def register_metrics(
    *sources: Informer | SharedInformerFactory | Controller | _Statistics,
    registry: CollectorRegistry | None = None,
) -> InformerCollector:
    """Register one collector for these informers, factories, controllers and work queues;
    returns it (its ``add`` watches more)."""
    collector = InformerCollector()
    collector.add(*sources)
    (registry if registry is not None else REGISTRY).register(collector)
    return collector


def serve_metrics(
    port: int, addr: str = "127.0.0.1", registry: CollectorRegistry | None = None
) -> WSGIServer:
    """Serve ``registry`` (the default one) on ``http://addr:port/metrics`` in a thread; returns
    the server (``server_port`` is the port, useful with 0; ``shutdown()`` stops it)."""
    server, _thread = start_http_server(
        port, addr=addr, registry=registry if registry is not None else REGISTRY
    )
    return server
