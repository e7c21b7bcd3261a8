#!/bin/bash
# The whole `lobes wanda` command before and after a change, side by side on the same files
# (bench/wanda-throughput.ts --e2e, Llama-3.1-8B MLP shapes), from the page cache and from
# disk (--cold), alternating the two versions; then the outputs of the two are compared
# byte for byte (settings.json differs only in its time stamp and version).
#
#   bench/wanda-e2e-before-after.sh BEFORE_ROOT AFTER_ROOT DIR [SAMPLES] [LAYERS] [PERMUTATIONS]
#
# Each ROOT is a checkout with its bundle built (bench/out/wb: bench.mjs and the colsum, hash
# and sums workers; see bench/RESULTS.md). DIR holds the generated checkpoint and run.
set -euo pipefail
before=$1 after=$2 dir=$3 n=${4:-200} layers=${5:-4} perms=${6:-100}
run() { # ROOT LABEL [--cold]
  local root=$1 label=$2; shift 2
  echo "== $label $* (load $(cut -d' ' -f1-3 /proc/loadavg))"
  node "$root/bench/out/wb/bench.mjs" --e2e "$n" --layers "$layers" --permutations "$perms" --keep "$dir" "$@" | grep '^|'
}
run "$before" before
mkdir -p "$dir/out-before" && cp "$dir/run-$n/wanda/"* "$dir/out-before/"
run "$after" after
for f in metrics.json regions.json pooled.safetensors metrics.csv channels.csv; do
  cmp "$dir/run-$n/wanda/$f" "$dir/out-before/$f" && echo "$f: identical"
done
run "$before" before --cold
run "$after" after --cold
