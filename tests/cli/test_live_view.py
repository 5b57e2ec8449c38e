"""The live views under a pseudo-terminal, rendered by a terminal emulator and read as a screen.

Each view is checked at 80x24 and at a wide size: what scrolled off the screen is kept (pyte's
history), so a stale copy of a panel left behind by a redraw is seen wherever it is; every table
column shown is whole (header and cells), and the columns that do not fit are named, not cut.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pexpect
import pyte
import pytest

from .conftest import REPO_ROOT, Served, cli_env

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 40), id="160x40")]
FRESHNESS_COLUMNS = (
    "informer",
    "sync",
    "objects",
    "cache",
    "events/s",
    "cache RV",
    "lag rev",
    "lag s",
    "relists",
    "410s",
    "stale dropped",
    "errors",
    "handler queue",
)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def terminal_env() -> dict[str, str]:
    """The command's environment on the pseudo-terminal: its size is the terminal's alone (a
    COLUMNS or LINES exported to the suite, as pytest-xdist's workers have, would override it)."""
    env = {**cli_env(), "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


class Terminal:
    """A child process on a pseudo-terminal and everything a terminal would show of it."""

    def __init__(self, *args: str, size: tuple[int, int], timeout: float = 60) -> None:
        self.columns, self.rows = size
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "informer", *args],
            cwd=str(REPO_ROOT),
            env=terminal_env(),
            dimensions=(self.rows, self.columns),
            encoding="utf-8",
            # the output cut at Ctrl-C may end inside a box-drawing character: its decoder's
            # final flush would raise UnicodeDecodeError (the screen read before is complete)
            codec_errors="replace",
            timeout=timeout,
            # Ctrl-C as a terminal delivers it, also when the suite itself was started in the
            # background (a non-interactive shell's background jobs ignore SIGINT, and the
            # command inherited that: it never saw the interrupt)
            preexec_fn=_default_sigint,
        )
        self.screen = pyte.HistoryScreen(self.columns, self.rows, history=100_000)
        self._stream = pyte.Stream(self.screen)

    def wait_for(self, pattern: str) -> list[str]:
        """Read output until ``pattern``; the screen's lines then."""
        self.child.expect(pattern)
        self._stream.feed(self.child.before + self.child.after)
        return [line.rstrip() for line in self.screen.display]

    def everything(self) -> list[str]:
        """The lines scrolled off the top, then the screen."""
        scrolled = [
            "".join(line[x].data for x in range(self.columns)).rstrip()
            for line in self.screen.history.top
        ]
        return scrolled + [line.rstrip() for line in self.screen.display]

    def end(self) -> int:
        """Wait for the exit; its status (-1 after a signal)."""
        self.child.expect(pexpect.EOF)
        self._stream.feed(self.child.before)
        self.child.close()
        status: int | None = self.child.exitstatus
        return -1 if status is None else status


