"""``informer watch``'s live view on a terminal: the freshness of its informer and its cache.

A header panel (server RV, cache RV, objects), the informer's freshness row, and the first objects
of the cache by key, as many as the terminal has rows for; redrawn every ``refresh`` seconds.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from informer.cli._monitor import InformerMonitor
from informer.cli._view import freshness_table, header_panel
from informer.informer import Informer
from informer.objects import KubeObject

__all__ = ["live"]

_TABLE_ROWS = 30
_VIEW_LINES = 18  # the view without the cache table's rows (header, freshness, titles)


def _age(obj: KubeObject, now: datetime) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(created, str):
        return "-"
    try:
        seconds = int(
            (now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()
        )
    except ValueError:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _cache_table(informer: Informer, rows: int) -> Table:
    """The first ``rows`` objects of the cache, by key."""
    now = datetime.now(UTC)
    objects = sorted(informer.store.list(), key=lambda o: o.key)
    table = Table(
        title=f"cache: {len(objects)} objects"
        + (f" (first {rows})" if len(objects) > rows else ""),
        title_justify="left",
        expand=True,
    )
    for column in ("name", "namespace", "resourceVersion", "age"):
        table.add_column(column, no_wrap=True)
    for obj in objects[:rows]:
        table.add_row(obj.name, obj.namespace or "", obj.resource_version, _age(obj, now))
    return table


async def live(informer: Informer, monitor: InformerMonitor, refresh: float) -> int:
    """Show the view until cancelled (Ctrl-C)."""
    console = Console()

    def render() -> Group:
        row = monitor.sample()
        facts = {
            "server RV": str(monitor.lag.latest if monitor.lag.latest is not None else "-"),
            "cache RV": row.cache_rv or "-",
            "objects": str(row.objects),
        }
        return Group(
            header_panel(f"informer watch {monitor.name}", facts),
            freshness_table([row], title="freshness"),
            _cache_table(informer, max(1, min(_TABLE_ROWS, console.height - _VIEW_LINES))),
        )

    with Live(render(), console=console, refresh_per_second=4, transient=False) as view:
        while True:
            await asyncio.sleep(refresh)
            view.update(render())
