"""Where a cached object's bytes go: RSS and ``Store.size()`` per object, and the size's parts.

    python benchmarks/object_bytes.py [--objects 100000] [--kind configmaps|realpods] [--reps 2]
                                      [--compression]

One informer per repetition, each in a fresh process, lists ``--objects`` objects from the
replay server (pages of 500) and reports, per object: its RSS over the process's base once the
handler saw every add (after ``gc.collect()``; with ``--compression`` after ``compact()``), the
same after ``malloc_trim`` (glibc: what the heap keeps of freed memory), ``Store.size()``, and
``Store.size()``'s parts measured with ``sys.getsizeof`` (the JSON's bytes object, the struct,
the key and RV, the lazily decoded metadata, the store's table, the indexes). ``sys.getsizeof``
counts what each object asks for; CPython's allocator rounds small objects up to 16 bytes
(a 56-byte struct takes 64), which RSS shows and ``Store.size()`` does not.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def child(base: str, n: int, kind: str, compression: bool) -> dict[str, Any]:
    from kubernetes_asyncio import client

    from informer import CONFIGMAPS, PODS, Compression, Informer, ReflectorOptions

    api = client.ApiClient(configuration=client.Configuration(host=base))
    options = ReflectorOptions(
        list_strategy="list",
        page_size=500,
        compression=Compression() if compression else None,
    )
    inf = Informer(api, CONFIGMAPS if kind == "configmaps" else PODS, options=options)
    adds = 0
    done = asyncio.Event()

    def on_add(obj: Any, initial: bool) -> None:
        nonlocal adds
        adds += 1
        if adds == n:
            done.set()

    inf.add_handler(on_add=on_add)
    gc.collect()
    before = rss()
    inf.start()
    await done.wait()
    store = inf.store
    await store.compact()
    gc.collect()
    out: dict[str, Any] = {"rss": rss() - before}
    size = store.size()
    out.update(size=size.bytes, json=size.json_bytes, compressed=size.compressed_objects)
    out["parts"] = parts(store)
    try:
        trim = ctypes.CDLL(None).malloc_trim
        t0 = time.perf_counter()
        trim(0)
        out["trim_seconds"] = time.perf_counter() - t0
        out["rss_trimmed"] = rss() - before
    except (OSError, AttributeError):
        out["rss_trimmed"] = out["rss"]
    await inf.stop()
    await api.close()
    return out


def parts(store: Any) -> dict[str, int]:
    """``Store.size()``'s parts (total bytes each), measured from the contents."""
    getsizeof = sys.getsizeof
    c = store._c
    p = dict.fromkeys(("bytes", "struct", "key", "rv", "lazy", "table", "indexes"), 0)
    labels: set[int] = set()
    for key, obj in c.items.items():
        p["bytes"] += getsizeof(obj._raw)
        p["struct"] += getsizeof(obj)
        p["key"] += getsizeof(key)
        lazy = obj._lazy
        if isinstance(lazy, str):  # the RV alone (a list's items hold none)
            p["rv"] += getsizeof(lazy)
        elif lazy is not None:
            p["rv"] += getsizeof(lazy.resource_version)
            p["lazy"] += getsizeof(lazy) + getsizeof(lazy.uid)
            if lazy.labels and id(lazy.labels) not in labels:
                labels.add(id(lazy.labels))
                p["lazy"] += getsizeof(lazy.labels)
    p["table"] = getsizeof(c.items)
    for index in c.indices.values():
        p["indexes"] += getsizeof(index) + sum(
            getsizeof(v) + getsizeof(b) for v, b in index.items()
        )
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--kind", choices=["configmaps", "realpods"], default="configmaps")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--compression", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        base, n = args.child[0], int(args.child[1])
        print(json.dumps(asyncio.run(child(base, n, args.kind, args.compression))))
        return
    sys.path[:0] = [HERE, ROOT]
    from _replay import Dataset, Replay  # type: ignore[import-not-found,unused-ignore]

    n = args.objects
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, HERE])}
    with Replay(Dataset(args.kind, n, 1)) as rp:
        for i in range(args.reps):
            cmd = [sys.executable, __file__, "--kind", args.kind, "--child"]
            cmd += [rp.base() + f"/list/b{i}", str(n)]
            if args.compression:
                cmd.append("--compression")
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            js = r["json"]
            print(
                f"[{i + 1}/{args.reps}] {n:,} {args.kind}"
                f"{' compressed' if args.compression else ''}, JSON {js / n:.0f} B per object:"
                f" RSS {r['rss'] / n:.0f} B ({r['rss'] / js:.3f}x),"
                f" after malloc_trim {r['rss_trimmed'] / n:.0f} B ({r['rss_trimmed'] / js:.3f}x),"
                f" Store.size() {r['size'] / n:.0f} B ({r['size'] / js:.3f}x)"
                f" (malloc_trim: {r.get('trim_seconds', 0) * 1e3:.1f} ms)"
            )
            print(
                "      size's parts per object: "
                + ", ".join(f"{k} {v / n:.1f}" for k, v in r["parts"].items())
            )


if __name__ == "__main__":
    main()
