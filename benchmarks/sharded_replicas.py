"""Sharded informers (KEP-5866) in 1, 2 and 4 replica processes: objects and memory per replica.

    python benchmarks/sharded_replicas.py [--objects 100000] [--replicas 1,2,4]
                                          [--modes on,off] [--kind configmaps|pods]

The embedded API server (this process) holds ``--objects`` objects. For each replica count R,
R child processes each run one informer holding 1/R of the uid hash space
(``ShardRange.split(R)[i]``), all started at once, each in its own process with its own
ApiClient; each reports when its first list is in the cache: the objects it holds, its share of
the space, its RSS (and the RSS of the same process before the informer, so the cache's own
memory is the difference), the seconds from start to synced, its CPU seconds, and the objects
it received but dropped (``shard_filtered``). R=1 holds the whole space: the unsharded figure.
With R >= 2 each replica then takes the next replica's range (as a ring's take-over would:
listed and watched by a new reflector of the same informer) and gives it up again: the seconds
until the range is listed, and until its objects have left the cache.

Modes: ``on`` (a v1.36 server with ``ShardedListAndWatch``: the server filters), ``off`` (the
gate off: every replica receives everything and filters by the hash itself; its cache is as
small, its network and CPU are not). On 2 cores the R replicas and the server share the CPUs:
sync times of R >= 2 are bounded by the machine, not by the informers; the memory per replica
is what the figure is about.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- a replica (child process) -------------------------------------------------------------------
async def replica(kubeconfig: str, index: int, of: int, kind: str) -> dict[str, Any]:
    import gc

    from informer import CONFIGMAPS, PODS, Informer, ReflectorOptions, ShardRange, ShardSet
    from informer.connect import connect

    resource_ = PODS if kind == "pods" else CONFIGMAPS
    api = await connect(kubeconfig)
    gc.collect()
    before = rss()
    c0 = cpu()
    started = time.perf_counter()
    try:
        shards = ShardSet([ShardRange.split(of)[index]])
        inf = Informer(api, resource_, shards=shards, options=ReflectorOptions(page_size=500))
        async with inf:
            await inf.wait_for_sync(timeout=600)
            synced = time.perf_counter() - started
            gc.collect()
            after = rss()
            synced_cpu, synced_peak = cpu() - c0, peak()
            stats = inf.statistics()
            shard = inf.shard_statistics()
            assert shard is not None
            # a range taken (the next replica's, as a ring's take-over would) then given up
            taken = ShardSet([ShardRange.split(of)[(index + 1) % of]]) if of > 1 else None
            take = give = give_cpu = 0.0
            if taken is not None:
                t0 = time.perf_counter()
                inf.set_shards(shards | taken)
                await inf.wait_for_shards(timeout=600)
                take = time.perf_counter() - t0
                t0, p0 = time.perf_counter(), time.process_time()
                inf.set_shards(shards)
                give, give_cpu = time.perf_counter() - t0, time.process_time() - p0
                assert len(inf.store) == shard.objects
            return {
                "take_seconds": take,
                "give_up_seconds": give,
                "give_up_cpu_seconds": give_cpu,
                "index": index,
                "objects": shard.objects,
                "share": shard.share,
                "rss_before": before,
                "rss_after": after,
                "peak": synced_peak,
                "sync_seconds": synced,
                "cpu_seconds": synced_cpu,
                "shard_filtered": stats.shard_filtered,
            }
    finally:
        await api.close()


# -- the driver (this process: the server, then R children at a time) ----------------------------
def objects(count: int, kind: str) -> list[dict[str, Any]]:
    if kind == "pods":
        import msgspec

        from benchmarks._objects import make_items

        out = []
        for raw in make_items(count):
            obj = msgspec.json.decode(raw)
            obj["metadata"].pop("resourceVersion", None)
            obj["metadata"].pop("uid", None)
            out.append(obj)
        return out
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:06}", "namespace": f"ns-{i % 50}", "labels": {"app": "a"}},
            "data": {"config.yaml": "key: value\n" * 20, "index": str(i)},
        }
        for i in range(count)
    ]


async def run_replicas(kubeconfig: str, replicas: int, kind: str) -> list[dict[str, Any]]:
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--child",
            kubeconfig,
            str(i),
            str(replicas),
            kind,
            stdout=asyncio.subprocess.PIPE,
        )
        for i in range(replicas)
    ]
    results = []
    for proc in procs:
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"replica failed ({proc.returncode})")
        results.append(json.loads(out))
    return results


async def main(args: argparse.Namespace) -> None:
    from informer import CONFIGMAPS, PODS
    from informer.testing import ApiServer

    resource_ = PODS if args.kind == "pods" else CONFIGMAPS
    rows: list[dict[str, Any]] = []
    for mode in args.modes.split(","):
        async with ApiServer(bookmark_interval=3600.0, shard_selectors=mode) as server:
            server.bulk_load(resource_, objects(args.objects, args.kind))
            with tempfile.TemporaryDirectory() as tmp:
                kubeconfig = str(server.write_kubeconfig(Path(tmp) / "kubeconfig"))
                for replicas in [int(r) for r in args.replicas.split(",")]:
                    results = await run_replicas(kubeconfig, replicas, args.kind)
                    total = sum(r["objects"] for r in results)
                    assert total == args.objects, (total, args.objects)  # every object, once
                    rows.append({"mode": mode, "replicas": replicas, "results": results})
                    report(rows[-1], args.objects)
    if args.json:
        print(json.dumps(rows))


def report(row: dict[str, Any], total: int) -> None:
    mib = 1024 * 1024
    results = row["results"]
    cache = [(r["rss_after"] - r["rss_before"]) / mib for r in results]
    print(
        f"gate {row['mode']:>3}, {row['replicas']} replica(s) of {total} objects: "
        f"objects/replica {min(r['objects'] for r in results)}-"
        f"{max(r['objects'] for r in results)} "
        f"(share {min(r['share'] for r in results):.3f}-{max(r['share'] for r in results):.3f}), "
        f"cache MiB/replica median {statistics.median(cache):.1f} "
        f"(RSS {statistics.median(r['rss_after'] for r in results) / mib:.1f}, "
        f"peak {statistics.median(r['peak'] for r in results) / mib:.1f}), "
        f"sync s median {statistics.median(r['sync_seconds'] for r in results):.2f}, "
        f"CPU s/replica median {statistics.median(r['cpu_seconds'] for r in results):.2f}, "
        f"dropped by the hash/replica median "
        f"{statistics.median(r['shard_filtered'] for r in results):.0f}, "
        f"taking the next replica's range s median "
        f"{statistics.median(r['take_seconds'] for r in results):.2f}, giving it up ms median "
        f"{statistics.median(r['give_up_seconds'] for r in results) * 1000:.1f} "
        f"({statistics.median(r['give_up_cpu_seconds'] for r in results) * 1000:.1f} of CPU)",
        flush=True,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, kubeconfig, index, of, kind = sys.argv
        print(json.dumps(asyncio.run(replica(kubeconfig, int(index), int(of), kind))))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--modes", default="on,off")
    parser.add_argument("--kind", choices=["configmaps", "pods"], default="configmaps")
    parser.add_argument("--json", action="store_true", help="also print every result as JSON")
    asyncio.run(main(parser.parse_args()))
