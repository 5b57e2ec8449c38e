"""The live views under a pseudo-terminal, rendered by a terminal emulator and read as a screen."""

from __future__ import annotations

import sys

import pexpect
import pyte

from .conftest import REPO_ROOT, Served, cli_env

COLUMNS, ROWS = 150, 45


class Terminal:
    """A child process on a pseudo-terminal and the screen a terminal would show of it."""

    def __init__(self, *args: str, timeout: float = 60) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "informer", *args],
            cwd=str(REPO_ROOT),
            env={**cli_env(), "TERM": "xterm-256color", "COLUMNS": str(COLUMNS)},
            dimensions=(ROWS, COLUMNS),
            encoding="utf-8",
            timeout=timeout,
        )
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self._stream = pyte.Stream(self.screen)

    def wait_for(self, pattern: str) -> list[str]:
        """Read output until ``pattern``; the screen's lines then."""
        self.child.expect(pattern)
        self._stream.feed(self.child.before + self.child.after)
        return [line.rstrip() for line in self.screen.display]

    def end(self) -> int:
        """Wait for the exit; its status (None after a signal)."""
        self.child.expect(pexpect.EOF)
        self.child.close()
        status: int | None = self.child.exitstatus
        return -1 if status is None else status


def test_demo_shows_its_panels_then_the_check() -> None:
    terminal = Terminal("demo", "--duration", "3", "--objects", "50")
    lines = terminal.wait_for("every cache equals")
    assert terminal.end() == 0
    text = "\n".join(lines)
    assert "informer demo" in text and "server RV" in text and "writes/s" in text
    assert "freshness waits p50/p99" in text and "work queue" in text and "reconciles" in text
    table = next(i for i, line in enumerate(lines) if "informers (shared, one watch each)" in line)
    header = lines[table + 2]
    for column in ("informer", "sync", "events/s", "cache RV", "lag rev", "lag s", "relists"):
        assert column in header, header
    for row in ("configmaps (all", "configmaps team-a", "leases nodes", "secrets (mirrors)"):
        assert any(line.startswith(f"│ {row}") for line in lines), row
    assert any(line.startswith("OK       leases nodes: 8 objects") for line in lines)


def test_watch_shows_freshness_and_the_cache_table(served: Served) -> None:
    for name in ("a", "b"):
        served.create_configmap(name, "live")
    args = ("watch", "cm", "-n", "live", "--kubeconfig", str(served.kubeconfig))
    terminal = Terminal(*args)
    terminal.wait_for("cache: 2 objects")
    lines = terminal.wait_for("│ b +│ live ")  # the table's last row drawn
    terminal.child.sendintr()
    assert terminal.end() == 130
    text = "\n".join(lines)
    assert "informer watch configmaps in live" in text
    assert "server RV" in text and "cache RV" in text
    header = next(line for line in lines if "│ informer" in line or "┃ informer" in line)
    assert "lag rev" in header and "handler queue" in header
    assert any(line.startswith("│ configmaps in live") and "synced" in line for line in lines)
    assert "cache: 2 objects" in text
    assert any(line.startswith("│ a ") and "│ live " in line for line in lines)
