"""Initial sync of a large list: the JSON limit, today's dicts, and our store, side by side.

Builds the body of a PodList of N realistic ~6.6 KB Pods (default 100,000: about 660 MB of JSON),
then measures in one run:

  (a) the pure JSON decode limit: ``msgspec.json.decode`` of the whole body into dicts;
  (b) the way Python controllers do it today: ``json.loads`` into dicts, kept in a dict keyed by
      ``namespace/name``;
  (c) our path: a typed partial decode of the list envelope with items as ``msgspec.Raw``,
      ``KubeObject.from_raw`` for each item, and ``Store.replace`` (deltas and indexes included);
  (d) kubernetes_asyncio model deserialization (``V1PodList``), on a smaller sample, extrapolated;
  (e) watch processing: decoding N watch lines (MODIFIED) and applying them to the synced store.

Times are wall-clock seconds of one run each (``--repeat`` for the best of several), with the
cyclic garbage collector on as in a real program, except for (a), the decode limit, which is also
shown with the GC off: building millions of dicts triggers many full collections, and that, more
than parsing, is what makes the dict approaches slow. Memory is
measured separately with tracemalloc on ``--mem-count`` objects (tracemalloc slows allocation-heavy
code a lot, and the ratio to the JSON size does not depend on N): "retained" is what the result
holds, "peak" the high-water mark while building it, both relative to the JSON size.

    python benchmarks/store_sync.py                 # 100,000 Pods
    python benchmarks/store_sync.py --count 20000   # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import msgspec

from informer.objects import KubeObject
from informer.store import Store

TARGET_SIZE = 6600


class _ListMeta(msgspec.Struct, frozen=True, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta = _ListMeta()
    items: list[msgspec.Raw] = []


class _WatchEvent(msgspec.Struct):
    type: str
    object: msgspec.Raw


_list_decoder = msgspec.json.Decoder(_List)
_event_decoder = msgspec.json.Decoder(_WatchEvent)


# -- the data ------------------------------------------------------------------------------------
def _pod_template() -> bytes:
    """A Pod as a real API server returns it, with @TOKENS@ to vary per item."""
    container = {
        "name": "app",
        "image": "registry.example.com/team/app:1.42.0@sha256:" + "ab" * 32,
        "command": ["/app/server"],
        "args": ["--port=8080", "--metrics-port=9090", "--log-level=info", "--config=/etc/app"],
        "ports": [
            {"name": "http", "containerPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            {"name": "GOMAXPROCS", "value": "2"},
            {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector:4317"},
        ],
        "resources": {
            "limits": {"cpu": "2", "memory": "1Gi"},
            "requests": {"cpu": "250m", "memory": "512Mi"},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {
                "name": "kube-api-access-x7k2p",
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            },
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    managed = {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-15T10:21:33Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {
                "f:generateName": {},
                "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                "f:ownerReferences": {".": {}, 'k:{"uid":"@UID@"}': {}},
            },
            "f:spec": {
                "f:containers": {
                    'k:{"name":"app"}': {
                        ".": {},
                        "f:args": {},
                        "f:command": {},
                        "f:env": {},
                        "f:image": {},
                        "f:ports": {},
                        "f:resources": {},
                        "f:volumeMounts": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
                "f:volumes": {},
            },
        },
    }
    kubelet = {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-15T10:21:41Z",
        "fieldsType": "FieldsV1",
        "subresource": "status",
        "fieldsV1": {
            "f:status": {
                "f:conditions": {
                    f'k:{{"type":"{t}"}}': {
                        ".": {},
                        "f:lastProbeTime": {},
                        "f:lastTransitionTime": {},
                        "f:status": {},
                        "f:type": {},
                    }
                    for t in ("ContainersReady", "Initialized", "Ready")
                },
                "f:containerStatuses": {},
                "f:hostIP": {},
                "f:phase": {},
                "f:podIP": {},
                "f:podIPs": {".": {}, 'k:{"ip":"@IP@"}': {".": {}, "f:ip": {}}},
                "f:startTime": {},
            }
        },
    }
    pod: dict[str, Any] = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "@NAME@",
            "generateName": "app-7d9f8c6b5-",
            "namespace": "@NS@",
            "uid": "@UID@",
            "resourceVersion": "@RV@",
            "creationTimestamp": "2026-01-15T10:21:33Z",
            "labels": {"app": "@APP@", "pod-template-hash": "7d9f8c6b5", "tier": "backend"},
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "example.com/padding": "@PAD@",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "app-7d9f8c6b5",
                    "uid": "@UID@",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [managed, kubelet],
        },
        "spec": {
            "volumes": [
                {"name": "config", "configMap": {"name": "app-config", "defaultMode": 420}},
                {
                    "name": "kube-api-access-x7k2p",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "app",
            "serviceAccount": "app",
            "nodeName": "@NODE@",
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-01-15T10:21:41Z",
                }
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.3.17",
            "podIP": "@IP@",
            "podIPs": [{"ip": "@IP@"}],
            "startTime": "2026-01-15T10:21:33Z",
            "containerStatuses": [
                {
                    "name": "app",
                    "state": {"running": {"startedAt": "2026-01-15T10:21:40Z"}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example.com/team/app:1.42.0",
                    "imageID": "registry.example.com/team/app@sha256:" + "cd" * 32,
                    "containerID": "containerd://" + "ef" * 32,
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }
    raw = msgspec.json.encode(pod)
    pad = TARGET_SIZE - (len(raw) - len(b"@PAD@")) - 40  # room for the varying fields
    return raw.replace(b"@PAD@", b"x" * max(pad, 0))


def make_items(count: int, first_rv: int = 1_000_000) -> list[bytes]:
    template = _pod_template()
    items = []
    for i in range(count):
        items.append(
            template.replace(b"@NAME@", b"app-7d9f8c6b5-%07d" % i)
            .replace(b"@NS@", b"team-%03d" % (i % 200))
            .replace(b"@UID@", b"6f1c2a3e-%04x-4b5c-9d0e-%012x" % (i % 65536, i))
            .replace(b"@RV@", b"%d" % (first_rv + i))
            .replace(b"@APP@", b"app-%d" % (i % 50))
            .replace(b"@NODE@", b"node-%04d" % (i % 1000))
            .replace(b"@IP@", b"10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255))
        )
    return items


def make_list_body(items: list[bytes], list_rv: int) -> bytes:
    head = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":['
    return head % list_rv + b",".join(items) + b"]}"


# -- the contenders ------------------------------------------------------------------------------
def a_msgspec_dicts(body: bytes) -> Any:
    return msgspec.json.decode(body)


def b_json_dicts(body: bytes) -> dict[str, Any]:
    items = json.loads(body)["items"]
    cache = {}
    for item in items:
        meta = item["metadata"]
        cache[f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]] = (
            item
        )
    return cache


def c_store(body: bytes, parts: dict[str, float] | None = None) -> Store:
    t0 = time.perf_counter()
    lst = _list_decoder.decode(body)
    t1 = time.perf_counter()
    objs = [KubeObject.from_raw(raw) for raw in lst.items]
    del lst
    t2 = time.perf_counter()
    store = Store()
    store.replace(objs, "1", is_initial=True)
    t3 = time.perf_counter()
    if parts is not None:
        parts.update(envelope=t1 - t0, from_raw=t2 - t1, replace=t3 - t2)
    return store


def d_kubernetes_asyncio(body: bytes) -> Any:
    async def run() -> Any:
        from kubernetes_asyncio.client import ApiClient

        async with ApiClient() as client:
            data = json.loads(body)
            return client._ApiClient__deserialize(data, "V1PodList")

    return asyncio.run(run())


# -- measuring -----------------------------------------------------------------------------------
def timed(fn: Callable[[], Any], repeat: int, *, gc_off: bool = False) -> tuple[float, Any]:
    """Best wall time of ``repeat`` runs, with the cyclic GC on (as in a real program) or off."""
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None
        gc.collect()
        if gc_off:
            gc.disable()
        try:
            t = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - t)
        finally:
            gc.enable()
    return best, result


def memory(fn: Callable[[], Any]) -> tuple[int, int]:
    """(retained, peak) bytes allocated by ``fn`` while its result is alive."""
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    gc.collect()
    return current - base, peak - base


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--count", type=int, default=100_000, help="objects in the list")
    parser.add_argument("--mem-count", type=int, default=10_000, help="objects for tracemalloc")
    parser.add_argument(
        "--k8s-sample",
        type=int,
        default=200,
        help="objects for kubernetes_asyncio models (0: skip)",
    )
    parser.add_argument("--events", type=int, default=20_000, help="watch events for (e) (0: skip)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement (best kept)")
    parser.add_argument(
        "--gc-variants",
        action="store_true",
        help="also time (a) with the GC on and (b) with the GC off (slow)",
    )
    args = parser.parse_args()
    n = args.count

    t = time.perf_counter()
    items = make_items(n)
    body = make_list_body(items, n + 2_000_000)
    mb = len(body) / 1e6
    print(
        f"python {platform.python_version()}, msgspec {msgspec.__version__}, {platform.machine()}"
    )
    print(
        f"list body: {n:,} Pods, {mb:,.1f} MB, {len(body) / n:,.0f} B/object "
        f"(built in {time.perf_counter() - t:.1f}s)\n"
    )

    rows: list[tuple[str, float, int]] = []
    # results are dropped at once: a big heap of dicts left alive would slow the next contender's
    # garbage collections
    ta = timed(lambda: a_msgspec_dicts(body), args.repeat, gc_off=True)[0]
    rows.append(("(a) msgspec.json.decode -> dicts, gc off (JSON limit)", ta, n))
    if args.gc_variants:
        ta_gc = timed(lambda: a_msgspec_dicts(body), args.repeat)[0]
        rows.append(("(a') msgspec.json.decode -> dicts, gc on", ta_gc, n))
        tb_off = timed(lambda: b_json_dicts(body), args.repeat, gc_off=True)[0]
        rows.append(("(b') json.loads -> dicts keyed by ns/name, gc off", tb_off, n))
    tb = timed(lambda: b_json_dicts(body), args.repeat)[0]
    rows.append(("(b) json.loads -> dicts keyed by ns/name", tb, n))
    parts: dict[str, float] = {}
    tc, store = timed(lambda: c_store(body, parts), args.repeat)
    rows.append(("(c) typed envelope + KubeObject + Store.replace", tc, n))
    if args.k8s_sample:
        k = min(args.k8s_sample, n)
        small = make_list_body(items[:k], 1)
        td = timed(lambda: d_kubernetes_asyncio(small), 1)[0] * n / k
        rows.append((f"(d) kubernetes_asyncio V1PodList ({k:,} objects, x{n / k:g})", td, n))

    print(f"{'initial sync':<58}{'seconds':>9}{'objects/s':>12}{'MB/s':>8}{'vs (c)':>8}")
    for label, secs, count in rows:
        print(f"{label:<58}{secs:>9.2f}{count / secs:>12,.0f}{mb / secs:>8.0f}{secs / tc:>7.1f}x")
    print(
        f"    (c) = envelope {parts['envelope']:.2f}s + KubeObject.from_raw "
        f"{parts['from_raw']:.2f}s + Store.replace {parts['replace']:.2f}s "
        f"(store work: {parts['replace'] / n * 1e6:.2f} us/object)"
    )
    print(
        f"    (c) is {tb / tc:.1f}x faster than (b) and takes {tc / ta:.2f}x the time of (a), "
        "the bare decode into dicts"
    )

    if args.events:
        m = args.events
        lines = [
            b'{"type":"MODIFIED","object":'
            + items[i % n].replace(
                b'"resourceVersion":"%d"' % (1_000_000 + i % n),
                b'"resourceVersion":"%d"' % (3_000_000 + i),
            )
            + b"}"
            for i in range(m)
        ]

        def ours() -> None:
            for line in lines:
                ev = _event_decoder.decode(line)
                store.apply_event(ev.type, KubeObject.from_raw(ev.object))

        # steady state for the dicts: the cache already holds (as dicts) every object the events
        # touch, so each event replaces one (holding all N as dicts would cost gigabytes more)
        cache = b_json_dicts(make_list_body(items[: min(m, n)], 1))

        def dicts() -> None:
            for line in lines:
                ev = json.loads(line)
                meta = ev["object"]["metadata"]
                cache[f"{meta['namespace']}/{meta['name']}"] = ev["object"]

        te_b, _ = timed(dicts, 1)
        cache.clear()
        te_c, _ = timed(ours, 1)
        assert store.stats.events_applied == m, store.stats
        print(
            f"\n(e) watch: {m:,} MODIFIED lines: json.loads + dict {te_b:.2f}s "
            f"({m / te_b:,.0f}/s); ours (typed envelope + KubeObject + apply_event) "
            f"{te_c:.2f}s ({m / te_c:,.0f}/s): {te_b / te_c:.1f}x"
        )
    store = Store()  # drop the big one
    gc.collect()

    k = min(args.mem_count, n)
    small = make_list_body(items[:k], 1)
    items, body = [], b""  # free them (closures above refer to these names)
    gc.collect()
    sm = len(small)
    print(
        f"\nmemory (tracemalloc, {k:,} objects, {sm / 1e6:.1f} MB of JSON): "
        f"retained and peak, relative to the JSON size"
    )
    mem_rows = [
        ("(a) msgspec dicts", lambda: a_msgspec_dicts(small)),
        ("(b) json.loads dicts keyed by ns/name", lambda: b_json_dicts(small)),
        ("(c) KubeObject + Store", lambda: c_store(small)),
    ]
    for label, fn in mem_rows:
        retained, peak = memory(fn)
        print(
            f"    {label:<42} retained {retained / sm:5.2f}x ({retained / 1e6:7.1f} MB)"
            f"   peak {peak / sm:5.2f}x"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
