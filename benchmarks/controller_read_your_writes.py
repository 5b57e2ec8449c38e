"""What read-your-own-writes costs a controller, and what it prevents.

Not part of the test suite. One process, one event loop: the embedded ``ApiServer`` on 127.0.0.1
and the controller, over real HTTP. A controller creates one child ConfigMap (``generateName``)
per parent ConfigMap, then records it in the parent's annotations (as controllers record progress
in a status); that write's event queues the parent again, usually before the child's watch event
reached the cache: the race behind the classic duplicate create.

  (1) end to end, N parents, ``--workers`` workers, with the writes client given to the
      Controller (read-your-own-writes) and without: wall time until every parent has a child and
      the controller is idle, reconciles, stale skips, time spent waiting for freshness, and
      duplicate children created.
  (2) the bookkeeping alone, when the cache is already fresh (the common case): one recorded
      write (``WriteTracker.observe``) plus the check before the next reconcile
      (``WriteTracker.wait_fresh``), per reconcile, in microseconds.

    python benchmarks/controller_read_your_writes.py    # about 20 s on 2 cores
    python benchmarks/controller_read_your_writes.py --parents 200
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from informer import CONFIGMAPS, Client, Controller, Informer, ReflectorOptions, Request
from informer.client import WriteRecord
from informer.controller import controller_owner
from informer.controller._freshness import WriteTracker, reconciling
from informer.testing import ApiServer


def parent(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": {"role": "parent"}}}


async def end_to_end(parents: int, workers: int, read_your_writes: bool) -> dict[str, Any]:
    async with ApiServer("modern") as server:
        api = server.api_client()
        options = ReflectorOptions(list_strategy="list")
        try:
            p_inf = Informer(api, CONFIGMAPS, label_selector="role=parent", options=options)
            c_inf = Informer(api, CONFIGMAPS, label_selector="role=child", options=options)
            client = Client(api)

            def children(request: Request) -> int:
                return sum(
                    1
                    for c in c_inf.store.list(request.namespace)
                    if controller_owner(c, CONFIGMAPS) == request
                )

            async def reconcile(request: Request) -> None:
                obj = p_inf.store.get(request.name, request.namespace)
                if obj is None or children(request):
                    return
                owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": obj.name}
                owner |= {"uid": obj.uid, "controller": True}
                meta = {"generateName": f"{obj.name}-", "namespace": obj.namespace}
                meta |= {"labels": {"role": "child"}, "ownerReferences": [owner]}
                child = await client.create(CONFIGMAPS, {"metadata": meta})
                note = {"metadata": {"annotations": {"child": child.name}}}
                await client.patch(CONFIGMAPS, obj.name, note, namespace=obj.namespace)

            async with p_inf, c_inf:
                ctl = Controller(
                    reconcile,
                    for_=p_inf,
                    owns=[c_inf],
                    workers=workers,
                    client=client if read_your_writes else None,
                )
                async with ctl:
                    await ctl.wait_running(30)
                    started = time.perf_counter()
                    for i in range(parents):
                        server.create(CONFIGMAPS, parent(f"p{i}"))
                        if i % 20 == 0:
                            await asyncio.sleep(0)  # let the controller run meanwhile
                    while True:
                        await asyncio.sleep(0.05)
                        q = ctl.queue.statistics()
                        if q.depth + q.waiting + q.processing or len(c_inf.store) < parents:
                            continue
                        owners = {controller_owner(c, CONFIGMAPS) for c in c_inf.store.list()}
                        if len(owners) == parents:
                            break
                    elapsed = time.perf_counter() - started
                    stats = ctl.statistics()
            created = sum(1 for r in server.requests if r.verb == "create")
            assert len(c_inf.store) == created
        finally:
            await api.close()
    return {
        "seconds": elapsed,
        "reconciles": stats.reconciles,
        "stale_skips": stats.stale_skips,
        "waits": stats.freshness_wait.count,
        "wait_p50_ms": stats.freshness_wait.p50 * 1e3,
        "wait_p99_ms": stats.freshness_wait.p99 * 1e3,
        "duplicates": created - parents,
    }


async def bookkeeping(rounds: int) -> float:
    """Microseconds per reconcile for observe + wait_fresh on an already fresh cache."""
    async with ApiServer("modern") as server:
        api = server.api_client()
        inf = Informer(api, CONFIGMAPS)  # never started: its store is set by hand
        await api.close()
    inf.store.replace([], "1000")
    tracker = WriteTracker([inf], structlog.get_logger())
    record = WriteRecord(CONFIGMAPS, "create", "x", "default", "u", "999", False)
    started = time.perf_counter()
    for i in range(rounds):
        key = Request(f"p{i % 100}", "default")
        token = reconciling.set((tracker, key))
        tracker.observe(record)
        reconciling.reset(token)
        assert await tracker.wait_fresh(key, 5.0)
    return (time.perf_counter() - started) / rounds * 1e6


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parents", type=int, default=500)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=100_000)
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(f"python {platform.python_version()}, {args.parents} parents, {args.workers} workers")
    print(
        f"{'mode':<22}{'s':>7}{'reconciles':>11}{'stale':>7}{'waits':>7}"
        f"{'p50 ms':>8}{'p99 ms':>8}{'dups':>6}"
    )
    for ryw in (True, False):
        r = await end_to_end(args.parents, args.workers, ryw)
        mode = "read-your-writes" if ryw else "no client (off)"
        print(
            f"{mode:<22}{r['seconds']:>7.2f}{r['reconciles']:>11}{r['stale_skips']:>7}"
            f"{r['waits']:>7}{r['wait_p50_ms']:>8.2f}{r['wait_p99_ms']:>8.2f}{r['duplicates']:>6}"
        )
    us = await bookkeeping(args.rounds)
    print(f"bookkeeping on a fresh cache: {us:.2f} us per reconcile (observe + wait_fresh)")


if __name__ == "__main__":
    asyncio.run(main())
