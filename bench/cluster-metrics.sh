#!/usr/bin/env bash
# The cost of `lobes cluster`'s metrics stage (everything after t-SNE: distances, silhouette,
# kNN and probe with their nulls, bootstrap CIs) at 2,000 × 4,096 and 20,000 × 50, for this
# checkout and, given BEFORE=DIR (another checkout of lobes with node_modules), for that one,
# alternating, on the data of bench/tsne-vs-sklearn.py (cases 2k and 20k; labels: its clusters).
#
#   BEFORE=/tmp/lobes-before bench/cluster-metrics.sh [OUT_DIR]
#
# Prints per run: wall and CPU seconds of the process, the t-SNE stage, and the metrics stage
# (the sum of the metrics-* stages of metrics.json `timings`; `cpuTimings` where recorded).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/out/cluster-metrics}
mkdir -p "$OUT"
PY=${PYTHON:-/work/venv/bin/python}
if [ ! -f "$OUT/2k_X.npy" ]; then
  "$PY" - "$OUT" <<'PYEOF'
import sys, importlib.util, numpy as np
spec = importlib.util.spec_from_file_location('b', 'bench/tsne-vs-sklearn.py'); b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)
out = sys.argv[1]
for name, make in (('2k', b.make_2k), ('20k', b.make_20k)):
    X, lab = make(np.random.default_rng(0))
    np.save(f'{out}/{name}_X.npy', X)
    open(f'{out}/{name}_labels.txt', 'w').write('\n'.join(f'c{l}' for l in lab) + '\n')
PYEOF
fi
run() { # run WHICH DIR CASE
  local which=$1 dir=$2 c=$3 res=$OUT/$1-$3
  local load0; load0=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f '%e %U %S' -o "$OUT/time.txt" node --import tsx "$dir/src/cli/bin.ts" cluster "$OUT/${c}_X.npy" --labels "$OUT/${c}_labels.txt" --out "$res" --quiet > /dev/null
  read -r wall user sys < "$OUT/time.txt"
  python3 - "$which" "$c" "$res/metrics.json" "$wall" "$user" "$sys" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" <<'PYEOF'
import json, sys
which, case, f, wall, user, sys_, l0, l1 = sys.argv[1:]
m = json.load(open(f))
t = m['timings']; c = m.get('cpuTimings', {})
met = sum(v for k, v in t.items() if k.startswith('metrics'))
metc = sum(v for k, v in c.items() if k.startswith('metrics')) if c else None
tc = f" (cpu {c['tsne']:.1f})" if c else ''
mc = f" (cpu {metc:.1f})" if metc is not None else ''
print(f"{case:>4} {which:<7} wall {float(wall):7.1f} s  cpu {float(user) + float(sys_):7.1f} s  t-SNE {t['tsne']:6.1f} s{tc}  metrics {met:6.1f} s{mc}  load {l0} -> {l1}")
print('      ', {k: v for k, v in t.items() if k.startswith('metrics')})
PYEOF
}
for c in 2k 20k; do
  [ -n "${BEFORE:-}" ] && run before "$BEFORE" "$c"
  run after . "$c"
done
