"""The clients a benchmark compares, each run in a fresh process against the replay server.

* ``product``: ``informer.Informer`` through its public API with one no-op handler attached,
  timed from ``start()`` until the handler has seen the last event.
* ``D``: the strongest fair peer: aiohttp, the watch envelope and ``metadata`` decoded with
  ``msgspec`` typed structs, each object's raw bytes kept (``msgspec.Raw``, zero-copy), no
  handler, no RV checks.
* ``orjson`` / ``orjson-nogc``: ``orjson.loads`` into a dict cache, with and without
  ``gc.disable()``.
* ``k8s-asyncio``: ``kubernetes_asyncio`` list into models / ``Watch().stream``.
* ``k8s-informer``: the official ``kubernetes`` client's ``SharedInformer`` (threads, sync client,
  one unpaginated list into models).

Each child returns its ``seconds`` and, for the product, D and the orjson peers, ``cpu_user`` /
``cpu_sys``: the process's CPU seconds over the same interval (the sync; for the watch cases, from
the watch request to the last event).
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import time
from typing import Any

import aiohttp
import msgspec

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def cpu() -> tuple[float, float]:
    """(user, system) CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_since(c0: tuple[float, float]) -> dict[str, float]:
    """``cpu_user`` / ``cpu_sys``: CPU seconds since ``c0`` (the interval ``seconds`` times)."""
    user, sys_ = cpu()
    return {"cpu_user": user - c0[0], "cpu_sys": sys_ - c0[1]}


def control_url(base: str, what: str) -> str:
    """The replay server's ``/control/<what>`` URL; ``expire`` ends this run's (token's) watch."""
    server, token = base.rsplit("/", 2)[0], base.rsplit("/", 1)[1]
    return f"{server}/control/{what}" + (f"/{token}" if what == "expire" else "")


def path_of(kind: str) -> str:
    return "/api/v1/configmaps" if kind == "configmaps" else "/api/v1/pods"


def forget_decodes() -> None:
    """Empty the product's process-wide memo of recent full decodes (so the next read of an
    object decodes it, as a read of an object not read lately does)."""
    from informer import objects

    memo = getattr(objects, "_memo", None)
    if memo is None:
        from informer.objects import _decoded

        memo = _decoded._memo
    memo.clear()


