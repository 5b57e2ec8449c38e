"""Reading one field of a cached Pod that is not in the memo of recent decodes.

``python benchmarks/read_one.py [N]``: realistic Pods (``_objects.make_real_items``), held plain
and compressed with a dictionary trained on 1,000 others (``Compression()``'s defaults); per
access path, the median and p90 of ``N`` reads (default 2,000), each after the memo is cleared.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path[:0] = [os.path.dirname(__file__), os.path.dirname(os.path.dirname(__file__))]

from _objects import make_real_items  # noqa: E402

from informer._zstd import ZstdCodec  # noqa: E402
from informer.objects import KubeObject, _memo  # noqa: E402


def build(n: int) -> tuple[list[KubeObject], list[KubeObject]]:
    items = make_real_items(n + 1000)
    plain = KubeObject._from_list_items(items[1000:], "Pod", "v1")
    codec = ZstdCodec.train(items[:1000], 112 * 1024, 3)
    packed = KubeObject._from_list_items(items[1000:], "Pod", "v1")
    for o in packed:  # as the store's packer does
        o._pack_in_place(codec.compress(o._object_bytes()[0]), codec, o._meta())
    return plain, packed


def probe(objs: list[KubeObject], read: Callable[[KubeObject], Any]) -> tuple[float, float]:
    clock = time.perf_counter_ns
    times = []
    for o in objs:
        _memo.clear()
        t = clock()
        read(o)
        times.append(clock() - t)
    times.sort()
    return times[len(times) // 2] / 1e3, times[len(times) * 9 // 10] / 1e3


READS: dict[str, Callable[[KubeObject], Any]] = {
    'obj["spec"]': lambda o: o["spec"],
    'obj["spec"] then obj["status"]': lambda o: (o["spec"], o["status"]),
    'obj["metadata"]': lambda o: o["metadata"],
    "len(obj)": len,
    '"spec" in obj': lambda o: "spec" in o,
    "to_dict()": lambda o: o.to_dict(),
    "raw": lambda o: o.raw,
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    plain, packed = build(n)
    print(f"{n} realistic Pods, {sum(len(o.raw) for o in plain) / n:.0f} B of JSON each")
    print(f"{'read':34} {'plain p50 / p90 us':>20} {'compressed p50 / p90 us':>26}")
    for name, read in READS.items():
        for _ in range(2):  # the first round warms up
            a, b = probe(plain, read), probe(packed, read)
        print(f"{name:34} {a[0]:9.1f} / {a[1]:7.1f} {b[0]:14.1f} / {b[1]:7.1f}")


if __name__ == "__main__":
    main()
