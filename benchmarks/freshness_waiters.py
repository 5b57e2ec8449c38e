"""10,000 freshness waiters: what they cost an informer, against a hand-rolled scheme.

    python benchmarks/freshness_waiters.py [--waiters 10000] [--reps 3]

One informer (all ConfigMaps, one no-op handler) on the embedded API server over loopback HTTP.
After sync, N creates are written; each run times from the first write until the last waiter
returned (or, without waiters, until the cache has seen the last write). Cases, interleaved per
repetition, medians with min-max:

* ``no waiters``: the watch alone (the floor of this setup: server, HTTP, decode, store).
* ``informer waits``: N tasks each ``await inf.wait_for_resource_version(rv_i)``, one per write,
  registered before the writes (the store keeps them on a heap keyed by RV).
* ``hand-rolled``: the same N waits as a list of (rv, future) that a handler scans on every
  event, as an operator without freshness waits would write it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from informer import CONFIGMAPS, Informer, KubeObject, ReflectorOptions, Transport
from informer.testing import ApiServer


async def one_run(case: str, n: int) -> float:
    async with ApiServer(bookmark_interval=3600.0) as server:
        api = server.api_client()
        try:
            inf = Informer(Transport(api), CONFIGMAPS, options=ReflectorOptions(page_size=500))
            pending: list[tuple[int, asyncio.Future[None]]] = []

            def on_add(obj: KubeObject, initial: bool) -> None:
                if case != "hand-rolled":
                    return
                rv = int(obj.resource_version)
                still = []
                for wanted, fut in pending:
                    if wanted <= rv:
                        fut.set_result(None)
                    else:
                        still.append((wanted, fut))
                pending[:] = still

            inf.add_handler(on_add=on_add)
            async with inf:
                await inf.wait_for_sync(timeout=30)
                first = server.revision + 1
                rvs = [str(first + i) for i in range(n)]
                loop = asyncio.get_running_loop()
                waits: list[Any] = []
                if case == "informer waits":
                    waits = [
                        asyncio.ensure_future(inf.wait_for_resource_version(rv, timeout=120))
                        for rv in rvs
                    ]
                elif case == "hand-rolled":
                    for rv in rvs:
                        fut: asyncio.Future[None] = loop.create_future()
                        pending.append((int(rv), fut))
                        waits.append(fut)
                await asyncio.sleep(0)  # every waiter registered before the first write
                gc.collect()
                started = time.perf_counter()
                for i in range(n):
                    server.create(
                        CONFIGMAPS, {"metadata": {"name": f"cm-{i}", "namespace": "default"}}
                    )
                    if i % 100 == 99:
                        await asyncio.sleep(0)  # let the watch stream as a real server would
                if waits:
                    await asyncio.gather(*waits)
                else:
                    await inf.wait_for_resource_version(rvs[-1], timeout=120)
                return time.perf_counter() - started
        finally:
            await api.close()


CASES = ["no waiters", "informer waits", "hand-rolled"]


def measure(waiters: int, reps: int) -> dict[str, list[float]]:
    """Seconds of each case, per repetition (the cases interleaved)."""
    times: dict[str, list[float]] = {c: [] for c in CASES}
    for _ in range(reps):
        for case in CASES:
            times[case].append(asyncio.run(one_run(case, waiters)))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--waiters", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the times as one JSON line")
    args = parser.parse_args()
    times = measure(args.waiters, args.reps)
    if args.json:
        print(json.dumps(times))
        return
    cases = CASES
    floor = statistics.median(times["no waiters"])
    print(f"{args.waiters:,} writes, {args.reps} interleaved repetitions (median, min-max):")
    for case in cases:
        t = times[case]
        med = statistics.median(t)
        print(
            f"  {case:15} {med:7.3f} s  ({min(t):.3f}-{max(t):.3f})  "
            f"{med / floor:5.2f}x the watch alone"
        )


if __name__ == "__main__":
    main()
