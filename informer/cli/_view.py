"""Rendering of monitor rows: a ``rich`` table for terminals, plain lines for pipes and logs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from informer.cli._monitor import Row

__all__ = ["freshness_table", "header_panel", "plain_line"]


def _lag(row: Row) -> tuple[str, str]:
    if row.lag_revisions is None or row.lag_seconds is None:
        return "-", "-"
    return str(row.lag_revisions), f"{row.lag_seconds:.1f}"


def freshness_table(rows: Sequence[Row], title: str = "informers") -> Table:
    """One line per informer: sync, rates, cache RV and lag, recoveries, handler queue."""
    table = Table(title=title, title_justify="left", expand=True)
    for column, justify in (
        ("informer", "left"),
        ("sync", "right"),
        ("objects", "right"),
        ("events/s", "right"),
        ("cache RV", "right"),
        ("lag rev", "right"),
        ("lag s", "right"),
        ("relists", "right"),
        ("410s", "right"),
        ("stale dropped", "right"),
        ("errors", "right"),
        ("handler queue", "right"),
    ):
        table.add_column(column, justify=justify, no_wrap=column != "informer")  # type: ignore[arg-type]
    for row in rows:
        lag_rev, lag_s = _lag(row)
        sync = Text(row.progress, style="green" if row.synced else "yellow")
        table.add_row(
            row.name,
            sync,
            str(row.objects),
            f"{row.events_per_s:.0f}",
            row.cache_rv or "-",
            lag_rev,
            lag_s,
            str(row.relists),
            str(row.expired),
            str(row.stale_dropped),
            str(row.errors),
            str(row.handler_depth),
        )
    return table


def header_panel(title: str, facts: Mapping[str, str]) -> Panel:
    """A one-line panel of ``key value`` facts (server RV, writes/s, freshness waits, ...)."""
    text = Text()
    for i, (key, value) in enumerate(facts.items()):
        if i:
            text.append("   ")
        text.append(f"{key} ", style="bold")
        text.append(value)
    return Panel(text, title=title, title_align="left")


def plain_line(row: Row) -> str:
    """The row as one ``key=value`` line."""
    lag_rev, lag_s = _lag(row)
    return (
        f"{row.name}: sync={row.progress} objects={row.objects} "
        f"events/s={row.events_per_s:.0f} cache_rv={row.cache_rv or '-'} lag_rev={lag_rev} "
        f"lag_s={lag_s} relists={row.relists} 410s={row.expired} "
        f"stale_dropped={row.stale_dropped} errors={row.errors} handler_queue={row.handler_depth}"
    )


def group(*parts: RenderableType) -> Group:
    return Group(*parts)
