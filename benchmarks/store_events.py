"""Instructions per ``apply_event`` of a ``Store`` and of a ``StorePartition``, under callgrind.

    python benchmarks/store_events.py [--writer store|partition|both]

The store's event hot path alone (no server, no HTTP, no decoding): each key's life is ADDED,
seven MODIFIED, a replay of the last version (a duplicate, dropped) and DELETED; 30,000 events
built before the count starts. Each writer runs under ``valgrind --tool=callgrind`` (address
space randomisation off, ``PYTHONHASHSEED=0``: the count repeats to the instruction) applying
30,000 and then 5,000 of the events; per event = the difference / 25,000. A change to
``informer/store`` that should not cost the event path anything is measured with this before
and after (``benchmarks/callgrind.sh`` measures the whole client, whose counts vary by about
1,000 instructions per event from run to run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

EVENTS = 30_000
FEW = 5_000


def child(writer: str, n: int) -> None:
    import msgspec

    from informer.objects import KubeObject
    from informer.shards import HASH_SPACE, ShardRange, ShardSet
    from informer.store import Store

    def mk(name: str, rv: int) -> KubeObject:
        meta = {"name": name, "namespace": "ns", "uid": "u" + name, "resourceVersion": str(rv)}
        return KubeObject.from_raw(msgspec.json.encode({"kind": "Pod", "metadata": meta}))

    events: list[tuple[str, KubeObject]] = []
    rv = 100
    for i in range(EVENTS):
        key = f"k{(i // 10) % 50}-{i // 500}"
        rv += 1
        step = i % 10
        if step == 0:
            events.append(("ADDED", mk(key, rv)))
        elif step < 8:
            events.append(("MODIFIED", mk(key, rv)))
        elif step == 8:
            rv -= 1
            events.append(("MODIFIED", events[-1][1]))  # a duplicate
        else:
            events.append(("DELETED", mk(key, rv)))
    store = Store()
    if writer == "partition":
        part = store.partition(ShardSet([ShardRange(0, HASH_SPACE)]))
        part.replace([], "100")
        apply = part.apply_event
    else:
        store.replace([], "100")
        apply = store.apply_event
    for type, obj in events[:n]:
        apply(type, obj)


def instructions(writer: str, n: int) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": root}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["setarch", os.uname().machine, "-R", "valgrind", "--tool=callgrind"]
        cmd += [f"--callgrind-out-file={out}", sys.executable, __file__, "--child", writer, str(n)]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        text = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    line = next(line for line in text.splitlines() if "PROGRAM TOTALS" in line)
    return int(line.split()[0].replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writer", choices=["store", "partition", "both"], default="both")
    parser.add_argument("--child", nargs=2, metavar=("WRITER", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    for writer in ["store", "partition"] if args.writer == "both" else [args.writer]:
        many, few = instructions(writer, EVENTS), instructions(writer, FEW)
        print(f"{writer}: {(many - few) / (EVENTS - FEW):,.1f} instructions per event")


if __name__ == "__main__":
    main()
