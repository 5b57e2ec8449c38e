"""How the demos show themselves: a live ``rich`` view on a terminal, plain lines on a pipe.

Both ``demo`` runs (one informer and its controllers; ``--replicas``: sharded controllers) show
their state the same way while they run, and print their summary the same way after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import textwrap
from typing import Protocol

from rich.console import Console, RenderableType


class Shown(Protocol):
    """A demo as its view reads it."""

    args: argparse.Namespace  # ``interval``: seconds between plain lines

    def render(self) -> RenderableType:
        """The live view's contents (a terminal)."""
        ...

    def plain(self) -> list[str]:
        """The lines printed every ``interval`` (a pipe)."""
        ...


async def show(demo: Shown, stop: asyncio.Event, console: Console) -> None:
    """The live view until ``stop`` (a terminal), else plain lines every ``--interval``."""
    if console.is_terminal:
        from rich.live import Live

        with Live(demo.render(), console=console, refresh_per_second=4) as live:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
                live.update(demo.render())
        return
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), demo.args.interval)
        for line in demo.plain():
            print(line, flush=True)


def say(console: Console, line: str, indent: int | None = None) -> None:
    """One line of a summary: whole on a pipe; on a terminal wrapped at its width, the
    continuation lines indented by ``indent`` (default: under the line's own indent, plus 4)."""
    if not console.is_terminal:
        console.print(line, highlight=False, soft_wrap=True)
        return
    if indent is None:
        indent = len(line) - len(line.lstrip(" ")) + 4
    text = textwrap.fill(line, width=console.width, subsequent_indent=" " * indent)
    console.print(text, highlight=False, soft_wrap=True)
