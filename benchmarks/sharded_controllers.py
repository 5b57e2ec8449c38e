"""Sharded controllers on a ring (``informer.ring``) in 1, 2 and 4 replica processes: objects and
memory per replica, total reconciles per second, and hand-over times.

    python benchmarks/sharded_controllers.py [--objects 100000] [--replicas 1,2,4] [--runs 3]
                                             [--workers 8] [--write-share 0.1]

Not part of the test suite. This process runs the embedded API server (``informer.testing``,
shard selectors honoured, as a v1.36 server with ``ShardedListAndWatch``) holding ``--objects``
ConfigMaps, and drives R replica processes at a time, each with its own ApiClient: a ring member
(``Ring``, the leader election's timings 15/10/2 s) with a sharded informer (``shards=ShardSet()``:
it lists and watches only the ranges the ring gives it) and a ``Controller`` of ``--workers``
workers sharded by ``ring.shard(controller)``. A reconcile reads its object from the cache,
encodes and hashes its data (the work of comparing desired and actual state), and for a share of
the objects (``--write-share``) writes a status-like annotation (a merge patch, tracked by
read-your-own-writes; its watch event queues the key once more and that reconcile writes
nothing).

For each run (replica counts interleaved: 1, 2, 4, 1, 2, 4, ...) and each R:

1. start: R processes at once, until every member acts on its whole assignment and every queue is
   idle (the first pass over every object included): seconds, objects cached and RSS per replica;
2. a pass: every replica queues every object it caches; total reconciles per second = the
   reconciles of all replicas / (last replica idle - first replica started), wall clock;
3. hand-over, one replica added: from the new member's first round until every live member acts
   on its whole assignment (and until every queue is idle again: the moved objects reconciled);
4. hand-over, one replica stopped (a clean shutdown: it releases its ranges and its Lease): from
   the stop until every remaining member acts on its whole assignment, and until queues are idle.

The server sends a watch bookmark every second. Without bookmarks (``bookmark_interval=3600``)
the benchmark measured a stall after a take-over: keys this replica had written before, queued
again, wait for the cache to reach their write's resourceVersion, which a quiet range's watch
does not bring until a bookmark or an event; each such wait ends in a 5 s stale skip (counted,
reported as ``stale skips``). That was before read-your-own-writes waited on the partition
holding each written object (a5d9658); at 401fb47 the run without bookmarks gives 0 stale skips.

The members' own ``RingStats.handover`` (on their clocks: from the round that saw the change to
the round that started the last of their target) is reported too. On 2 cores the server and the R
replicas share the CPUs: total reconciles per second cannot scale past what 2 cores give, and the
server's own work (the patches, the watch fan-out) grows with the reconciles; what sharding gives
on a 2-core machine is memory per replica, not throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

_PAGE = os.sysconf("SC_PAGE_SIZE")
RING = "bench"
NS = "default"


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- a replica (child process): commands on stdin, one JSON line per answer on stdout -----------
async def replica(kubeconfig: str, identity: str, workers: int, write_share: float) -> None:
    import gc
    import hashlib
    import logging

    import msgspec

    from informer import CONFIGMAPS, Client, Controller, Informer, ReflectorOptions, Request
    from informer.connect import connect
    from informer.ring import Ring, RingState
    from informer.shards import ShardSet

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    api = await connect(kubeconfig)
    gc.collect()
    rss_before = rss()
    client = Client(api, field_manager=identity)
    inf = Informer(
        api, CONFIGMAPS, namespace=NS, shards=ShardSet(), options=ReflectorOptions(page_size=500)
    )
    encoder = msgspec.json.Encoder()
    state = {"pass": 0, "writes": 0}
    every = max(1, round(1 / write_share)) if write_share > 0 else 0

    async def reconcile(request: Request) -> None:
        obj = inf.store.get(request.name, request.namespace)
        if obj is None:
            return
        data = dict(obj.get("data") or {})
        digest = hashlib.sha256(encoder.encode(data)).hexdigest()[:16]
        if not every or int(data.get("index", "0")) % every:
            return
        want = f"{state['pass']}-{digest}"
        annotations = obj.get("metadata", {}).get("annotations") or {}
        if annotations.get("bench/observed") == want:
            return
        patch = {"metadata": {"annotations": {"bench/observed": want}}}
        await client.patch(CONFIGMAPS, obj.name, patch, namespace=obj.namespace)
        state["writes"] += 1

    controller = Controller(reconcile, for_=inf, workers=workers, client=client, name=identity)
    ring = Ring(client, RING, NS, identity=identity)
    ring.shard(controller)
    inf.start()
    controller.start()
    ring_started = time.time()
    ring_task = asyncio.create_task(ring.run())

    def idle() -> bool:
        q = controller.queue.statistics()
        return not (q.depth + q.waiting + q.processing) and not controller.statistics().active

    def status() -> dict[str, Any]:
        s = ring.statistics()
        c = controller.statistics()
        return {
            "identity": identity,
            "ring_started": ring_started,
            "member": s.state is RingState.MEMBER,
            "members": s.members,
            "target": s.target,
            "acting": s.acting,
            "settled": s.acting == s.target and s.held == s.target,
            "handover": [s.handover.count, s.handover.p50, s.handover.p99, s.handover.max],
            "idle": idle(),
            "queue": [
                controller.queue.statistics().depth,
                controller.queue.statistics().waiting,
                controller.queue.statistics().processing,
                c.active,
                c.stale_skips,
            ],
            "objects": len(inf.store),
            "rss_before": rss_before,
            "rss": rss(),
            "reconciles": c.reconciles,
            "errors": c.errors + c.timeouts,
            "stale_skips": c.stale_skips,
            "writes": state["writes"],
            "cpu": cpu(),
        }

    async def one_pass(number: int) -> dict[str, Any]:
        state["pass"] = number
        r0, w0, c0 = controller.statistics().reconciles, state["writes"], cpu()
        started = time.time()
        for obj in inf.store.list():
            controller.queue.add(Request(obj.name, obj.namespace))
        # idle for 0.3 s in a row (the patches' own watch events have queued and run their key)
        quiet_since: float | None = None
        while True:
            await asyncio.sleep(0.005)
            if not idle():
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.time()
            elif time.time() - quiet_since > 0.3:
                break
        return {
            "started": started,
            "ended": quiet_since,
            "reconciles": controller.statistics().reconciles - r0,
            "writes": state["writes"] - w0,
            "cpu": cpu() - c0,
            "objects": len(inf.store),
        }

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        while line := (await reader.readline()).decode().split():
            if line[0] == "status":
                answer = status()
            elif line[0] == "pass":
                answer = await one_pass(int(line[1]))
            else:  # stop: a clean shutdown, its ranges and Lease released
                break
            print(json.dumps(answer), flush=True)
    finally:
        ring_task.cancel()
        await asyncio.wait({ring_task})
        await controller.stop()
        await inf.stop()
        await api.close()
    print(json.dumps({"stopped": time.time()}), flush=True)


# -- the driver (this process: the server, then R replicas at a time) ----------------------------
class Proc:
    def __init__(self, proc: asyncio.subprocess.Process, identity: str) -> None:
        self.proc, self.identity = proc, identity

    async def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{command}\n".encode())
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"replica {self.identity} died ({await self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def stop(self) -> float:
        stopped = (await self.ask("stop"))["stopped"]
        await self.proc.wait()
        return float(stopped)


async def spawn(kubeconfig: str, identity: str, args: argparse.Namespace) -> Proc:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--child",
        kubeconfig,
        identity,
        str(args.workers),
        str(args.write_share),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    return Proc(proc, identity)


async def statuses(procs: list[Proc]) -> list[dict[str, Any]]:
    return list(await asyncio.gather(*(p.ask("status") for p in procs)))


async def until(
    procs: list[Proc], *, idle: bool, timeout: float = 900.0
) -> tuple[float, list[dict[str, Any]]]:
    """Poll until every member counts all of them, acts on its whole assignment, and the
    assignments cover the space (and, with ``idle``, every queue is empty): the wall time then."""
    deadline = time.time() + timeout
    while True:
        now = time.time()
        st = await statuses(procs)
        if (
            all(s["member"] and s["members"] == len(procs) and s["settled"] for s in st)
            and abs(sum(s["acting"] for s in st) - 1.0) < 1e-9
            and (not idle or all(s["idle"] for s in st))
        ):
            return now, st
        if now > deadline:
            raise TimeoutError(st)
        await asyncio.sleep(0.1)


async def one(
    kubeconfig: str, replicas: int, args: argparse.Namespace, number: int
) -> dict[str, Any]:
    started = time.time()
    procs = [await spawn(kubeconfig, f"r{number}-{i}", args) for i in range(replicas)]
    try:
        _, st = await until(procs, idle=True)
        start_seconds = time.time() - started
        assert sum(s["objects"] for s in st) == args.objects, [s["objects"] for s in st]
        cached = [s["objects"] for s in st]
        mem = [s["rss"] for s in st]
        cache_mem = [s["rss"] - s["rss_before"] for s in st]
        # a pass over every object, all replicas at once
        passes = await asyncio.gather(*(p.ask(f"pass {number}") for p in procs))
        span = max(p["ended"] for p in passes) - min(p["started"] for p in passes)
        reconciles = sum(p["reconciles"] for p in passes)
        writes = sum(p["writes"] for p in passes)
        pass_cpu = sum(p["cpu"] for p in passes)
        # one replica added
        procs.append(await spawn(kubeconfig, f"r{number}-{replicas}", args))
        settled, st = await until(procs, idle=False)
        joined = next(s for s in st if s["identity"] == procs[-1].identity)["ring_started"]
        add_acting = settled - joined
        add_idle = (await until(procs, idle=True))[0] - joined
        add_stats = [s["handover"] for s in st]
        # one replica stopped (cleanly)
        gone = procs.pop(0)
        stop_sent = time.time()
        await gone.stop()
        settled, st = await until(procs, idle=False)
        stop_acting = settled - stop_sent
        stop_idle = (await until(procs, idle=True))[0] - stop_sent
        stop_stats = [s["handover"] for s in st]
        errors = sum(s["errors"] for s in st)
        stale_skips = sum(s["stale_skips"] for s in st)
    finally:
        for p in procs:
            if p.proc.returncode is None:
                await p.stop()
    return {
        "replicas": replicas,
        "start_seconds": start_seconds,
        "objects": cached,
        "rss": mem,
        "cache_rss": cache_mem,
        "reconciles": reconciles,
        "writes": writes,
        "pass_seconds": span,
        "reconciles_per_second": reconciles / span,
        "pass_cpu": pass_cpu,
        "add_acting": add_acting,
        "add_idle": add_idle,
        "add_ring": add_stats,
        "stop_acting": stop_acting,
        "stop_idle": stop_idle,
        "stop_ring": stop_stats,
        "errors": errors,
        "stale_skips": stale_skips,
    }


def objects(count: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:06}", "namespace": NS, "labels": {"app": "a"}},
            "data": {"config.yaml": "key: value\n" * 20, "index": str(i)},
        }
        for i in range(count)
    ]


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    med = statistics.median(values)
    return f"{fmt.format(med)} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def summary(rows: list[dict[str, Any]], replicas: int) -> str:
    mine = [r for r in rows if r["replicas"] == replicas]
    mib = 1024 * 1024

    def col(name: str, fmt: str = "{:.2f}", scale: float = 1.0) -> str:
        values = [r[name] for r in mine]
        if isinstance(values[0], list):
            values = [x for v in values for x in v]
        return spread([v / scale for v in values], fmt)

    objs = [o for r in mine for o in r["objects"]]
    ring_add = max((h[3] for r in mine for h in r["add_ring"] if h[0]), default=0.0)
    ring_stop = max((h[3] for r in mine for h in r["stop_ring"] if h[0]), default=0.0)
    reconciles = statistics.median(r["reconciles"] for r in mine)
    writes = statistics.median(r["writes"] for r in mine)
    return (
        f"{replicas} replica(s), {len(mine)} run(s): objects/replica {min(objs)}-{max(objs)}, "
        f"RSS MiB/replica {col('rss', '{:.0f}', mib)} "
        f"(of which the cache after start {col('cache_rss', '{:.0f}', mib)}), "
        f"start s {col('start_seconds', '{:.1f}')}, "
        f"reconciles/s total {col('reconciles_per_second', '{:.0f}')} "
        f"({reconciles:.0f} reconciles, {writes:.0f} writes, replica CPU s "
        f"{col('pass_cpu', '{:.1f}')} over {col('pass_seconds', '{:.1f}')} s), "
        f"hand-over s: replica added -> {replicas + 1} acting {col('add_acting')}, "
        f"idle {col('add_idle')}; one stopped -> {replicas} acting "
        f"{col('stop_acting')}, idle {col('stop_idle')}; "
        f"RingStats.handover max s: add {ring_add:.2f}, stop {ring_stop:.2f}; "
        f"reconcile errors {sum(r['errors'] for r in mine)}, stale skips (freshness waits that "
        f"timed out, 5 s each) {sum(r['stale_skips'] for r in mine)}"
    )


async def main(args: argparse.Namespace) -> None:
    from informer import CONFIGMAPS
    from informer.testing import ApiServer

    counts = [int(r) for r in args.replicas.split(",")]
    rows: list[dict[str, Any]] = []
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    async with ApiServer(bookmark_interval=1.0, shard_selectors="on") as server:
        server.bulk_load(CONFIGMAPS, objects(args.objects))
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = str(server.write_kubeconfig(Path(tmp) / "kubeconfig"))
            number = 0
            for run in range(args.runs):
                for replicas in counts:  # interleaved: 1, 2, 4, 1, 2, 4, ...
                    number += 1
                    load = os.getloadavg()[0]
                    row = await one(kubeconfig, replicas, args, number)
                    row["load"] = load
                    rows.append(row)
                    print(
                        f"run {run + 1}, {replicas} replica(s) (load {load:.1f}): "
                        f"{row['reconciles_per_second']:.0f} reconciles/s, "
                        f"objects {row['objects']}, add {row['add_acting']:.2f}/"
                        f"{row['add_idle']:.2f} s, stop {row['stop_acting']:.2f}/"
                        f"{row['stop_idle']:.2f} s",
                        flush=True,
                    )
    for replicas in counts:
        print(summary(rows, replicas), flush=True)
    print(f"# load at the end {os.getloadavg()[0]:.1f}", flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, kubeconfig, identity, workers, share = sys.argv
        asyncio.run(replica(kubeconfig, identity, int(workers), float(share)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--write-share", type=float, default=0.1)
    parser.add_argument("--json", action="store_true", help="also print every result as JSON")
    asyncio.run(main(parser.parse_args()))