def table_columns(lines: list[str], title: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and the body rows (cells) of the table titled ``title``."""
    start = max(i for i, line in enumerate(lines) if line.startswith(title))
    header = [cell.strip() for cell in lines[start + 2].strip("┃").split("┃")]
    body = []
    for line in lines[start + 4 :]:
        if not line.startswith("│"):
            break
        body.append([cell.strip() for cell in line.strip("│").split("│")])
    return header, body


def assert_whole_columns(header: list[str], body: list[list[str]], width: int) -> None:
    assert header[0] == "informer", header
    assert all(h in FRESHNESS_COLUMNS for h in header), header  # none cut
    assert body and all(len(row) == len(header) for row in body), (header, body)
    assert all("…" not in cell for row in body for cell in row), body
    assert all(cell for row in body for cell in row), body  # no column squeezed to nothing


@dataclass
class DemoView:
    """One demo run's terminal: its exit status and everything it showed."""

    columns: int
    status: int
    lines: list[str]


def run_demo_view(size: tuple[int, int]) -> DemoView:
    # info logs: records are printed while the view is live, above it
    terminal = Terminal(
        "demo",
        "--duration",
        "3",
        "--objects",
        "50",
        "--rate",
        "10",
        "--log-level",
        "info",
        size=size,
    )
    terminal.wait_for("every cache equals")
    status = terminal.end()
    return DemoView(terminal.columns, status, terminal.everything())


@pytest.fixture(scope="module")
def demo_views() -> Iterator[dict[tuple[int, int], Future[DemoView]]]:
    """The demo's runs at every size, started together when the first test asks (3 s each, one
    after the other before); each is read by its own thread, so neither waits on a full pty."""
    sizes = [param.values[0] for param in SIZES]
    with ThreadPoolExecutor(len(sizes)) as pool:
        yield {size: pool.submit(run_demo_view, size) for size in sizes}


@pytest.mark.parametrize("size", SIZES)
def test_demo_view_fits_the_terminal_with_no_stale_copies(
    demo_views: dict[tuple[int, int], Future[DemoView]], size: tuple[int, int]
) -> None:
    terminal = demo_views[size].result(timeout=120)
    assert terminal.status == 0
    lines = terminal.lines
    assert all(len(line) <= terminal.columns for line in lines)
    assert sum("╭─ informer demo" in line for line in lines) == 1, "\n".join(lines)
    assert any(re.search(r"\b(reflector|controller)\.\w+", line) for line in lines)  # logs too
    title = "informers (shared, one watch each)"
    assert sum(line.startswith(title) for line in lines) == 1
    text = "\n".join(lines)
    assert "server RV" in text and "writes/s" in text and "freshness waits p50/p99" in text
    assert "work queue" in text and "reconciles" in text
    header, body = table_columns(lines, title)
    assert_whole_columns(header, body, terminal.columns)
    assert [row[0] for row in body] == [
        "configmaps (all namespaces)",
        "configmaps team-a app=web",
        "leases nodes",
        "secrets (mirrors)",
    ]
    if terminal.columns >= 160:
        assert header == list(FRESHNESS_COLUMNS)
        assert "not shown at this width" not in text
    else:
        assert header[:5] == ["informer", "sync", "cache RV", "lag rev", "lag s"], header
        hidden = [h for h in FRESHNESS_COLUMNS if h not in header]
        note = next(i for i, line in enumerate(lines) if "not shown at this width" in line)
        assert all(h in " ".join(lines[note : note + 2]) for h in hidden), lines[note : note + 2]
    assert any(line.startswith("OK       leases nodes: 8 objects") for line in lines)


@pytest.mark.parametrize("size", SIZES)
def test_watch_shows_freshness_and_the_cache_table(served: Served, size: tuple[int, int]) -> None:
    namespace = f"live-{size[0]}"
    for name in ("a", "b"):
        served.create_configmap(name, namespace)
    args = ("watch", "cm", "-n", namespace, "--kubeconfig", str(served.kubeconfig))
    terminal = Terminal(*args, size=size)
    terminal.wait_for("cache: 2 objects")
    lines = terminal.wait_for(f"│ b +│ {namespace} ")  # the table's last row drawn
    # (before Ctrl-C: the terminal discards the output it has not shown yet when it sends the
    # interrupt, a redraw cut short included)
    everything = terminal.everything()
    terminal.child.sendintr()
    assert terminal.end() == 130
    assert sum("╭─ informer watch" in line for line in everything) == 1, "\n".join(everything)
    text = "\n".join(lines)
    assert f"informer watch configmaps in {namespace}" in text
    assert "server RV" in text and "cache RV" in text
    header, body = table_columns(lines, "freshness")
    assert_whole_columns(header, body, terminal.columns)
    assert body[0][:2] == [f"configmaps in {namespace}", "synced"]
    if terminal.columns >= 160:
        assert "lag rev" in header and "handler queue" in header
    assert "cache: 2 objects" in text
    assert any(line.startswith("│ a ") and f"│ {namespace} " in line for line in lines)
