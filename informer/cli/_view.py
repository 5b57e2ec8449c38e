"""Rendering of monitor rows: ``rich`` renderables for terminals, plain lines for pipes and logs.

The terminal renderables lay themselves out for the width they are given when drawn (a resized
terminal redraws right): the freshness table shows the columns that fit, each whole, in a fixed
order of importance, and names the ones left out; the header panel breaks its facts between
lines, never inside one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from informer.cli._monitor import Row

__all__ = ["FreshnessTable", "freshness_table", "header_panel", "plain_line"]


def _lag(row: Row) -> tuple[str, str]:
    if row.lag_revisions is None or row.lag_seconds is None:
        return "-", "-"
    return str(row.lag_revisions), f"{row.lag_seconds:.1f}"


@dataclass(frozen=True, slots=True)
class _Column:
    header: str
    justify: Literal["left", "right"]
    cell: Callable[[Row], str]


# In display order. The name and sync state always show; the others by _PRIORITY while they fit.
_COLUMNS: tuple[_Column, ...] = (
    _Column("informer", "left", lambda r: r.name),
    _Column("sync", "right", lambda r: r.progress),
    _Column("objects", "right", lambda r: str(r.objects)),
    _Column("cache", "right", lambda r: _cache(r)),
    _Column("events/s", "right", lambda r: f"{r.events_per_s:.0f}"),
    _Column("cache RV", "right", lambda r: r.cache_rv or "-"),
    _Column("lag rev", "right", lambda r: _lag(r)[0]),
    _Column("lag s", "right", lambda r: _lag(r)[1]),
    _Column("relists", "right", lambda r: str(r.relists)),
    _Column("410s", "right", lambda r: str(r.expired)),
    _Column("stale dropped", "right", lambda r: str(r.stale_dropped)),
    _Column("errors", "right", lambda r: str(r.errors)),
    _Column("handler queue", "right", lambda r: str(r.handler_depth)),
)
_PRIORITY = (
    "informer",
    "sync",
    "cache RV",
    "lag rev",
    "lag s",
    "relists",
    "410s",
    "stale dropped",
    "errors",
    "events/s",
    "objects",
    "cache",
    "handler queue",
)


def _fitting(widths: Mapping[str, int], available: int) -> tuple[list[str], list[str]]:
    """The columns (by header) that fit in ``available`` cells, taken in order of priority, and
    those left out. A column takes its widest cell, one space each side and one border."""
    used = 1  # the left edge
    shown: list[str] = []
    hidden: list[str] = []
    for header in _PRIORITY:
        need = widths[header] + 3
        if len(shown) < 2 or used + need <= available:  # the name and the sync state always
            shown.append(header)
            used += need
        else:
            hidden.append(header)
    return shown, hidden


class FreshnessTable:
    """One line per informer: sync, rates, cache RV and lag, recoveries, handler queue.

    Laid out when drawn: the columns that fit the width, whole, and a note naming the others."""

    def __init__(self, rows: Sequence[Row], title: str = "informers") -> None:
        self.rows = list(rows)
        self.title = title

    def layout(self, width: int) -> tuple[list[str], list[str]]:
        """The columns shown at ``width`` (in display order) and the ones left out."""
        widths = {
            c.header: max([cell_len(c.header), *(cell_len(c.cell(r)) for r in self.rows)])
            for c in _COLUMNS
        }
        shown, hidden = _fitting(widths, width)
        in_order = [c.header for c in _COLUMNS if c.header in shown]
        return in_order, [c.header for c in _COLUMNS if c.header in hidden]

    def table(self, width: int) -> Table:
        shown, hidden = self.layout(width)
        columns = [c for c in _COLUMNS if c.header in shown]
        table = Table(
            title=self.title,
            title_justify="left",
            caption=f"(not shown at this width: {', '.join(hidden)})" if hidden else None,
            caption_justify="left",
            expand=True,
        )
        for column in columns:
            table.add_column(column.header, justify=column.justify, no_wrap=True)
        for row in self.rows:
            cells: list[str | Text] = []
            for column in columns:
                text = column.cell(row)
                if column.header == "sync":
                    cells.append(Text(text, style="green" if row.synced else "yellow"))
                else:
                    cells.append(text)
            table.add_row(*cells)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table(options.max_width)


def freshness_table(rows: Sequence[Row], title: str = "informers") -> FreshnessTable:
    """The rows as a :class:`FreshnessTable`."""
    return FreshnessTable(rows, title)


def _pack(items: Iterable[Text], width: int, gap: int = 3) -> Text:
    """``items`` on lines of at most ``width`` cells, ``gap`` spaces apart, none broken."""
    out = Text()
    used = 0
    for item in items:
        size = item.cell_len
        if used and used + gap + size > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(" " * gap)
            used += gap
        out.append_text(item)
        used += size
    return out


class _Facts:
    """``key value`` facts, packed to the width they are drawn at."""

    def __init__(self, facts: Mapping[str, str]) -> None:
        self.facts = dict(facts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        items = []
        for key, value in self.facts.items():
            item = Text()
            item.append(f"{key} ", style="bold")
            item.append(value)
            items.append(item)
        yield _pack(items, options.max_width)


def header_panel(title: str, facts: Mapping[str, str]) -> Panel:
    """A panel of ``key value`` facts (server RV, writes/s, freshness waits, ...), as many to a
    line as fit, none broken across lines."""
    return Panel(_Facts(facts), title=title, title_align="left")


def plain_line(row: Row) -> str:
    """The row as one ``key=value`` line."""
    lag_rev, lag_s = _lag(row)
    return (
        f"{row.name}: sync={row.progress} objects={row.objects} "
        f"events/s={row.events_per_s:.0f} cache_rv={row.cache_rv or '-'} lag_rev={lag_rev} "
        f"lag_s={lag_s} relists={row.relists} 410s={row.expired} "
        f"stale_dropped={row.stale_dropped} errors={row.errors} handler_queue={row.handler_depth}"
        f" cache_bytes={row.cache_bytes} cache_vs_json={row.cache_ratio:.2f}"
    )


def _cache(row: Row) -> str:
    """The bytes the cache holds (K, M, G: powers of 1024) and their ratio to the JSON."""
    if not row.objects:
        return "-"
    value = float(row.cache_bytes)
    unit = ""
    for unit in ("", "K", "M", "G"):
        if value < 1024 or unit == "G":
            break
        value /= 1024
    return f"{value:.0f}{unit} {row.cache_ratio:.2f}x"
