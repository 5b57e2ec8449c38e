"""The manager's ``/metrics``: what ``informer.metrics`` collects, rendered from a Prometheus
registry (the default one, so the process's own and the application's metrics are there too).

``prometheus-client`` is an optional extra: without it nothing is registered and ``/metrics``
answers 501 (see ``_endpoints``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["MetricsExport"]


class MetricsExport:
    """Registers the manager's informers, factories and controllers in ``registry`` (the default
    one when None) while running, and renders the registry for ``/metrics``."""

    def __init__(self, registry: Any | None = None) -> None:
        try:
            import prometheus_client

            from informer import metrics
        except ImportError:  # the optional extra is not installed
            self.available = False
            return
        self.available = True
        self.registry = registry if registry is not None else prometheus_client.REGISTRY
        self._metrics = metrics
        self._collector: Any | None = None

    def register(self, sources: Iterable[Any]) -> None:
        if self.available and self._collector is None:
            self._collector = self._metrics.register_metrics(*sources, registry=self.registry)

    def unregister(self) -> None:
        if self.available and self._collector is not None:
            self.registry.unregister(self._collector)
            self._collector = None

    def render(self, accept: str) -> tuple[bytes, str] | None:
        if not self.available:
            return None
        body, content_type = self._metrics.render_metrics(self.registry, accept)
        return body, content_type
