#!/bin/bash
# The CPU cost of the permutation counts sized to their families (src/util/resolution.ts) on the
# SmolLM2 demo's run (builtin:social, 150 items), old defaults against new, alternating:
#   lobes demo --model SmolLM2-135M-Instruct.Q4_1.gguf --out /tmp/smol   # makes the run
#   bench/verdict-sizing.sh /tmp/smol/run [SITTINGS]
# old: cluster --probe-permutations 50 (the earlier default, min(R, 50)), wanda --permutations 199;
# new: the defaults (the probe 99 for the 5 classifiers, wanda 399 for 5 groups' 20 differences).
set -euo pipefail
RUN=${1:?run directory}
N=${2:-2}
B="node $(dirname "$0")/../dist/cli/bin.js"
for i in $(seq "$N"); do
  for mode in old new; do
    if [ "$mode" = old ]; then c="--probe-permutations 50"; w="--permutations 199"; else c=""; w=""; fi
    /usr/bin/time -f "cluster $mode user %U sys %S wall %e" $B cluster "$RUN" --out "/tmp/verdict-sizing-$mode" --quiet $c > /dev/null
    /usr/bin/time -f "wanda $mode user %U sys %S wall %e" $B wanda "$RUN" --quiet $w > /dev/null
  done
done
