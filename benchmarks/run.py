"""Every benchmark of issue 12, each ratio printed next to its goal.

    python benchmarks/run.py            # the full run (100,000 Pods, 1,000,000 ConfigMaps)
    python benchmarks/run.py --quick    # 116 s on an idle 2-core machine (2026-11-24)
    python -m benchmarks [--quick]
    python benchmarks/run.py --only compression  # issue 22's rows alone (see compression_rows)

``--quick`` keeps every case and its repetitions (3, interleaved, where the full run has them)
on smaller sets: 20,000 Pods and 10,000 watch events (the full run's proportion), 100,000
ConfigMaps, 200 informers, 2,000 freshness waiters, the slow clients on 1,000 Pods. Its memory
ratios carry fixed costs (interpreter, allocator arenas, table sizes) that the full sizes
amortise: the full run is the reference, the quick one a check that every case runs and roughly
where each ratio stands.

How it measures (so a skeptical reader can check):
* A replay server (``_replay.py``) in its own process serves bytes encoded before the first
  request: the server is never the bottleneck.
* Every measurement is a fresh client process (RSS from ``/proc/self/statm``, after
  ``gc.collect()``, minus the process's RSS before the run; peak from ``VmHWM`` after resetting it).
* Peers run interleaved (each repetition runs every peer once, in turn, starting one peer later
  than the repetition before) and each row shows the median of the repetitions with their spread
  (min-max). Each group starts with one run that is not counted: the first client process after
  a dataset was built ran 1.3-1.8x slower than its median (full runs of 2026-11-24), and that
  slot was always the product's.
* ``product`` is ``informer.Informer`` through its public API with one no-op handler attached,
  timed until the handler has seen the last event. ``D`` is the strongest fair peer (``_clients``).
* ``kubernetes_asyncio`` and the official client's ``SharedInformer`` run on a subsample (they
  are 20-100x slower); the subsample size is printed with them.
* The freshness waiters run on the embedded test server (``freshness_waiters.py``, its own
  process): each case is timed against the watch alone on the same setup, not against D.
* ``user CPU s`` is the client process's user CPU time over the same interval as ``seconds``
  (``getrusage``; recorded for the product, D and the orjson peers): supporting figures printed
  under the goals, which stay wall-clock ratios. User time is stable between identical runs;
  system time (memory faults) varies by 0.4-2 s on this kind of machine, so it is not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from _replay import Dataset, Replay  # noqa: E402

_token = 0


def child(replay: Replay, scenario: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One measurement in a fresh process; returns its JSON result."""
    global _token
    _token += 1
    spec = {**spec, "base": f"{replay.base()}/{scenario}/t{_token}-{os.getpid()}"}
    code = (
        "import sys, json, _clients; print(json.dumps(_clients.run_child(json.loads(sys.argv[1]))))"
    )
    result: dict[str, Any] = run_json(
        ["-c", code, json.dumps(spec)], f"{spec['peer']} {spec['case']}"
    )
    return result


