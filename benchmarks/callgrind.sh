#!/bin/bash
# Instructions of one client run under callgrind (stable under load, unlike wall-clock).
# usage: benchmarks/callgrind.sh PEER CASE SCENARIO N W [TRANSFORM]
#   e.g. benchmarks/callgrind.sh product watch-fill fill 10 2500   (then with 500: subtract)
# Prints the program's total instructions (Ir); per object = (Ir(2500) - Ir(500)) / 2000.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
python - "$@" <<'PY'
import json, os, subprocess, sys, tempfile
root = os.getcwd()
sys.path[:0] = [os.path.join(root, "benchmarks"), root]
from _replay import Dataset, Replay
peer, case, sc, n, w = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
extra = {"transform": sys.argv[6]} if len(sys.argv) > 6 else {}
with Replay(Dataset("pods", n, w)) as rp, tempfile.TemporaryDirectory() as tmp:
    spec = {"peer": peer, "case": case, "n": n, "w": w, "kind": "pods",
            "base": rp.base() + f"/{sc}/cg", **extra}
    out = os.path.join(tmp, "callgrind.out")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.path.join(root, "benchmarks")])}
    code = "import sys,json,_clients; print(json.dumps(_clients.run_child(json.loads(sys.argv[1]))))"
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                    sys.executable, "-c", code, json.dumps(spec)], env=env, check=True,
                   capture_output=True)
    totals = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    ir = next(int(l.split()[0].replace(",", "")) for l in totals.splitlines() if "PROGRAM TOTALS" in l)
    print(peer, case, n, w, extra, "Ir", ir)
PY
