#!/bin/bash
# Before/after pairs of `lobes cluster` in one sitting, alternating (even pairs: before first), with
# the 1-minute load before each run, the wall and user+sys seconds of the process, and the stage
# times of metrics.json (wall; and the process CPU of all stages, cpuTimings):
#
#   bash bench/cluster-ab.sh BEFORE_CHECKOUT AFTER_CHECKOUT X.npy LABELS.txt [PAIRS] [OUT] [-- cluster args]
#
# Each checkout needs dist/ built (npm run build). Default cluster args: the bench's
# (--threads 2 --bootstrap 0 --permutations 0 --no-baselines, as bench/cluster-vs-sklearn.py).
set -euo pipefail
before=$1 after=$2 X=$3 L=$4 P=${5:-3} OUT=${6:-bench/out/cluster-ab}
shift $(( $# < 6 ? $# : 6 ))
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--threads 2 --bootstrap 0 --permutations 0 --no-baselines)
mkdir -p "$OUT"
for p in $(seq 0 $((P - 1))); do
  if [ $((p % 2)) -eq 0 ]; then order="before after"; else order="after before"; fi
  for w in $order; do
    D=$before; [ "$w" = after ] && D=$after
    l=$(cut -d' ' -f1 /proc/loadavg)
    o="$OUT/$w-$p"
    rm -rf "$o"
    /usr/bin/time -f "%e %U %S" -o "$OUT/time.txt" node "$D/dist/cli/bin.js" cluster "$X" --labels "$L" --quiet --out "$o" "${args[@]}" >/dev/null
    read -r e u s < "$OUT/time.txt"
    st=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(', '.join(f'{k} {v:.1f}' for k,v in m['timings'].items()), '| CPU of the stages', round(sum(m['cpuTimings'].values()),1))" "$o/metrics.json")
    echo "pair $p $w: wall $e s, user+sys $(python3 -c "print(round($u+$s,1))") s, load before $l; stages: $st"
  done
done