def run_json(args: list[str], what: str) -> Any:
    """A fresh Python process (the repository and ``benchmarks/`` importable): the JSON it
    printed on its last line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    proc = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=3600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class Results:
    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def add(self, peer: str, case: str, r: dict[str, Any]) -> None:
        self.runs.setdefault((peer, case), []).append(r)

    def values(self, peer: str, case: str, field: str) -> list[float]:
        return [r[field] for r in self.runs.get((peer, case), []) if field in r]

    def med(self, peer: str, case: str, field: str) -> float:
        return statistics.median(self.values(peer, case, field))

    def fmt(self, peer: str, case: str, field: str, scale: float = 1.0, unit: str = "") -> str:
        vals = [v / scale for v in self.values(peer, case, field)]
        if not vals:
            return "-"
        m = statistics.median(vals)
        spread = f" ({min(vals):.3g}-{max(vals):.3g})" if len(vals) > 1 else ""
        return f"{m:.3g}{unit}{spread}"


def interleaved(
    res: Results,
    replay: Replay,
    scenario: str,
    runs: list[tuple[str, str, dict[str, Any]]],
    reps: int,
    warmup: int = 0,
) -> None:
    """Each repetition runs every peer of ``runs`` once, after one first run that is not counted
    (``runs[warmup]``: see the module docstring)."""
    peer, case, extra = runs[warmup]
    extra = {k: v for k, v in extra.items() if k != "label"}
    t0 = time.perf_counter()
    child(replay, scenario, {"peer": peer, "case": case, **extra})
    print(f"  [warm-up, not counted] {peer} {case} (process {time.perf_counter() - t0:.1f} s)")
    for rep in range(reps):
        shift = rep % len(runs)  # each repetition starts with the next peer: no fixed first slot
        for peer, case, extra in runs[shift:] + runs[:shift]:
            label = extra.pop("label", peer)
            spec = {"peer": peer, "case": case, **extra}
            t0 = time.perf_counter()
            r = child(replay, scenario, spec)
            took = time.perf_counter() - t0
            res.add(label, case, r)
            extra["label"] = label
            print(
                f"  [{rep + 1}/{reps}] {label:>16} {case:<13} {short(r)} (process {took:.1f} s)",
                flush=True,
            )


def short(r: dict[str, Any]) -> str:
    parts = []
    for k in (
        "seconds",
        "events_per_s",
        "cpu_user",
        "plain_at_done",
        "compact_seconds",
        "rss_delta",
        "peak_delta",
        "rss_after_read",
        "peak_over_steady",
        "read_one_p50_us",
    ):
        if k in r:
            v = r[k]
            big = "rss" in k or k == "peak_delta"
            parts.append(f"{k}={v / 2**20:.1f}MB" if big else f"{k}={v:.4g}")
    return " ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smaller sets, every case: 116 s on an idle 2-core machine (2026-11-24)",
    )
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--cm-reps",
        type=int,
        help="--only compression: repetitions of the ConfigMap group (default: --reps)",
    )
    ap.add_argument("--json", type=Path, help="write every raw result here")
    ap.add_argument(
        "--only",
        choices=["compression"],
        help="run one group alone: compression = issue 22's rows (realistic Pods, ConfigMaps)",
    )
    args = ap.parse_args()
    if args.only == "compression":
        compression_rows(args)
        return
    q = args.quick
    n_pods = 20_000 if q else 100_000
    w_pods = 10_000 if q else 50_000
    n_cms = 100_000 if q else 1_000_000
    n_small = 1_000 if q else 5_000
    informers = 200 if q else 1_000
    reps = args.reps
    res = Results()
    started = time.time()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()}")

    print(f"\n== {n_pods:,} Pods (~6.6 KB), {w_pods:,} watch events, pages of 500")
    with Replay(Dataset("pods", n_pods, w_pods)) as rp:
        pods = dict(n=n_pods, w=w_pods, kind="pods")
        interleaved(
            res,
            rp,
            "list",
            [
                ("product", "sync-list", {**pods}),
                ("D", "sync-list", {**pods}),
                ("orjson", "sync-list", {**pods}),
                ("orjson-nogc", "sync-list", {**pods}),
                ("product", "sync-stream", {**pods}),
                ("D", "sync-stream", {**pods}),
                ("product", "sync-list", {**pods, "transform": "drop", "label": "product+drop"}),
                ("product", "sync-list", {**pods, "transform": "dict", "label": "product+dict"}),
                ("product", "read-all", {**pods}),
            ],
            reps,
        )
        interleaved(
            res,
            rp,
            "fill",
            [
                ("product", "watch-fill", {**pods}),
                ("D", "watch-fill", {**pods}),
                ("product", "watch-fill", {**pods, "transform": "drop", "label": "product+drop"}),
                ("orjson", "watch-fill", {**pods}),
                ("orjson-nogc", "watch-fill", {**pods}),
            ],
            reps,
        )
        interleaved(
            res,
            rp,
            "steady",
            [
                ("product", "watch-steady", {**pods}),
                ("D", "watch-steady", {**pods}),
                ("product", "watch-steady", {**pods, "transform": "drop", "label": "product+drop"}),
                ("orjson", "watch-steady", {**pods}),
            ],
            reps,
        )
        json_pods = child_stats(rp)["json_bytes"]

    print(f"\n== subsample for the slow clients: {n_small:,} Pods, {n_small:,} watch events")
    with Replay(Dataset("pods", n_small, n_small)) as rp:
        small = dict(n=n_small, w=n_small, kind="pods")
        interleaved(
            res,
            rp,
            "list",
            [
                ("product", "sync-list", {**small, "label": "product@small"}),
                ("D", "sync-list", {**small, "label": "D@small"}),
                ("k8s-asyncio", "sync-list", {**small}),
                ("k8s-informer", "sync-list", {**small}),
            ],
            1,
        )
        interleaved(
            res,
            rp,
            "steady",
            [
                ("product", "watch-steady", {**small, "label": "product@small"}),
                ("k8s-asyncio", "watch-steady", {**small}),
            ],
            1,
        )

    print(f"\n== {n_cms:,} ConfigMaps (~474 B)")
    with Replay(Dataset("configmaps", n_cms, 1)) as rp:
        cms = dict(n=n_cms, w=1, kind="configmaps")
        interleaved(
            res,
            rp,
            "list",
            [
                ("product", "sync-list", {**cms, "label": "product@cm"}),
                ("D", "sync-list", {**cms, "label": "D@cm"}),
                ("product", "relist-peak", {**cms, "label": "product@cm"}),
            ],
            1,
        )
        json_cms = child_stats(rp)["json_bytes"]

    print(f"\n== {informers:,} informers, one per namespace, on one ApiClient")
    with Replay(Dataset("configmaps", 0, 0, per_namespace=5, namespaces=informers)) as rp:
        interleaved(
            res,
            rp,
            "many",
            [
                ("product", "many", {"n": 0, "w": 0, "kind": "configmaps", "informers": informers}),
            ],
            1,
        )

    n_waiters = 2_000 if q else 10_000
    print(
        f"\n== {n_waiters:,} freshness waiters (embedded server, one informer; see its docstring)"
    )
    waits = freshness_waiters(n_waiters, reps)

    report(res, json_pods, json_cms, n_pods, w_pods, n_cms, n_small, informers, args, started)
    floor = statistics.median(waits["no waiters"])
    print(f"\n## {n_waiters:,} freshness waiters (`benchmarks/freshness_waiters.py`)\n")
    print("| case | seconds | vs the watch alone |\n|---|---|---|")
    for case, t in waits.items():
        med = statistics.median(t)
        print(f"| {case} | {med:.3g} ({min(t):.3g}-{max(t):.3g}) | {med / floor:.2f}x |")
    if args.json:
        args.json.write_text(
            json.dumps({f"{p}|{c}": v for (p, c), v in res.runs.items()}, indent=1)
        )


def compression_rows(args: Any) -> None:
    """Issue 22's targets: the realistic Pods (``_objects.make_real_items``) and the ConfigMaps,
    held plain and compressed (``Compression()``), interleaved with D on the same data.

    Full sizes: 100,000 realistic Pods (50,000 watch events), 1,000,000 ConfigMaps, every
    group ``--reps`` repetitions (``--cm-reps`` for the ConfigMaps: their processes are the
    largest). The full group took 784 s at load 8-13 on the 2-core machine (2026-11-25, with 3
    repetitions everywhere); ``--quick`` (20,000 Pods, 100,000 ConfigMaps) about a tenth.
    Every product process of the Pod list group also reads 2,000 objects one at a time
    (``_clients.read_one``) and then every object once (``rss_after_read``); the compressed ones
    record how much of the cache was still plain when the handler had seen every object, then
    wait for the background packing (``compact``) and time it. RSS is measured after that, when
    the cache is complete, after ``gc.collect()`` as for every peer (the RSS before it is
    recorded too); the harness trims nothing (the product calls ``malloc_trim`` itself after
    packing). The peak is ``VmHWM`` over the whole run.
    """
    q = args.quick
    n_pods = 20_000 if q else 100_000
    w_pods = 10_000 if q else 50_000
    n_cms = 100_000 if q else 1_000_000
    reps = args.reps
    cm_reps = args.cm_reps if args.cm_reps is not None else reps
    res = Results()
    started = time.time()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    print(f"\n== {n_pods:,} realistic Pods, {w_pods:,} watch events, pages of 500")
    t_group = time.time()
    with Replay(Dataset("realpods", n_pods, w_pods)) as rp:
        print(f"  dataset built in {time.time() - t_group:.0f} s", flush=True)
        pods = dict(n=n_pods, w=w_pods, kind="realpods")
        reads = {"read_one": True, "read_all": True}
        zstd = {**pods, **reads, "compression": True, "label": "product+zstd"}
        interleaved(
            res,
            rp,
            "list",
            [
                ("D", "sync-list", {**pods}),
                ("product", "sync-list", {**pods, **reads}),
                ("product", "sync-list", {**zstd}),
            ],
            reps,
        )
        interleaved(
            res,
            rp,
            "fill",
            [
                ("D", "watch-fill", {**pods}),
                ("product", "watch-fill", {**pods}),
                ("product", "watch-fill", {**pods, "compression": True, "label": "product+zstd"}),
            ],
            reps,
        )
        stats = child_stats(rp)
        json_pods, fill_json = stats["json_bytes"], stats["fill_json_bytes"]
    took_pods = time.time() - t_group
    print(f"\n== {n_cms:,} ConfigMaps (~474 B)")
    t_group = time.time()
    with Replay(Dataset("configmaps", n_cms, 1)) as rp:
        cms = dict(n=n_cms, w=1, kind="configmaps")
        interleaved(
            res,
            rp,
            "list",
            [
                ("D", "sync-list", {**cms, "label": "D@cm"}),
                ("product", "sync-list", {**cms, "label": "product@cm"}),
                ("product", "sync-list", {**cms, "compression": True, "label": "product+zstd@cm"}),
            ],
            cm_reps,
        )
        json_cms = child_stats(rp)["json_bytes"]
    took_cms = time.time() - t_group
    compression_report(res, json_pods, fill_json, json_cms, n_pods, w_pods, n_cms)
    print(
        f"\nJSON: {json_pods / 2**20:.0f} MB of realistic Pods ({json_pods / n_pods:,.0f} B each),"
        f" {fill_json / 2**20:.0f} MB of watch-fill Pods, {json_cms / 2**20:.0f} MB of ConfigMaps"
        f" ({json_cms / n_cms:.0f} B each); Pods {reps} repetitions, ConfigMaps {cm_reps}"
    )
    print(
        "versions: "
        + ", ".join(f"{p} {version(p)}" for p in ("msgspec", "aiohttp", "zstandard"))
        + f"; commit {git_commit()}"
    )
    print(
        f"took {time.time() - started:.0f} s (Pods {took_pods:.0f} s, ConfigMaps {took_cms:.0f} s),"
        f" load after: {os.getloadavg()}"
    )
    if args.json:
        args.json.write_text(
            json.dumps({f"{p}|{c}": v for (p, c), v in res.runs.items()}, indent=1)
        )


def git_commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "informer"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    return proc.stdout.strip() + (" (informer/ modified)" if dirty else "")


def compression_report(
    res: Results,
    json_pods: int,
    fill_json: int,
    json_cms: int,
    n_pods: int,
    w_pods: int,
    n_cms: int,
) -> None:
    m = res.med
    have = res.values

    def ratio(label: str, case: str, field: str, of: float) -> str:
        vals = [v / of for v in have(label, case, field)]
        if not vals:
            return "-"
        spread = f" ({min(vals):.3f}-{max(vals):.3f})" if len(vals) > 1 else ""
        return f"{statistics.median(vals):.3f}x{spread}"

    def vs_d(label: str, case: str, field: str, invert: bool = False) -> str:
        """Ratio of medians to D's, and the spread of the per-repetition ratios (runs of one
        repetition are neighbours in time)."""
        mine, d = have(label, case, field), have("D", case, field)
        if not mine or not d:
            return "-"
        r = statistics.median(mine) / statistics.median(d)
        per = [a / b for a, b in zip(mine, d, strict=False)]
        if invert:
            r, per = 1 / r, [1 / x for x in per]
        spread = f" (per repetition {min(per):.2f}-{max(per):.2f})" if len(per) > 1 else ""
        return f"{r:.2f}x{spread}"

    print("\n## Issue 22 targets (medians, spread min-max; RSS over the process's base / JSON)\n")
    print("| measure | D | plain | compressed | target |\n|---|---|---|---|---|")
    print(
        f"| {n_pods:,} realistic Pods held (RSS / JSON) |"
        f" {ratio('D', 'sync-list', 'rss_delta', json_pods)} |"
        f" {ratio('product', 'sync-list', 'rss_delta', json_pods)} |"
        f" {ratio('product+zstd', 'sync-list', 'rss_delta', json_pods)} | <= 0.20x |"
    )
    print(
        "| the same after reading every object once | - |"
        f" {ratio('product', 'sync-list', 'rss_after_read', json_pods)} |"
        f" {ratio('product+zstd', 'sync-list', 'rss_after_read', json_pods)} | <= 0.25x |"
    )
    print(
        f"| {n_cms:,} ConfigMaps held (RSS / JSON) |"
        f" {ratio('D@cm', 'sync-list', 'rss_delta', json_cms)} |"
        f" {ratio('product@cm', 'sync-list', 'rss_delta', json_cms)} |"
        f" {ratio('product+zstd@cm', 'sync-list', 'rss_delta', json_cms)} |"
        " <= 1.5x plain / <= 1.0x compressed |"
    )
    if have("product+zstd", "sync-list", "seconds"):
        print(
            f"| initial sync {n_pods:,} Pods until the handler saw every object, time vs D"
            f" ({m('D', 'sync-list', 'seconds'):.2f} s) | 1 |"
            f" {vs_d('product', 'sync-list', 'seconds')} |"
            f" {vs_d('product+zstd', 'sync-list', 'seconds')} | <= 1.5x |"
        )
        print(
            "|   the same until every object is held compressed (background packing done) | - |"
            f" - | {ratio_d('product+zstd', 'sync-list', 'seconds_until_compact', res)} | - |"
        )
    if have("product+zstd", "watch-fill", "events_per_s"):
        print(
            f"| watch fill {w_pods:,} new Pods, events/s vs D"
            f" ({m('D', 'watch-fill', 'events_per_s'):,.0f}/s) | 1 |"
            f" {vs_d('product', 'watch-fill', 'events_per_s')} |"
            f" {vs_d('product+zstd', 'watch-fill', 'events_per_s')} | >= 0.8x |"
        )
        print(
            "|   the same until every object is held compressed, vs D's events/s | - | - |"
            f" {ratio_d('product+zstd', 'watch-fill', 'seconds_until_compact', res)} | - |"
        )
    for name, what in (
        ("read_one", "memo full, as in a running controller: decode + evicting the oldest"),
        ("read_one_empty_memo", "memo emptied before each read: the decode alone"),
    ):
        if not have("product+zstd", "sync-list", f"{name}_p50_us"):
            continue

        def us(label: str, name: str = name) -> str:
            p50 = m(label, "sync-list", f"{name}_p50_us")
            p99 = m(label, "sync-list", f"{name}_p99_us")
            gc2 = max(have(label, "sync-list", f"{name}_gc2") or [0])
            text = f"{p50:.1f} / {p99:.0f} us"
            if have(label, "sync-list", f"{name}_cpu_p50_us"):
                c50 = m(label, "sync-list", f"{name}_cpu_p50_us")
                c99 = m(label, "sync-list", f"{name}_cpu_p99_us")
                text += f"; CPU time {c50:.1f} / {c99:.0f} us"
            return f"{text} ({gc2:.0f} full gc)"

        print(
            f'| reading one Pod (`obj["spec"]`, not in the memo; {what}), p50 / p99 | - |'
            f" {us('product')} | {us('product+zstd')} | p50 <= 20 us |"
        )

    print("\nBackground work when the handler had seen every object (compressed runs):\n")
    for label, case in (
        ("product+zstd", "sync-list"),
        ("product+zstd", "watch-fill"),
        ("product+zstd@cm", "sync-list"),
    ):
        if not have(label, case, "plain_at_done"):
            continue
        n = m(label, case, "cache_objects")
        print(
            f"- {label} {case}: {m(label, case, 'plain_at_done'):,.0f} of {n:,.0f} objects still"
            f" plain (median); packing them took {res.fmt(label, case, 'compact_seconds')} s more;"
            f" handler done after {res.fmt(label, case, 'seconds')} s, every object packed after"
            f" {res.fmt(label, case, 'seconds_until_compact')} s; user CPU (all threads)"
            f" {res.fmt(label, case, 'cpu_user')} s to the handler's end,"
            f" {res.fmt(label, case, 'cpu_user_until_compact')} s to the end of the packing"
        )

    print("\n## Store.size() per object (computed from the contents, medians)\n")
    print(
        "| run | objects | JSON B | held B | / JSON | payload B (JSON or compressed) |"
        " dictionaries B | fixed cost B | RSS B | peak RSS B |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, case in (
        ("product", "sync-list"),
        ("product+zstd", "sync-list"),
        ("product", "watch-fill"),
        ("product+zstd", "watch-fill"),
        ("product@cm", "sync-list"),
        ("product+zstd@cm", "sync-list"),
    ):
        if not have(label, case, "cache_bytes"):
            continue
        n = m(label, case, "cache_objects")
        held = m(label, case, "cache_bytes")
        js = m(label, case, "cache_json_bytes")
        has_pay = have(label, case, "cache_payload_bytes")
        pay = m(label, case, "cache_payload_bytes") if has_pay else None
        dic = (
            m(label, case, "cache_dictionary_bytes")
            if have(label, case, "cache_dictionary_bytes")
            else None
        )
        fixed = held - pay - (dic or 0) if pay is not None else None

        def per(v: float | None, n: float = n) -> str:
            return "?" if v is None else f"{v / n:,.0f}"

        print(
            f"| {label} {case} | {n:,.0f} | {per(js)} | {per(held)} | {held / js:.3f}x |"
            f" {per(pay)} | {per(dic)} | {per(fixed)} | {per(m(label, case, 'rss_delta'))} |"
            f" {per(m(label, case, 'peak_delta'))} |"
        )

    print("\n## Every run (median, spread min-max over repetitions)\n")
    print(
        "| peer | case | seconds | events/s | user CPU s | packing after s | RSS / JSON |"
        " (before gc.collect()) | peak RSS / JSON | RSS after reading all / JSON |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (peer, case), runs in res.runs.items():
        json_size = json_cms if peer.endswith("@cm") else json_pods
        if case == "watch-fill":
            json_size = fill_json

        def mem(field: str, runs: list[dict[str, Any]] = runs, js: float = json_size) -> str:
            vals = [r[field] for r in runs if field in r]
            return f"{statistics.median(vals) / js:.3f}x" if vals else "-"

        print(
            f"| {peer} | {case} | {res.fmt(peer, case, 'seconds')} | "
            f"{res.fmt(peer, case, 'events_per_s')} | {res.fmt(peer, case, 'cpu_user')} | "
            f"{res.fmt(peer, case, 'compact_seconds')} | {mem('rss_delta')} |"
            f" {mem('rss_before_gc')} | {mem('peak_delta')} | {mem('rss_after_read')} |"
        )


def ratio_d(label: str, case: str, field: str, res: Results) -> str:
    """``field`` (a time to the end of the background packing) against D's ``seconds``: for a
    sync a time ratio, for a watch fill the events/s ratio."""
    mine, d = res.values(label, case, field), res.values("D", case, "seconds")
    if not mine or not d:
        return "-"
    r = statistics.median(mine) / statistics.median(d)
    if case == "watch-fill":
        return f"{1 / r:.2f}x"
    return f"{r:.2f}x"


def freshness_waiters(n: int, reps: int) -> dict[str, list[float]]:
    """``benchmarks/freshness_waiters.py`` in a fresh process: seconds per case and repetition."""
    args = [str(HERE / "freshness_waiters.py"), "--waiters", str(n), "--reps", str(reps), "--json"]
    times: dict[str, list[float]] = run_json(args, "freshness_waiters")
    for case, t in times.items():
        print(f"  {case:>16} seconds={', '.join(f'{v:.3f}' for v in t)}", flush=True)
    return times


def child_stats(rp: Replay) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(rp.base() + "/control/stats") as f:
        stats: dict[str, Any] = json.loads(f.read())
    return stats


def cpu_ratio(res: Results, label: str, case: str) -> str:
    """User CPU seconds of ``label`` over D's in ``case`` (medians), with both figures."""
    mine, d = res.values(label, case, "cpu_user"), res.values("D", case, "cpu_user")
    if not mine or not d:
        return "not recorded"
    a, b = statistics.median(mine), statistics.median(d)
    return f"{a / b:.2f}x D ({a:.3g} vs {b:.3g} s)"


