"""``informer demo --replicas 3``: ring members sharing parents through Leases, one killed without
releasing anything and one added, the live view at 80x24, and the checks that end the run (every
one must hold for exit status 0): no parent reconciled by two replicas at once, children right, no
child created twice, the dead replica's ranges claimed within lease + 2 x retry, each
cache holding its ranges' parents only.

The run against a server that ignores ``shardSelector`` starts with the module and runs while the
terminal test reads its own run (the runs take about 15 s each).

The bound on the claim (lease + 2 x retry) holds in the time the demo's process is run: on a
loaded machine that leaves it unscheduled for a while, every round is that much later, so the
time its looks at the ring came late (from the crash to the claim) is added to the bound; the
runs' exit status would otherwise depend on the machine's load."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Iterator

import pytest

from informer.cli._ring_demo import ReplicasDemo
from informer.shards import ShardSet
from informer.testing import ApiServer

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


async def test_the_claim_bound_adds_the_time_the_process_was_not_run() -> None:
    args = argparse.Namespace(
        replicas=3, objects=0, rate=1.0, seed=1, fault_interval=1.0, faults=False, duration=5.0
    )
    async with ApiServer() as server:
        demo = ReplicasDemo(args, server)
        fleet, w = demo.fleet, demo.fleet.world
        fleet.note_late(3.0)  # before the crash: no round of the takeover was delayed
        w.crashed, w.crashed_at, w.lost = "r2", 10.0, ShardSet.full()
        fleet.note_late(0.5)
        fleet.note_late(-0.01)  # early wake-ups do not count
        fleet.note_late(0.3)
        w.claimed_at = w.covered_at = 10.0 + fleet.timings.bound + 0.6
        fleet.note_late(2.0)  # after the claim: not counted either

        def claim_check() -> tuple[bool, str]:
            (check,) = [c for c in demo.checks(settled=True) if "claimed by" in c.text]
            return check.ok, check.text

        ok, text = claim_check()
        assert ok and "+ 0.8 s this process ran late meanwhile" in text, text
        w.late = 0.0  # a process run on time: 0.6 s past the bound is a failure
        ok, text = claim_check()
        assert not ok and "ran late" not in text, text
