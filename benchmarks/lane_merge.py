"""Merging a sharded informer's lanes: what one merge costs.

    python benchmarks/lane_merge.py [--objects 50000] [--lanes 4] [--mode on|off]

The embedded API server (this process) holds ``--objects`` ConfigMaps. One sharded reflector
takes ``--lanes`` equal parts of the uid hash space one after the other without waiting (as a
ring's successive take-overs would): one lane each. Once every lane has listed, the lanes are
merged (``lane_merge_delay=0``): one list of the union aside, then one synchronous step. Printed:
the seconds from every lane listed to one lane, the synchronous step's milliseconds (the event
loop is held that long), the deltas it handed over (0: no object changed), the watches open
before and after, and the process's RSS before and after the merge and its peak (the aside list
holds the objects a second time until the step).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.sharded_replicas import peak, rss
from informer.reflector import ReflectorOptions, ShardedReflector
from informer.resource import CONFIGMAPS
from informer.shards import ShardRange, ShardSet
from informer.store import Delta, Store
from informer.testing import ApiServer
from informer.transport import Transport

MiB = 1024 * 1024


async def main(objects: int, lanes: int, mode: str) -> None:
    async with ApiServer(shard_selectors=mode, bookmark_interval=1.0) as server:
        for i in range(objects):
            server.create(
                CONFIGMAPS,
                {"metadata": {"name": f"cm-{i:06d}", "namespace": "default"}, "data": {"k": "v"}},
            )
        # the server's objects live in this process: out of the collector's way, as they would
        # be in a controller's process (a full collection of them costs 0.3 s per 10,000)
        gc.freeze()
        api = server.api_client()
        deltas: list[Delta] = []
        options = ReflectorOptions(lane_merge_delay=0.0)
        reflector = ShardedReflector(
            Transport(api),
            CONFIGMAPS,
            Store(),
            shards=ShardSet(),
            options=options,
            on_deltas=deltas.extend,
        )
        store = reflector.parent_store
        step: list[float] = []
        merge = store.merge_partitions

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return merge(*args, **kwargs)
            finally:
                step.append(time.perf_counter() - started)

        store.merge_partitions = timed  # type: ignore[method-assign]
        task = asyncio.create_task(reflector.run())
        held = ShardSet()
        for part in ShardRange.split(lanes):
            held = held | ShardSet([part])
            reflector.set_shards(held)
        await reflector.lanes_synced.wait()
        listed = time.perf_counter()
        before = rss()
        watches_before = server.watches.count(CONFIGMAPS)
        initial = len(deltas)
        while reflector.shard_statistics().lanes > 1 or reflector.shard_statistics().merging:  # noqa: ASYNC110
            await asyncio.sleep(0.01)  # (a benchmark: polled)
        merged = time.perf_counter()
        await asyncio.sleep(0.2)  # the old lanes' watches end
        stats = reflector.shard_statistics()
        print(
            f"{objects} objects, {lanes} lanes, shardSelector={mode}: merged into "
            f"{stats.lanes} lane in {merged - listed:.2f} s (list of the union + step); "
            f"step {step[0] * 1000:.0f} ms; {len(deltas) - initial} deltas; "
            f"RSS {before / MiB:.0f} -> {rss() / MiB:.0f} MiB (peak {peak() / MiB:.0f} MiB); "
            f"cached {len(store)}; watches {watches_before} -> {server.watches.count(CONFIGMAPS)}"
        )
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=50_000)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--mode", default="on", choices=["on", "off"])
    a = parser.parse_args()
    asyncio.run(main(a.objects, a.lanes, a.mode))
