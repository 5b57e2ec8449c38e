"""Run many chaos schedules and print the figures; replay one with ``--seed``.

    python -m tests.chaos.soak --schedules 1000          # the soak: figures and violations
    python -m tests.chaos.soak --seed 1234               # replay one schedule, verbosely

Exit status 1 when any schedule violated an invariant (each failing seed is printed with its
one-line replay command).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import platform
import sys
import time
from collections import Counter

from .harness import Outcome, run_schedule
from .schedule import Schedule


def summarize(outcomes: list[Outcome], seconds: float) -> str:
    """The figures of a soak, as printed and quoted in docs/performance.md."""
    figures: Counter[str] = Counter()
    faults: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    for o in outcomes:
        figures.update(o.figures)
        faults.update(o.faults)
        violations.update(name for name, _ in o.violations)
    failing = [o.schedule.seed for o in outcomes if not o.ok]
    lines = [
        f"schedules: {len(outcomes)} in {seconds:.0f} s "
        f"({datetime.date.today()}, Python {platform.python_version()}, {platform.machine()})",
        "figures: " + ", ".join(f"{k}={v}" for k, v in sorted(figures.items())),
        "faults fired: "
        + ", ".join(f"{k}={v}" for k, v in sorted(faults.items()) if v)
        + f" (total {sum(faults.values())})",
        "violations: " + (", ".join(f"{k}={v}" for k, v in sorted(violations.items())) or "0"),
    ]
    if failing:
        lines.append(f"failing seeds: {failing[:50]}")
    return "\n".join(lines)


async def soak(seeds: list[int], verbose: bool) -> list[Outcome]:
    outcomes = []
    for seed in seeds:
        outcome = await run_schedule(Schedule.generate(seed))
        outcomes.append(outcome)
        if verbose or not outcome.ok:
            print(outcome.report(), flush=True)
            print(f"  ({outcome.seconds:.1f} s) {dict(outcome.faults)}", flush=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.soak", description=__doc__)
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--seed", type=int, action="append", help="replay this seed (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)  # the harness captures ERROR records itself
    seeds = args.seed or list(range(args.first, args.first + args.schedules))
    started = time.monotonic()
    outcomes = asyncio.run(soak(seeds, args.verbose or bool(args.seed)))
    print(summarize(outcomes, time.monotonic() - started))
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
