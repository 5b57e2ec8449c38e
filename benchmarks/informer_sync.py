"""End to end over real HTTP: our Informer vs kubernetes_asyncio vs hand-rolled dicts.

Not part of the test suite. Everything runs in one process and one event loop: the embedded
``informer.testing.ApiServer`` on 127.0.0.1 and the client under test, talking real HTTP over
loopback. The server's own work (building pages, encoding watch events, applying patches) is
therefore on the same thread as the client's, and in one thread the two add up: every table has
an "HTTP floor" row (the same requests, bytes read but not decoded) and a "client" column, the
time minus that floor, which is what the client itself costs. The server's objects are kept out
of the cyclic GC with ``gc.freeze()`` (as if it ran in another process), so each client pays for
collections over its own heap only. Times are wall-clock seconds of one run each.

  (1) initial sync of N realistic ~6.6 KB Pods (``server.bulk_load`` into PODS):
      (a) our ``Informer``, list_strategy "list" (page size 500), until ``wait_for_sync``;
      (a') our ``Informer``, list_strategy "stream" (streaming list, ``sendInitialEvents``);
      (b) how Python users do it today: kubernetes_asyncio
          ``CoreV1Api.list_pod_for_all_namespaces(limit=500, _continue=...)`` into ``V1Pod``
          models in a dict, on the first ``--k8s-count`` objects, extrapolated to N;
      (c) the common hand-rolled way: the same pages with aiohttp + ``json.loads`` into dicts;
      (d) the JSON decode limit: ``msgspec.json.decode`` of the same page bytes, already in
          memory, GC off (no HTTP at all).
  (2) watch throughput after sync: W ``server.patch`` calls (a changed annotation, one Pod each)
      while the client applies them, until it has seen the last patch's resourceVersion
      (ours: ``wait_for_resource_version``); vs a hand-rolled ``kubernetes_asyncio.watch.Watch()
      .stream(...)`` loop into a dict (on ``--k8s-watch-count`` events), and an aiohttp +
      ``json.loads`` line loop into a dict.
  (3) memory held by the cache, with tracemalloc, on a separate server of ``--mem-count`` Pods:
      what is freed when the cache is dropped (its clients closed before), relative to the JSON.

    python benchmarks/informer_sync.py                   # defaults: about 2 minutes on 2 cores
    python benchmarks/informer_sync.py --count 20000     # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import aiohttp
import msgspec

# the script's own directory is on sys.path when run as ``python benchmarks/informer_sync.py``
from store_sync import make_items  # type: ignore[import-not-found,unused-ignore]

from informer import PODS, Informer, ReflectorOptions
from informer.testing import ApiServer

PAGE = 500
PODS_PATH = "/api/v1/pods"


# -- data and clients ----------------------------------------------------------------------------
def load(server: ApiServer, count: int) -> tuple[list[tuple[str, str]], float]:
    """Bulk-load ``count`` Pods; returns their (namespace, name) and the seconds it took."""
    started = time.perf_counter()
    items = make_items(count)
    gc.disable()  # millions of new dicts: the collector would take most of the time
    try:
        server.bulk_load(PODS, (msgspec.json.decode(item) for item in items))
    finally:
        gc.enable()
    del items
    gc.collect()
    gc.freeze()  # the server's objects stay out of the client's collections (see ``timed``)
    took = time.perf_counter() - started
    keys = [(f"team-{i % 200:03d}", f"app-7d9f8c6b5-{i:07d}") for i in range(count)]
    return keys, took


def _key(meta: dict[str, Any]) -> str:
    return f"{meta['namespace']}/{meta['name']}"


async def fetch_pages(
    http: aiohttp.ClientSession,
    url: str,
    on_page: Callable[[bytes], int] | None = None,
) -> tuple[list[bytes], int]:
    """GET every page (limit=PAGE, continue); ``on_page`` decodes one (or the bytes are kept)."""
    kept: list[bytes] = []
    token = ""
    items = 0
    while True:
        params = {"limit": str(PAGE)}
        if token:
            params["continue"] = token
        async with http.get(url + PODS_PATH, params=params) as resp:
            assert resp.status == 200, resp.status
            body = await resp.read()
        if on_page is None:
            kept.append(body)
        else:
            items += on_page(body)
        token = _continue_of(body)
        if not token:
            return kept, items


def _continue_of(body: bytes) -> str:
    head = body[: body.find(b'"items":[')]
    meta: dict[str, Any] = json.loads(head[:-1] + b"}")["metadata"]
    return str(meta.get("continue", ""))


@asynccontextmanager
async def k8s_client(server: ApiServer) -> AsyncIterator[Any]:
    api = server.api_client()
    try:
        yield api
    finally:
        await api.close()


# -- (1) initial sync ----------------------------------------------------------------------------
@dataclass
class Row:
    label: str
    seconds: float
    objects: int
    floor: float | None = None  # the HTTP floor for the same work, scaled to ``objects``
    note: str = ""


async def timed(fn: Callable[[], Awaitable[Any]], *, gc_off: bool = False) -> tuple[float, Any]:
    """Wall time of ``fn``. Everything alive before it (the server's objects above all) is moved
    out of the cyclic GC's reach with ``gc.freeze``, as if the server ran in another process: the
    client under test pays for collections over its own heap only."""
    gc.collect()
    gc.freeze()
    if gc_off:
        gc.disable()
    try:
        started = time.perf_counter()
        result = await fn()
        return time.perf_counter() - started, result
    finally:
        gc.enable()


async def sync_floor_list(server: ApiServer) -> tuple[float, list[bytes]]:
    async with aiohttp.ClientSession() as http:
        took, (pages, _) = await timed(lambda: fetch_pages(http, server.url))
    return took, pages


async def sync_floor_stream(server: ApiServer, count: int) -> float:
    """A streaming list read to its end bookmark, lines counted, nothing decoded."""
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    async with aiohttp.ClientSession() as http:

        async def run() -> None:
            async with http.get(server.url + PODS_PATH, params=params) as resp:
                assert resp.status == 200, resp.status
                seen = 0
                async for chunk in resp.content.iter_any():
                    seen += chunk.count(b"\n")
                    if seen > count:  # the ADDED lines and the initial-events-end bookmark
                        return

        return (await timed(run))[0]


async def sync_ours(server: ApiServer, strategy: str, count: int) -> tuple[float, str]:
    async with k8s_client(server) as api:
        options = ReflectorOptions(list_strategy=strategy, page_size=PAGE)  # type: ignore[arg-type]
        inf = Informer(api, PODS, options=options)

        async def run() -> None:
            inf.start()
            await inf.wait_for_sync(timeout=600)

        took, _ = await timed(run)
        stats = inf.statistics()
        await inf.stop()
        assert len(inf.store) == count, (len(inf.store), count)
        detail = f"{stats.list_pages} pages" if strategy == "list" else "1 watch"
    gc.collect()
    return took, detail


async def sync_json_dicts(server: ApiServer, count: int) -> float:
    cache: dict[str, Any] = {}

    def on_page(body: bytes) -> int:
        items = json.loads(body)["items"]
        for item in items:
            cache[_key(item["metadata"])] = item
        return len(items)

    async with aiohttp.ClientSession() as http:
        took, _ = await timed(lambda: fetch_pages(http, server.url, on_page))
    assert len(cache) == count, (len(cache), count)
    cache.clear()
    gc.collect()
    return took


async def sync_msgspec_limit(pages: list[bytes]) -> float:
    async def run() -> list[Any]:
        return [msgspec.json.decode(page) for page in pages]

    took, result = await timed(run, gc_off=True)
    del result
    gc.collect()
    return took


async def sync_kubernetes_asyncio(server: ApiServer, sample: int) -> tuple[float, int]:
    from kubernetes_asyncio.client import CoreV1Api

    async with k8s_client(server) as api:
        v1 = CoreV1Api(api)
        cache: dict[str, Any] = {}

        async def run() -> None:
            more: dict[str, Any] = {}
            while True:
                page = await v1.list_pod_for_all_namespaces(limit=PAGE, **more)
                for pod in page.items:
                    cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
                more = {"_continue": page.metadata._continue}
                if not more["_continue"] or len(cache) >= sample:
                    return

        took, _ = await timed(run)
        got = len(cache)
        cache.clear()
        gc.collect()
        return took, got


# -- (2) watch throughput ------------------------------------------------------------------------
@dataclass
class WatchRun:
    seconds: float  # first patch until the client has seen the last one
    patching: float  # of which inside server.patch (the server's work, not the client's)
    events: int


class Patcher:
    """Merge patches (a changed annotation) round robin over the loaded Pods, yielding to the
    event loop every 100 as a real writer would; times what is spent inside ``server.patch``."""

    def __init__(self, server: ApiServer, keys: list[tuple[str, str]]) -> None:
        self.server = server
        self.keys = keys
        self.seq = 0
        self.seconds = 0.0

    async def run(self, count: int) -> str:
        """``count`` patches; returns the last resourceVersion."""
        last = ""
        clock = time.perf_counter
        for _ in range(count):
            i = self.seq
            self.seq += 1
            namespace, name = self.keys[i % len(self.keys)]
            t = clock()
            patched = self.server.patch(
                PODS, name, {"metadata": {"annotations": {"bench/seq": str(i)}}}, namespace
            )
            self.seconds += clock() - t
            last = patched["metadata"]["resourceVersion"]
            if i % 100 == 99:
                await asyncio.sleep(0)
        return last


async def watch_timed(
    patcher: Patcher, count: int, until_seen: Callable[[str], Awaitable[None]]
) -> WatchRun:
    """Patch ``count`` times, then ``until_seen(last_rv)``; timed together."""

    async def run() -> None:
        await until_seen(await patcher.run(count))

    patcher.seconds = 0.0
    took, _ = await timed(run)
    return WatchRun(took, patcher.seconds, count)


async def watch_raw(
    server: ApiServer,
    patcher: Patcher,
    count: int,
    on_line: Callable[[bytes], str] | None,
) -> WatchRun:
    """An aiohttp watch from the current RV: lines counted (floor) or handed to ``on_line``."""
    params = {"watch": "true", "resourceVersion": str(server.revision)}
    async with aiohttp.ClientSession() as http:
        resp = await http.get(server.url + PODS_PATH, params=params)
        assert resp.status == 200, resp.status
        await server.wait_for_watchers(1, PODS)
        seen_last: list[str] = []

        async def read() -> None:
            seen = 0
            if on_line is None:
                async for chunk in resp.content.iter_any():
                    seen += chunk.count(b"\n")
                    if seen >= count:
                        return
            else:
                async for line in resp.content:  # aiohttp yields lines
                    rv = on_line(line)
                    seen += 1
                    if seen >= count:
                        seen_last.append(rv)
                        return

        reader = asyncio.create_task(read())

        async def until_seen(last: str) -> None:
            await reader
            assert on_line is None or seen_last == [last], (seen_last, last)

        result = await watch_timed(patcher, count, until_seen)
        resp.close()
    await server.wait_for_watchers_closed(PODS)
    return result


async def watch_ours(server: ApiServer, patcher: Patcher, count: int) -> WatchRun:
    async with k8s_client(server) as api:
        inf = Informer(api, PODS, options=ReflectorOptions(list_strategy="stream"))
        inf.start()
        await inf.wait_for_sync(timeout=600)
        await server.wait_for_watchers(1, PODS)
        before = inf.statistics().events_applied

        async def until_seen(last: str) -> None:
            await inf.wait_for_resource_version(last, timeout=600)

        result = await watch_timed(patcher, count, until_seen)
        applied = inf.statistics().events_applied - before
        assert applied == count, (applied, count)
        await inf.stop()
    gc.collect()
    await server.wait_for_watchers_closed(PODS)
    return result


async def watch_kubernetes_asyncio(server: ApiServer, patcher: Patcher, count: int) -> WatchRun:
    from kubernetes_asyncio import watch
    from kubernetes_asyncio.client import CoreV1Api

    async with k8s_client(server) as api:
        v1 = CoreV1Api(api)
        cache: dict[str, Any] = {}
        w = watch.Watch()
        stream = w.stream(
            v1.list_pod_for_all_namespaces,
            resource_version=str(server.revision),
            allow_watch_bookmarks=True,
            timeout_seconds=3600,
        )
        seen_last: list[str] = []

        async def read() -> None:
            seen = 0
            async for event in stream:
                if event["type"] == "BOOKMARK":
                    continue
                pod = event["object"]
                key = f"{pod.metadata.namespace}/{pod.metadata.name}"
                if event["type"] == "DELETED":
                    cache.pop(key, None)
                else:
                    cache[key] = pod
                seen += 1
                if seen >= count:
                    seen_last.append(pod.metadata.resource_version)
                    return

        reader = asyncio.create_task(read())
        await server.wait_for_watchers(1, PODS)

        async def until_seen(last: str) -> None:
            await reader
            assert seen_last == [last], (seen_last, last)

        result = await watch_timed(patcher, count, until_seen)
        await w.close()
    await server.wait_for_watchers_closed(PODS)
    return result


def json_line_handler(cache: dict[str, Any]) -> Callable[[bytes], str]:
    def on_line(line: bytes) -> str:
        event = json.loads(line)
        obj = event["object"]
        meta = obj["metadata"]
        if event["type"] == "DELETED":
            cache.pop(_key(meta), None)
        elif event["type"] != "BOOKMARK":
            cache[_key(meta)] = obj
        return str(meta["resourceVersion"])

    return on_line


# -- (3) memory ----------------------------------------------------------------------------------
async def retained(build: Callable[[], Awaitable[Any]]) -> tuple[int, int]:
    """(bytes freed when the cache ``build`` returns is dropped, peak above the start while
    building). ``build`` closes its clients first, so connection buffers are not counted."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        cache = await build()
        gc.collect()
        with_it, peak = tracemalloc.get_traced_memory()
        del cache
        gc.collect()
        without = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return with_it - without, peak - base


async def memory_phase(count: int, k8s_sample: int) -> list[tuple[str, int, int, int]]:
    """(label, objects, retained, peak) on a fresh server of ``count`` Pods."""
    rows: list[tuple[str, int, int, int]] = []
    async with ApiServer("modern") as server:
        load(server, count)
        # warm the server's caches (sorted keys, encodings) so they are not counted
        async with aiohttp.ClientSession() as http:
            pages, _ = await fetch_pages(http, server.url)
        json_bytes = sum(len(p) for p in pages)
        del pages

        async def ours() -> Any:
            async with k8s_client(server) as api:
                inf = Informer(api, PODS, options=ReflectorOptions(list_strategy="list"))
                inf.start()
                await inf.wait_for_sync(timeout=600)
                await inf.stop()
            return inf.store

        async def dicts() -> dict[str, Any]:
            cache: dict[str, Any] = {}

            def on_page(body: bytes) -> int:
                items = json.loads(body)["items"]
                for item in items:
                    cache[_key(item["metadata"])] = item
                return len(items)

            async with aiohttp.ClientSession() as http:
                await fetch_pages(http, server.url, on_page)
            return cache

        async def models() -> dict[str, Any]:
            from kubernetes_asyncio.client import CoreV1Api

            api = server.api_client()
            page = await CoreV1Api(api).list_pod_for_all_namespaces(limit=k8s_sample)
            cache = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in page.items}
            await api.close()
            return cache

        held, peak = await retained(ours)
        rows.append(("ours: Informer store (KubeObject)", count, held, peak))
        held, peak = await retained(dicts)
        rows.append(("aiohttp + json.loads dicts", count, held, peak))
        if k8s_sample:
            held, peak = await retained(models)
            rows.append(("kubernetes_asyncio V1Pod models", k8s_sample, held, peak))
    return [(label, n, r, p) for label, n, r, p in rows] + [("json", count, json_bytes, 0)]


