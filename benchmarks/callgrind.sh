#!/bin/bash
# Instructions of one client run under callgrind (stable under load, unlike wall-clock).
# usage: benchmarks/callgrind.sh PEER CASE SCENARIO N W [TRANSFORM]
#   e.g. benchmarks/callgrind.sh product watch-fill fill 10 2500   (then with 500: subtract)
# Prints the program's total instructions (Ir); per object = (Ir(2500) - Ir(500)) / 2000.
# Environment: KIND=pods|realpods|configmaps (the dataset, default pods); COMPRESSION=1 (the
# product with Compression()); THREADS=1 (callgrind --separate-threads=yes: also prints each
# thread's Ir, the first the event loop's: what a compressed cache leaves on the loop, the
# rest its compression thread's and the others').
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
python - "$@" <<'PY'
import glob, json, os, subprocess, sys, tempfile
root = os.getcwd()
sys.path[:0] = [os.path.join(root, "benchmarks"), root]
from _replay import Dataset, Replay
peer, case, sc, n, w = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
extra = {"transform": sys.argv[6]} if len(sys.argv) > 6 else {}
kind = os.environ.get("KIND", "pods")
if os.environ.get("COMPRESSION") == "1":
    extra["compression"] = True
threads = os.environ.get("THREADS") == "1"
def total(path):
    text = subprocess.run(["callgrind_annotate", path], capture_output=True, text=True).stdout
    return next(int(l.split()[0].replace(",", "")) for l in text.splitlines() if "PROGRAM TOTALS" in l)
with Replay(Dataset(kind, n, w)) as rp, tempfile.TemporaryDirectory() as tmp:
    spec = {"peer": peer, "case": case, "n": n, "w": w, "kind": kind,
            "base": rp.base() + f"/{sc}/cg", **extra}
    out = os.path.join(tmp, "callgrind.out")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.path.join(root, "benchmarks")])}
    code = "import sys,json,_clients; print(json.dumps(_clients.run_child(json.loads(sys.argv[1]))))"
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                    *(["--separate-threads=yes"] if threads else []),
                    sys.executable, "-c", code, json.dumps(spec)], env=env, check=True,
                   capture_output=True)
    files = sorted(glob.glob(out + "-*")) if threads else [out]
    per = [total(f) for f in files]
    print(peer, case, kind, n, w, extra, "Ir", sum(per), *(["threads", per] if threads else []))
PY
