"""Reading fields of a cached Pod that is not in the memo of recent decodes.

``python benchmarks/read_one.py [N]``: realistic Pods (``_objects.make_real_items``), held plain
and compressed with a dictionary trained on 1,000 others (``Compression()``'s defaults); per
access path, the median and p90 of ``N`` reads (default 2,000) of objects not read for at least
256 reads, in three conditions:

* ``full memo``: as a running controller reads, the memo of recent decodes full (256 objects,
  each read the same way), so each read also frees the oldest decode (run.py's "reading one
  Pod" row, memo full);
* ``empty memo``: the memo emptied before each read (the decode alone);
* ``memo hit``: the same read again right after (the object in the memo).

The garbage collector stays on, as in production. Besides single members, the paths include
deep reads: one nested field, a reconcile reading some forty fields across the Pod (labels,
owner references, each container's image, env, ports and resources, volumes, conditions,
container statuses), a walk of every value through the views, and a spec compared with a dict.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

sys.path[:0] = [os.path.dirname(__file__), os.path.dirname(os.path.dirname(__file__))]

from _objects import make_real_items  # noqa: E402

from informer._zstd import ZstdCodec  # noqa: E402
from informer.objects import KubeObject, _memo, set_decoded_cache_size  # noqa: E402


def build(n: int) -> tuple[list[KubeObject], list[KubeObject], list[dict[str, Any]]]:
    items = make_real_items(n + 1000)
    plain = KubeObject._from_list_items(items[1000:], "Pod", "v1")
    codec = ZstdCodec.train(items[:1000], 112 * 1024, 3)
    packed = KubeObject._from_list_items(items[1000:], "Pod", "v1")
    for o in packed:  # as the store's packer does
        o._pack_in_place(codec.compress(o._object_bytes()[0]), codec, o._meta())
    return plain, packed, [o.to_dict() for o in plain]


def reconcile(o: KubeObject) -> int:
    """What a Pod controller's reconcile might read: some forty fields across the object."""
    n = 0
    m = o["metadata"]
    n += len(m["labels"].get("app.kubernetes.io/name", ""))
    n += len(m.get("annotations", {}).get("checksum/config", ""))
    for ref in m.get("ownerReferences", ()):
        n += len(ref["kind"]) + len(ref["name"]) + bool(ref.get("controller"))
    spec = o["spec"]
    n += len(spec.get("nodeName", ""))
    for c in spec["containers"]:
        n += len(c["name"]) + len(c["image"])
        for e in c.get("env", ()):
            n += len(e["name"]) + len(e.get("value", ""))
        n += len(c.get("resources", {}).get("limits", {}))
        for p in c.get("ports", ()):
            n += p["containerPort"]
    for v in spec.get("volumes", ()):
        n += len(v["name"])
    status = o["status"]
    n += len(status.get("phase", ""))
    for cond in status.get("conditions", ()):
        n += len(cond["type"]) + len(cond["status"])
    for cs in status.get("containerStatuses", ()):
        n += bool(cs["ready"]) + cs.get("restartCount", 0)
    return n


def walk(value: Any) -> int:
    """Every value of the object read through the views."""
    if isinstance(value, Mapping):
        return sum(walk(v) for v in value.values()) + 1
    if isinstance(value, list | tuple) or type(value).__name__ == "_FrozenList":
        return sum(walk(v) for v in value) + 1
    return 1


READS: dict[str, Callable[[KubeObject], Any]] = {
    'obj["spec"]': lambda o: o["spec"],
    'obj["spec"] then obj["status"]': lambda o: (o["spec"], o["status"]),
    'obj["metadata"]': lambda o: o["metadata"],
    'obj["spec"]["containers"][0]["image"]': lambda o: o["spec"]["containers"][0]["image"],
    "reconcile (~40 fields)": reconcile,
    "walk every value": walk,
    'obj["spec"] == its dict': lambda o: o["spec"] == PLAIN[o.key]["spec"],
    "len(obj)": len,
    '"spec" in obj': lambda o: "spec" in o,
    "to_dict()": lambda o: o.to_dict(),
    "raw": lambda o: o.raw,
}
PLAIN: dict[str, dict[str, Any]] = {}


def probe(objs: list[KubeObject], read: Callable[[KubeObject], Any], mode: str) -> list[int]:
    """The time of ``read`` on each object (ns), each read in ``mode``."""
    clock = time.perf_counter_ns
    times = []
    for o in objs:
        if mode == "empty memo":
            _memo.clear()
        elif mode == "memo hit":
            read(o)
        t = clock()
        read(o)
        times.append(clock() - t)
    return times


def quantiles(times: list[int]) -> tuple[float, float]:
    times = sorted(times)
    return times[len(times) // 2] / 1e3, times[len(times) * 9 // 10] / 1e3


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    memo_size = set_decoded_cache_size(256)
    set_decoded_cache_size(memo_size)
    plain, packed, dicts = build(max(n, 2 * memo_size))
    PLAIN.update((o.key, d) for o, d in zip(plain, dicts, strict=True))
    print(f"{len(plain)} realistic Pods, {sum(len(o.raw) for o in plain) / n:.0f} B of JSON each;")
    print(f"memo of {memo_size} objects; p50 / p90 in microseconds of {len(plain)} reads")
    print(f"{'read':40} {'memo':>10} {'plain':>15} {'compressed':>15}")
    for name, read in READS.items():
        for mode in ("full memo", "empty memo", "memo hit"):
            for _ in range(2):  # the first round warms up (and fills the memo)
                a, b = probe(plain, read, mode), probe(packed, read, mode)
            (a50, a90), (b50, b90) = quantiles(a), quantiles(b)
            print(f"{name:40} {mode:>10} {a50:7.1f} / {a90:5.1f} {b50:7.1f} / {b90:5.1f}")


if __name__ == "__main__":
    main()