# -- report --------------------------------------------------------------------------------------
def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    libs = ", ".join(
        f"{name} {version(name)}" for name in ("aiohttp", "msgspec", "kubernetes_asyncio")
    )
    return (
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs: {cpu}\n{libs}"
    )


def print_table(title: str, unit: str, rows: list[Row], ours: Row) -> None:
    ours_client = ours.seconds - (ours.floor or 0.0)
    print(f"{title:<60}{'seconds':>9}{'client s':>10}{unit + '/s':>12}{'vs ours':>9}{'client':>8}")
    for row in rows:
        client = row.seconds - row.floor if row.floor is not None else None
        client_s = f"{client:>10.2f}" if client is not None else f"{'':>10}"
        ratio = (
            f"{client / ours_client:>7.1f}x"
            if client is not None and ours_client > 0
            else f"{'':>8}"
        )
        print(
            f"{row.label:<60}{row.seconds:>9.2f}{client_s}{row.objects / row.seconds:>12,.0f}"
            f"{row.seconds / ours.seconds:>8.1f}x{ratio}"
        )
        if row.note:
            print(f"{'':<4}{row.note}")


def print_watch_table(rows: list[tuple[str, WatchRun, float, str]]) -> None:
    """total = in server.patch + rest; client = rest - the floor's rest (per event, scaled)."""
    floor = rows[0][1]
    floor_rest = (floor.seconds - floor.patching) / floor.events
    ours = rows[1][1]
    ours_client = (ours.seconds - ours.patching) / ours.events - floor_rest
    print(
        f"{'':<58}{'total s':>9}{'patch s':>9}{'rest s':>8}{'client s':>10}{'events/s':>10}"
        f"{'client/s':>10}{'vs ours':>9}"
    )
    for label, run, scale, note in rows:
        rest = (run.seconds - run.patching) / run.events
        client = rest - floor_rest
        w = run.events * scale
        cells = f"{'':>10}{'':>10}{'':>9}"
        if run is not floor:
            cells = (
                f"{client * w:>10.2f}{1 / client:>10,.0f}{client / ours_client:>8.1f}x"
                if client > 0
                else f"{client * w:>10.2f}{'':>10}{'':>9}"
            )
        print(
            f"{label:<58}{run.seconds * scale:>9.2f}{run.patching * scale:>9.2f}"
            f"{rest * w:>8.2f}{cells[:10]}{w / (run.seconds * scale):>10,.0f}{cells[10:]}"
        )
        if note:
            print(f"{'':<4}{note}")
    print(
        "    patch s: inside server.patch (the server's work, with the cyclic GC collections that"
        " happen to\n    run inside it: it varies between rows); rest s: everything else (HTTP,"
        " the client);\n    client s: rest minus the floor's rest. Compare the client columns."
        " The dict loops start with\n    an empty cache (a real one would hold all N Pods as"
        " dicts, and pay for that in collections)."
    )


