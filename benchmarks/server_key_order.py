"""What putting answers' keys in Go's order (``informer.testing._schemas.key_order``) costs a
write of the test API server: CPU time per object, best of several rounds.

Not part of the test suite. Run: ``python benchmarks/server_key_order.py``. Rows:
``order stored``: ordering an object already in order (a stored one written again: nothing is
copied); ``order fresh``: ordering an object whose maps are written unsorted (copies);
``bulk_load``: ``ApiServer.bulk_load`` of server_throughput.py's ConfigMaps (the whole write).
CPU time (``time.process_time``), so a busy machine disturbs the numbers less.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_throughput import objects

from informer.resource import CONFIGMAPS
from informer.testing import ApiServer
from informer.testing._schemas.key_order import builtin_order

CONFIGMAP: dict[str, Any] = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {
        "annotations": {"zz": "1", "aa": "2"},
        "name": "c",
        "namespace": "default",
        "labels": {"z": "1", "app": "x", "b": "2"},
    },
    "data": {"key": "x" * 64, "index": "1", "a": "b"},
}
POD: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "p", "namespace": "default", "labels": {"app": "x"}},
    "spec": {
        "nodeSelector": {"zone": "a", "disk": "ssd"},
        "containers": [
            {
                "name": "c",
                "image": "nginx:1.27",
                "resources": {"limits": {"memory": "1Gi", "cpu": "1"}},
                "env": [{"name": "A", "value": "1"}],
                "ports": [{"containerPort": 80}],
            }
        ],
    },
    "status": {"phase": "Running"},
}


def per_call(fn: Callable[[Any], object], arg: Any, number: int = 20_000, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(number):
            fn(arg)
        best = min(best, (time.process_time() - started) / number)
    return best


def main() -> None:
    for label, obj in (("ConfigMap", CONFIGMAP), ("Pod", POD)):
        order = builtin_order("", "v1", obj["kind"])
        stored = order(obj)
        assert order(stored) is stored
        fresh = per_call(order, obj)
        again = per_call(order, stored)
        print(f"{label}: order fresh {fresh * 1e6:.2f} us, order stored {again * 1e6:.2f} us")
    best = float("inf")
    for round_ in range(3):
        server = ApiServer("modern")
        items = list(objects(f"cm{round_}", 20_000))
        started = time.process_time()
        server.bulk_load(CONFIGMAPS, items)
        best = min(best, (time.process_time() - started) / len(items))
    print(f"bulk_load: {best * 1e6:.2f} us/object (ConfigMaps, best of 3 x 20,000)")


if __name__ == "__main__":
    main()