def report(
    res: Results,
    json_pods: int,
    json_cms: int,
    n_pods: int,
    w_pods: int,
    n_cms: int,
    n_small: int,
    informers: int,
    args: Any,
    started: float,
) -> None:
    m = res.med
    rows: list[tuple[str, str, str, bool | None]] = []

    def row(what: str, value: float, goal: str, ok: bool | None, detail: str = "") -> None:
        rows.append((what, f"{value:.2f}x{detail}", goal, ok))

    for case, what in (("watch-fill", "watch fill"), ("watch-steady", "watch steady")):
        r = m("product", case, "events_per_s") / m("D", case, "events_per_s")
        row(
            f"{what}, one no-op handler: events/s vs D",
            r,
            ">= 1.0x",
            r >= 1.0,
            f" ({m('product', case, 'events_per_s'):,.0f}"
            f" vs {m('D', case, 'events_per_s'):,.0f}/s)",
        )
    r = m("product", "sync-list", "seconds") / m("D", "sync-list", "seconds")
    row(
        f"initial sync {n_pods:,} Pods, pages of 500: time vs D",
        r,
        "<= 1.1x",
        r <= 1.1,
        f" ({m('product', 'sync-list', 'seconds'):.2f} vs {m('D', 'sync-list', 'seconds'):.2f} s)",
    )
    r = m("product", "sync-stream", "seconds") / m("D", "sync-stream", "seconds")
    row(
        "streaming-list sync: time vs D",
        r,
        "<= 1.2x",
        r <= 1.2,
        f" ({m('product', 'sync-stream', 'seconds'):.2f}"
        f" vs {m('D', 'sync-stream', 'seconds'):.2f} s)",
    )
    r = m("product+drop", "sync-list", "seconds") / m("D", "sync-list", "seconds")
    row("sync with DROP_MANAGED_FIELDS: time vs D", r, "<= 1.2x", r <= 1.2)
    mem_drop = m("product+drop", "sync-list", "rss_delta") / json_pods
    mem_plain = m("product", "sync-list", "rss_delta") / json_pods
    row(
        "  memory with it / the JSON",
        mem_drop,
        f"< no-transform ({mem_plain:.2f}x)",
        mem_drop < mem_plain,
    )
    r = m("product+dict", "sync-list", "seconds") / m("D", "sync-list", "seconds")
    row("  (a dict transform instead: time vs D)", r, "documented", None)
    for case, what in (("watch-fill", "fill"), ("watch-steady", "steady")):
        r = m("product+drop", case, "events_per_s") / m("D", case, "events_per_s")
        row(f"  (watch {what} with it: events/s vs D)", r, "documented", None)
    r = m("product", "read-all", "rss_after_read") / json_pods
    row("memory per Pod after reading each once / JSON", r, "<= 1.3x", r <= 1.3)
    r = m("product@cm", "sync-list", "rss_delta") / json_cms
    row(f"{n_cms:,} ConfigMaps: memory held / JSON", r, "<= 2.0x", r <= 2.0)
    r = m("product@cm", "relist-peak", "peak_over_steady")
    row("  peak during an unchanged relist / steady RSS", r, "<= 1.15x", r <= 1.15)
    opened = m("product", "many", "open_watches")
    rows.append(
        (
            f"{informers:,} informers on one ApiClient: watches open",
            f"{opened:.0f}",
            f"all {informers:,}",
            opened == informers,
        )
    )
    rows.append(
        (
            "  memory per idle informer",
            f"{m('product', 'many', 'per_informer_kb'):.0f} KB",
            "measured",
            None,
        )
    )
    rows.append(("  sync of all", f"{m('product', 'many', 'seconds'):.2f} s", "measured", None))

    print("\n## Goals (medians; ratios of medians)\n")
    if args.quick:
        print("--quick: smaller sets, whose memory ratios carry fixed costs; the full run is the")
        print("reference (`python benchmarks/run.py --help`).\n")
    print("| what | measured | goal | met |\n|---|---|---|---|")
    for what, val, goal, ok in rows:
        print(f"| {what} | {val} | {goal} | {'-' if ok is None else ('yes' if ok else '**no**')} |")
    print(
        "\nSupporting, not goals: user CPU seconds of the same interval, product / D (lower is"
        " better; user time is stable between identical runs, system time varies 0.4-2 s with"
        " memory faults):\n"
    )
    for label, case, what in (
        ("product", "sync-list", f"initial sync of {n_pods:,} Pods, pages of 500"),
        ("product", "sync-stream", "streaming-list sync"),
        ("product+drop", "sync-list", "sync with DROP_MANAGED_FIELDS"),
        ("product", "watch-fill", "watch fill"),
        ("product", "watch-steady", "watch steady"),
    ):
        print(f"- {what}: {cpu_ratio(res, label, case)}")

    print("\n## Every peer (median, spread min-max over repetitions)\n")
    print(
        "| peer | case | seconds | events/s | user CPU s | RSS held / JSON |\n"
        "|---|---|---|---|---|---|"
    )
    for (peer, case), runs in res.runs.items():
        if case == "many":
            continue
        json_size = json_cms if peer.endswith("@cm") else json_pods
        if peer.endswith("@small") or peer.startswith("k8s"):
            json_size = json_pods * n_small / n_pods
        elif case == "watch-fill":  # the cache holds the w new objects of the watch
            json_size = json_pods * w_pods / n_pods
        field = "rss_after_read" if case == "read-all" else "rss_delta"
        mem = statistics.median(r[field] for r in runs) / json_size
        print(
            f"| {peer} | {case} | {res.fmt(peer, case, 'seconds')} | "
            f"{res.fmt(peer, case, 'events_per_s')} | {res.fmt(peer, case, 'cpu_user')} | "
            f"{mem:.2f}x |"
        )
    print(
        f"\nsubsample for kubernetes_asyncio / SharedInformer: {n_small:,} Pods; "
        f"JSON: {json_pods / 2**20:.0f} MB of Pods, {json_cms / 2**20:.0f} MB of ConfigMaps"
    )
    print(
        "versions: "
        + ", ".join(
            f"{p} {version(p)}"
            for p in ("msgspec", "aiohttp", "orjson", "kubernetes_asyncio", "kubernetes")
        )
    )
    print(f"took {time.time() - started:.0f} s, load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