async def main(args: argparse.Namespace) -> None:
    logging.getLogger("informer").setLevel(logging.WARNING)
    n, w = args.count, args.watch_count
    k8s_n = min(args.k8s_count, n)
    k8s_w = min(args.k8s_watch_count, w)
    print(machine())
    print(
        "server and client share one process, one event loop, real HTTP on 127.0.0.1; one run each"
    )
    print(
        f"N={n:,} Pods, W={w:,} patches; kubernetes_asyncio is measured on {k8s_n:,} objects "
        f"and {k8s_w:,} events\nand extrapolated (whole runs would take minutes)"
    )
    started_all = time.perf_counter()

    # history is compacted (the watches here never fall that far behind): the patches' old
    # versions do not pile up in the server's heap
    async with ApiServer("modern", compaction_window=10_000) as server:
        keys, took = load(server, n)
        print(f"bulk_load: {n:,} Pods in {took:.1f}s\n")

        # -- (1) initial sync
        floor_list, pages = await sync_floor_list(server)
        json_mb = sum(len(p) for p in pages) / 1e6
        t_dec = await sync_msgspec_limit(pages)
        del pages
        gc.collect()
        floor_stream = await sync_floor_stream(server, n)
        t_list, list_detail = await sync_ours(server, "list", n)
        t_stream, _ = await sync_ours(server, "stream", n)
        t_json = await sync_json_dicts(server, n)
        rows = [
            Row("HTTP floor: the 500-item pages, bytes read, not decoded", floor_list, n),
            Row("HTTP floor: streaming list, lines counted, not decoded", floor_stream, n),
            Row(f"(a) ours: Informer, list_strategy=list ({list_detail})", t_list, n, floor_list),
            Row("(a') ours: Informer, list_strategy=stream", t_stream, n, floor_stream),
        ]
        if k8s_n:
            t_k8s, got = await sync_kubernetes_asyncio(server, k8s_n)
            scale = n / got
            rows.append(
                Row(
                    "(b) kubernetes_asyncio list_pod_for_all_namespaces -> V1Pod",
                    t_k8s * scale,
                    n,
                    floor_list,
                    f"measured on the first {got:,} objects ({t_k8s:.2f}s), "
                    f"extrapolated x{scale:g}",
                )
            )
        rows.append(
            Row("(c) aiohttp + json.loads -> dicts keyed by ns/name", t_json, n, floor_list)
        )
        rows.append(
            Row(
                "(d) JSON limit: msgspec.json.decode of the bytes, gc off",
                t_dec,
                n,
                0.0,
                "no HTTP: the page bytes already in memory",
            )
        )
        print(
            f"(1) initial sync of {n:,} Pods, {json_mb:,.0f} MB of JSON "
            f"({json_mb * 1e6 / n:,.0f} B/Pod)"
        )
        print_table("", "objects", rows, rows[2])
        list_client = t_list - floor_list
        print(
            f"    client cost per object: ours (list) {list_client / n * 1e6:.1f} us, "
            f"json.loads dicts {(t_json - floor_list) / n * 1e6:.1f} us, "
            f"msgspec limit {t_dec / n * 1e6:.1f} us"
        )
        print()

        # -- (2) watch throughput
        patcher = Patcher(server, keys)
        await watch_raw(server, patcher, min(w, 2_000), None)  # warm-up, not counted
        wrows = [
            (
                "HTTP floor: watch lines counted, not decoded",
                await watch_raw(server, patcher, w, None),
                1.0,
                "",
            )
        ]
        wrows.append(
            (
                "(a) ours: Informer, until wait_for_resource_version",
                await watch_ours(server, patcher, w),
                1.0,
                "",
            )
        )
        if k8s_w:
            run = await watch_kubernetes_asyncio(server, patcher, k8s_w)
            wrows.append(
                (
                    "(b) kubernetes_asyncio Watch().stream -> V1Pod in a dict",
                    run,
                    w / k8s_w,
                    f"measured on {k8s_w:,} events ({run.seconds:.2f}s), "
                    f"extrapolated x{w / k8s_w:g}",
                )
            )
        json_cache: dict[str, Any] = {}
        wrows.append(
            (
                "(c) aiohttp line loop + json.loads -> dict",
                await watch_raw(server, patcher, w, json_line_handler(json_cache)),
                1.0,
                "",
            )
        )
        json_cache.clear()
        print(
            f"(2) watch: {w:,} server.patch calls (MODIFIED events, one Pod each) after the sync "
            f"of {n:,} Pods, until the client has seen the last RV"
        )
        print_watch_table(wrows)
        print()
        del keys

    gc.collect()
    # -- (3) memory
    m = min(args.mem_count, n)
    mrows = await memory_phase(m, min(args.k8s_mem_count, m))
    json_bytes = mrows[-1][2]
    print(
        f"(3) memory held by the cache (tracemalloc, {m:,} Pods, {json_bytes / 1e6:.1f} MB of "
        "JSON): freed when dropped; peak while building (server pages included)"
    )
    for label, count, held, peak in mrows[:-1]:
        per = json_bytes / m * count
        print(
            f"    {label:<40}{held / 1e6:>8.1f} MB {held / per:>6.2f}x JSON "
            f"{held / count / 1e3:>6.1f} KB/Pod   peak {peak / per:>5.2f}x"
            + (f"   ({count:,} Pods)" if count != m else "")
        )
    ours_held = mrows[0][2] / mrows[0][1]
    print(
        f"    dicts hold {mrows[1][2] / mrows[1][1] / ours_held:.1f}x what ours does per Pod"
        + (
            f", kubernetes_asyncio models {mrows[2][2] / mrows[2][1] / ours_held:.1f}x"
            if len(mrows) > 3
            else ""
        )
    )
    print(f"\ntotal {time.perf_counter() - started_all:.0f}s")
    sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--count", type=int, default=100_000, help="Pods for (1) and (2)")
    parser.add_argument("--watch-count", type=int, default=20_000, help="patches for (2)")
    parser.add_argument(
        "--k8s-count",
        type=int,
        default=5_000,
        help="objects for kubernetes_asyncio list (extrapolated; 0: skip)",
    )
    parser.add_argument(
        "--k8s-watch-count",
        type=int,
        default=2_000,
        help="events for kubernetes_asyncio watch (extrapolated; 0: skip)",
    )
    parser.add_argument("--mem-count", type=int, default=10_000, help="Pods for (3)")
    parser.add_argument(
        "--k8s-mem-count",
        type=int,
        default=500,
        help="Pods for kubernetes_asyncio models in (3) (0: skip)",
    )
    asyncio.run(main(parser.parse_args()))
