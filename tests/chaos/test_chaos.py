"""Random fault schedules keep every promise; the checks themselves catch planted bugs.

The suite runs ``CHAOS_SCHEDULES`` (default 50) schedules; ``python -m pytest -m soak`` runs
``SOAK_SCHEDULES`` (default 1,000) and prints the figures. A failing schedule prints its seed and
the command that replays it (``python -m tests.chaos.soak --seed N``).
"""

from __future__ import annotations

import dataclasses
import os
import time

import pytest

from informer.reflector import Reflector

from .harness import Outcome, run_schedule
from .schedule import FaultStep, InformerSpec, Schedule
from .soak import soak, summarize

SUBSET = int(os.environ.get("CHAOS_SCHEDULES", "50"))
FIRST = int(os.environ.get("CHAOS_FIRST_SEED", "0"))


@pytest.mark.parametrize("seed", range(FIRST, FIRST + SUBSET))
async def test_random_schedule_keeps_every_promise(seed: int) -> None:
    outcome = await run_schedule(Schedule.generate(seed))
    assert outcome.ok, outcome.report()


@pytest.mark.soak
async def test_soak_of_many_schedules_finds_no_violation() -> None:
    count = int(os.environ.get("SOAK_SCHEDULES", "1000"))
    started = time.monotonic()
    outcomes = await soak(list(range(FIRST, FIRST + count)), verbose=False)
    print("\n" + summarize(outcomes, time.monotonic() - started))
    assert all(o.ok for o in outcomes), [o.schedule.seed for o in outcomes if not o.ok]


def _planted(kind: str, at: int, **extra: int) -> FaultStep:
    return FaultStep(at_op=at, kind=kind, **extra)


# One informer over everything, paginated lists, long watches, and faults that keep re-opening
# watches (so that every rule meets a fresh stream) around the fault under test.
_BASE = Schedule(
    seed=-1,
    personality="modern",
    compaction_window=None,
    bookmark_interval=60.0,
    initial_objects=8,
    informers=(InformerSpec(None, None, 2, "list", (30, 30)),),
    writers=2,
    ops_per_writer=40,
    keys_per_namespace=1,  # two hot keys: every replayed event is soon an older version
)


async def _run_planted(faults: tuple[FaultStep, ...], tries: int = 3) -> list[Outcome]:
    """Run the planted schedule until it fails (it must, with the bug planted)."""
    outcomes = []
    for attempt in range(tries):
        schedule = dataclasses.replace(_BASE, seed=-1 - attempt, faults=faults)
        outcomes.append(await run_schedule(schedule))
        if not outcomes[-1].ok:
            break
    return outcomes


STALE_REPLAYS = tuple(
    step
    for at in range(6, 70, 8)
    for step in (
        _planted("live_cut", at),
        _planted("watch_replay_stale", at, after_events=3, times=2),
    )
)

LAGGING_RELISTS = tuple(
    step
    for at in range(6, 70, 10)
    for step in (
        _planted("list_lagging", at, arg=4, times=3),
        _planted("live_410_event", at),
    )
)


async def test_the_planted_schedules_pass_on_the_real_code() -> None:
    for faults in (STALE_REPLAYS, LAGGING_RELISTS):
        outcome = (await _run_planted(faults, tries=1))[0]
        assert outcome.ok, outcome.report()


async def test_a_store_without_its_stale_event_check_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A store that cannot compare RVs falls back to equality: a replayed older event is applied.
    monkeypatch.setattr("informer.store._verdict.is_comparable", lambda rv: False)
    outcomes = await _run_planted(STALE_REPLAYS)
    found = {name for o in outcomes for name, _ in o.violations}
    assert found & {"cache_rv_backwards", "delivery_order", "final_state", "wait_early"}, [
        v for o in outcomes for v in o.violations
    ]


async def test_a_reflector_without_list_verification_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Accept any list, even one older than the cache: a lagging relist takes the cache back.
    monkeypatch.setattr(Reflector, "_is_older", lambda self, rv, than: False)
    outcomes = await _run_planted(LAGGING_RELISTS)
    found = {name for o in outcomes for name, _ in o.violations}
    assert found & {"cache_rv_backwards", "delivery_order", "wait_early"}, found