def read_one(objs: list[Any], kind: str) -> dict[str, float]:
    """Time ``obj["spec"]`` (ConfigMaps: ``obj["data"]``) of 2,000 objects read one at a time,
    none of them read before: p50 and p99 in microseconds.

    As a running controller reads: the process-wide memo of recent full decodes is full (its
    size of other objects read first), so each read decodes and evicts the oldest decode
    (``read_one_*``). Also with the memo emptied before each read (``read_one_empty_memo_*``):
    the decode alone, without the eviction's deallocation. The garbage collector stays on in
    both, as in production: a collection that falls into a read is in its time."""
    import random

    from informer.objects import set_decoded_cache_size

    field = "data" if kind == "configmaps" else "spec"
    memo_size = set_decoded_cache_size(256)
    set_decoded_cache_size(memo_size)
    order = random.Random(1).sample(range(len(objs)), len(objs))
    k = min(2000, max(1, (len(objs) - memo_size) // 2))
    warm = [objs[i] for i in order[:memo_size]]
    picks = [objs[i] for i in order[memo_size : memo_size + k]]
    empty = [objs[i] for i in order[memo_size + k : memo_size + 2 * k]]
    out: dict[str, float] = {}
    for name, sample, clear in (("read_one", picks, False), ("read_one_empty_memo", empty, True)):
        for obj in warm:
            obj[field]
        times = []
        cpu_times = []
        gc_before = [g["collections"] for g in gc.get_stats()]
        for obj in sample:
            if clear:
                forget_decodes()
            t = time.perf_counter()
            c = time.thread_time()
            obj[field]
            cpu_times.append(time.thread_time() - c)
            times.append(time.perf_counter() - t)
        gc_after = [g["collections"] for g in gc.get_stats()]
        times.sort()
        cpu_times.sort()
        out[f"{name}_p50_us"] = times[len(times) // 2] * 1e6
        out[f"{name}_p99_us"] = times[len(times) * 99 // 100] * 1e6
        # the same reads in this thread's CPU time (user + system, page faults included): not
        # the time the process waited descheduled, which makes a loaded machine's wall-clock
        # tail; on an idle machine the two agree
        out[f"{name}_cpu_p50_us"] = cpu_times[len(times) // 2] * 1e6
        out[f"{name}_cpu_p99_us"] = cpu_times[len(times) * 99 // 100] * 1e6
        out[f"{name}_n"] = len(times)
        # collections of the oldest generation during these reads (each scans every tracked
        # object of the process): how many of the slowest 1% they can explain
        out[f"{name}_gc2"] = gc_after[2] - gc_before[2]
        out[f"{name}_gc1"] = gc_after[1] - gc_before[1]
    return out


def cache_size(store: Any) -> dict[str, Any]:
    """``Store.size()`` and its parts: the bytes of the objects' payloads (their JSON, or the
    compressed bytes of packed objects), the compression dictionaries, and the rest (the fixed
    cost: structs, key and RV strings, lazily decoded metadata, table and index entries).

    The payload split reads the objects' private ``_raw`` (the bytes they hold; ``len``, not
    ``getsizeof``: a bytes object's 33-byte header counts as fixed cost), unless ``CacheSize``
    carries it itself; absent if the layout changed (the totals stay)."""
    size = store.size()
    out: dict[str, Any] = {
        "cache_objects": size.objects,
        "cache_bytes": size.bytes,
        "cache_json_bytes": size.json_bytes,
        "compressed_objects": size.compressed_objects,
    }
    for name in ("payload_bytes", "compressed_bytes", "dictionary_bytes"):
        if hasattr(size, name):
            out[f"cache_{name}"] = getattr(size, name)
    if "cache_payload_bytes" not in out:
        try:
            out["cache_payload_bytes"] = sum(len(o._raw) for o in store.list())
        except (AttributeError, TypeError):
            pass
    if "cache_dictionary_bytes" not in out:
        packer = getattr(store, "_packer", None)
        codecs = getattr(packer, "codecs", None) if packer is not None else None
        if packer is None:
            out["cache_dictionary_bytes"] = 0
        elif codecs is not None:
            out["cache_dictionary_bytes"] = sum(c.dict_size for c in codecs)
    return out


# -- D: msgspec envelope + metadata structs, raw bytes kept ----------------------------------------
class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Obj(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(name="continue", default="")


class _List(msgspec.Struct):
    metadata: _ListMeta
    items: list[msgspec.Raw]


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


_obj = msgspec.json.Decoder(_Obj)
_list = msgspec.json.Decoder(_List)
_event = msgspec.json.Decoder(_Event)


def _key(m: _Meta) -> str:
    return f"{m.namespace}/{m.name}" if m.namespace else m.name


async def d_list(session: aiohttp.ClientSession, url: str, cache: dict[str, Any]) -> str:
    cont = ""
    while True:
        params = {"limit": "500"}
        if cont:
            params["continue"] = cont
        async with session.get(url, params=params) as resp:
            body = await resp.read()
        page = _list.decode(body)
        for raw in page.items:
            cache[_key(_obj.decode(raw).metadata)] = raw
        cont = page.metadata.continue_
        if not cont:
            return page.metadata.resource_version


async def d_watch(
    session: aiohttp.ClientSession, url: str, params: dict[str, str], cache: dict[str, Any], n: int
) -> None:
    """Apply watch lines until ``n`` object events (or the initial-events-end bookmark)."""
    seen = 0
    async with session.get(url, params=params) as resp:
        async for line in resp.content:
            ev = _event.decode(line)
            if ev.type == "BOOKMARK":
                if n < 0:
                    return
                continue
            meta = _obj.decode(ev.object).metadata
            if ev.type == "DELETED":
                cache.pop(_key(meta), None)
            else:
                cache[_key(meta)] = ev.object
            seen += 1
            if seen == n:
                return


# -- orjson dicts ----------------------------------------------------------------------------------
async def orjson_list(session: aiohttp.ClientSession, url: str, cache: dict[str, Any]) -> str:
    import orjson

    cont = ""
    while True:
        params = {"limit": "500"}
        if cont:
            params["continue"] = cont
        async with session.get(url, params=params) as resp:
            body = await resp.read()
        page = orjson.loads(body)
        for item in page["items"]:
            m = item["metadata"]
            cache[f"{m.get('namespace', '')}/{m['name']}"] = item
        cont = page["metadata"].get("continue", "")
        if not cont:
            rv: str = page["metadata"]["resourceVersion"]
            return rv


async def orjson_watch(
    session: aiohttp.ClientSession, url: str, params: dict[str, str], cache: dict[str, Any], n: int
) -> None:
    import orjson

    seen = 0
    async with session.get(url, params=params) as resp:
        async for line in resp.content:
            ev = orjson.loads(line)
            obj = ev["object"]
            m = obj["metadata"]
            cache[f"{m.get('namespace', '')}/{m['name']}"] = obj
            seen += 1
            if seen == n:
                return


# -- the product -----------------------------------------------------------------------------------
async def product(spec: dict[str, Any], base: str) -> dict[str, Any]:
    from kubernetes_asyncio import client

    from informer import CONFIGMAPS, PODS, Informer, ReflectorOptions
    from informer.transforms import DROP_MANAGED_FIELDS

    case, n, w = spec["case"], spec["n"], spec["w"]
    res = CONFIGMAPS if spec["kind"] == "configmaps" else PODS
    transform: Any = None
    if spec.get("transform") == "drop":
        transform = DROP_MANAGED_FIELDS
    elif spec.get("transform") == "dict":

        def transform(obj: dict[str, Any]) -> dict[str, Any]:
            obj["metadata"].pop("managedFields", None)
            return obj

    strategy = "stream" if case == "sync-stream" else "list"
    compression = None
    if spec.get("compression"):
        from informer import Compression

        compression = Compression()
    options = ReflectorOptions(
        list_strategy=strategy, transform=transform, page_size=500, compression=compression
    )
    api = client.ApiClient(configuration=client.Configuration(host=base))
    inf = Informer(api, res, options=options)
    adds = updates = 0
    want_adds = w if case == "watch-fill" else n
    done_adds = asyncio.Event()
    done_updates = asyncio.Event()

    def on_add(obj: Any, initial: bool) -> None:
        nonlocal adds
        adds += 1
        if adds == want_adds:
            done_adds.set()

    def on_update(old: Any, new: Any) -> None:
        nonlocal updates
        updates += 1
        if updates == w:
            done_updates.set()

    inf.add_handler(on_add=on_add, on_update=on_update)
    out: dict[str, Any] = {}
    before = rss()
    reset_peak()
    c0 = cpu()
    t0 = time.perf_counter()
    inf.start()
    if case == "watch-fill":
        await inf.wait_for_sync()
        c0 = cpu()
        t0 = t1 = time.perf_counter()
        await done_adds.wait()
        out["seconds"] = time.perf_counter() - t1
        out["events_per_s"] = w / out["seconds"]
    else:
        await done_adds.wait()
        out["seconds"] = time.perf_counter() - t0
        if case == "watch-steady":
            c0 = cpu()
            t1 = time.perf_counter()
            await done_updates.wait()
            out["seconds"] = time.perf_counter() - t1
            out["events_per_s"] = w / out["seconds"]
    out.update(cpu_since(c0))
    if compression is not None:
        # The handler has seen every object; the background packing may still be running.
        # How much of the cache is still plain at that moment, then how long it takes until
        # every object is packed (``compact`` only waits for the store's own background task)
        # and the CPU of the whole interval (the worker thread included).
        out["plain_at_done"] = len(inf.store) - inf.store.size().compressed_objects
        packer = getattr(inf.store, "_packer", None)
        out["loop_batches"] = packer.loop_batches if packer is not None else -1
        t2 = time.perf_counter()
        await inf.store.compact()
        out["compact_seconds"] = time.perf_counter() - t2
        out["seconds_until_compact"] = time.perf_counter() - t0
        out["cpu_user_until_compact"] = cpu_since(c0)["cpu_user"]
    out.update(cache_size(inf.store))
    out["rss_before_gc"] = rss() - before  # as it stands, before the harness's gc.collect()
    gc.collect()
    out["rss_delta"] = rss() - before
    out["peak_delta"] = peak() - before  # the highest RSS of the run (the plain cache's)
    if spec.get("read_one"):
        out.update(read_one(inf.store.list(), spec["kind"]))
    if case == "read-all" or spec.get("read_all"):
        for obj in inf.store.list():
            obj["data" if spec["kind"] == "configmaps" else "spec"]
        gc.collect()
        out["rss_after_read"] = rss() - before
    if case == "relist-peak":
        steady = rss()
        reset_peak()
        async with aiohttp.ClientSession() as s:
            await s.get(control_url(base, "expire"))
        while inf.statistics().relists < 1:  # noqa: ASYNC110 - a counter, no event to await
            await asyncio.sleep(0.01)
        out["steady_rss"] = steady
        out["peak_rss"] = peak()
        out["peak_over_steady"] = peak() / steady
    await inf.stop()
    await api.close()
    return out


async def many_informers(spec: dict[str, Any], base: str) -> dict[str, Any]:
    from kubernetes_asyncio import client

    from informer import CONFIGMAPS, SharedInformerFactory

    count = spec["informers"]
    api = client.ApiClient(configuration=client.Configuration(host=base))
    factory = SharedInformerFactory(api)
    before = rss()
    t0 = time.perf_counter()
    for i in range(count):
        factory.informer(CONFIGMAPS, namespace=f"ns-{i:04d}").add_handler(on_add=lambda o, i: None)
    factory.start()
    await factory.wait_for_sync()
    took = time.perf_counter() - t0
    await asyncio.sleep(1.0)  # every watch opened
    gc.collect()
    used = rss() - before
    async with aiohttp.ClientSession() as s:
        stats = await (await s.get(control_url(base, "stats"))).json()
    await factory.stop()
    await api.close()
    return {
        "seconds": took,
        "rss_delta": used,
        "per_informer_kb": used / count / 1024,
        "open_watches": stats["open_watches"],
    }


# -- kubernetes_asyncio and the official client ----------------------------------------------------
async def k8s_asyncio(spec: dict[str, Any], base: str) -> dict[str, Any]:
    from kubernetes_asyncio import client, watch

    api = client.ApiClient(configuration=client.Configuration(host=base))
    v1 = client.CoreV1Api(api)
    cache: dict[str, Any] = {}
    before = rss()
    t0 = time.perf_counter()
    cont = None
    while True:
        page = await v1.list_pod_for_all_namespaces(limit=500, _continue=cont)
        for pod in page.items:
            cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
        cont = page.metadata._continue
        if not cont:
            break
    out: dict[str, Any] = {"seconds": time.perf_counter() - t0}
    if spec["case"] == "watch-steady":
        rv = page.metadata.resource_version
        t1 = time.perf_counter()
        seen = 0
        w = watch.Watch()
        async for ev in w.stream(v1.list_pod_for_all_namespaces, resource_version=rv):
            pod = ev["object"]
            cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
            seen += 1
            if seen == spec["w"]:
                break
        w.stop()
        out["seconds"] = time.perf_counter() - t1
        out["events_per_s"] = spec["w"] / out["seconds"]
    gc.collect()
    out["rss_delta"] = rss() - before
    await api.close()
    return out


def k8s_informer(spec: dict[str, Any], base: str) -> dict[str, Any]:
    import threading
    import urllib.request

    from kubernetes import client
    from kubernetes.informer import SharedInformer

    conf = client.Configuration()
    conf.host = base
    v1 = client.CoreV1Api(client.ApiClient(conf))
    n = spec["n"]
    done = threading.Event()
    count = 0

    def on_add(obj: Any) -> None:
        nonlocal count
        count += 1
        if count == n:
            done.set()

    inf = SharedInformer(v1.list_pod_for_all_namespaces)
    inf.add_event_handler("ADDED", on_add)
    before = rss()
    t0 = time.perf_counter()
    inf.start()
    done.wait(3600)
    out = {"seconds": time.perf_counter() - t0}
    gc.collect()
    out["rss_delta"] = rss() - before
    # stop() sets the informer's stop flag and joins its thread, which is blocked reading the
    # watch the replay server keeps open and silent. Ending that watch (a 410 line, then the end
    # of the response) lets the thread see the flag and return; ask again if the watch ended
    # before the flag was set (the informer re-watches once; its next watch ends the same way).
    stopper = threading.Thread(target=inf.stop)
    stopper.start()
    while stopper.is_alive():
        urllib.request.urlopen(control_url(base, "expire")).close()
        stopper.join(0.5)
    return out


async def peer(spec: dict[str, Any], base: str) -> dict[str, Any]:
    name, case, n, w = spec["peer"], spec["case"], spec["n"], spec["w"]
    url = base + path_of(spec["kind"])
    if name == "orjson-nogc":
        gc.disable()
    cache: dict[str, Any] = {}
    before = rss()
    reset_peak()
    c0 = cpu()
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(read_bufsize=1 << 20) as session:
        listing = d_list if name == "D" else orjson_list
        watching = d_watch if name == "D" else orjson_watch
        if case == "sync-stream":
            params = {"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true"}
            params["resourceVersionMatch"] = "NotOlderThan"
            await watching(session, url, params, cache, -1)
            out["seconds"] = time.perf_counter() - t0
        else:
            rv = await listing(session, url, cache)
            out["seconds"] = time.perf_counter() - t0
            if case.startswith("watch"):
                c0 = cpu()
                t1 = time.perf_counter()
                await watching(session, url, {"watch": "true", "resourceVersion": rv}, cache, w)
                out["seconds"] = time.perf_counter() - t1
                out["events_per_s"] = w / out["seconds"]
        out.update(cpu_since(c0))
    gc.enable()
    out["rss_before_gc"] = rss() - before
    gc.collect()
    out["rss_delta"] = rss() - before
    out["peak_delta"] = peak() - before
    out["cached"] = len(cache)
    assert case.startswith("watch") or len(cache) == n, (len(cache), n)
    return out


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    base = spec["base"]
    name = spec["peer"]
    if name == "k8s-informer":
        return k8s_informer(spec, base)
    if name == "product":
        coro = many_informers(spec, base) if spec["case"] == "many" else product(spec, base)
    elif name == "k8s-asyncio":
        coro = k8s_asyncio(spec, base)
    else:
        coro = peer(spec, base)
    return asyncio.run(coro)
