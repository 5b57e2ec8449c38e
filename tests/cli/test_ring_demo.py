"""``informer demo --replicas 3``: ring members sharing parents through Leases, one killed without
releasing anything and one added, the live view at 80x24, and the checks that end the run (every
one must hold for exit status 0): no parent reconciled by two replicas at once, children right, no
child created twice, the dead replica's ranges claimed within lease + 2 x retry, each
cache holding its ranges' parents only.

The run against a server that ignores ``shardSelector`` starts with the module and runs while the
terminal test reads its own run (the runs take about 15 s each)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from .conftest import REPO_ROOT, cli, cli_env
from .test_live_view import Terminal, table_columns

ARGS = ("demo", "--replicas", "3", "--duration", "5", "--objects", "120", "--rate", "20")
CHECKS = (
    "the live replicas hold the whole space",
    "no parent reconciled by two replicas at once",
    "every parent's children right: 120/120",
    "no child created twice",
    "r2's ranges claimed by the others",
    "r2's ",  # parents all reconciled again
    "r1 caches the parents of its ranges only",
    "r3 caches the parents of its ranges only",
    "r4 caches the parents of its ranges only",
)


@pytest.fixture(scope="module")
def unfiltered() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        cli(*ARGS, "--shard-selectors", "off", "--seed", "3"),
        cwd=REPO_ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def check_lines(lines: list[str]) -> list[str]:
    """The checks at the end: each line that starts with OK or FAILED, with its continuations."""
    checks: list[str] = []
    for line in lines:
        if line.startswith(("OK ", "FAILED ")):
            checks.append(line)
        elif checks and line.startswith("         ") and not line.startswith("every"):
            checks[-1] += " " + line.strip()
    return checks


def assert_checks_hold(lines: list[str]) -> None:
    checks = check_lines(lines)
    assert len(checks) == len(CHECKS), checks
    for check, start in zip(checks, CHECKS, strict=True):
        assert check.startswith("OK ") and start in check, checks
    assert lines[-1].strip() == "every check holds"


def test_replicas_demo_fits_80x24_and_ends_with_its_checks(
    unfiltered: subprocess.Popen[str],
) -> None:
    terminal = Terminal(*ARGS, size=(80, 24), timeout=120)
    terminal.wait_for("every check holds|FAILED: a check")
    status = terminal.end()
    lines = [line for line in terminal.everything() if line.strip()]
    assert status == 0, "\n".join(lines)
    assert all(len(line) <= 80 for line in lines)
    assert sum("╭─ informer demo --replicas 3" in line for line in lines) == 1, "\n".join(lines)
    title = "ring members (parents cached, reconciles)"
    assert sum(line.startswith(title) for line in lines) == 1
    header, body = table_columns(lines, title)
    assert header == ["replica", "state", "ranges", "share", "cached", "handovers", "reconciles"]
    assert [row[0] for row in body] == ["r1", "r2", "r3", "r4"]
    assert body[1][1] == "CRASHED"
    text = "\n".join(lines)
    assert "r2 killed, nothing released" in text and "r4 added" in text
    assert "took over a dead member's ranges" in text
    assert_checks_hold(lines)


def test_replicas_demo_holds_its_checks_against_a_server_ignoring_shard_selectors(
    unfiltered: subprocess.Popen[str],
) -> None:
    out, err = unfiltered.communicate(timeout=120)
    assert unfiltered.returncode == 0, out + err
    lines = out.splitlines()
    assert any("shardSelector=off" in line for line in lines)
    assert any(line.startswith("  r1: state=member ranges=") for line in lines)  # plain lines
    assert_checks_hold(lines)
