#!/usr/bin/env bash
# The random-weights control at three seeds (issue 41, Build 9): English question + response
# (1,985 items) through SmolLM2's graph with random weights of seeds 0, 1 and 2, final.hidden and
# final.mean clustered with the findings' settings; bench/control-seeds.py tabulates them.
#
#   bench/control-seeds.sh [OUT_DIR]     # default runs/ctl; the fp32 model folder from bench/swap-smollm2.sh
#   python3 bench/control-seeds.py OUT_DIR > bench/control-seeds.out.md
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/ctl}
SHARED=${SHARED:-../shared}
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
MODEL=${MODEL:-runs/swap/smollm2-fp32}
EN="socialeval:$SHARED/socialeval/worldtree_data?lang=en"
mkdir -p "$OUT"
for s in 0 1 2; do
  run=$OUT/en-qr-mean-control-s$s
  $LOBES extract --model "$MODEL" --data "$EN" --out "$run" --capture final,mean --dtype fp16 --control random --control-seed $s --cache "$OUT/cache" --quiet
  for pt in final.hidden final.mean; do
    [ -e "$run/cluster-$pt/metrics.json" ] ||
      $LOBES cluster "$run" --by aspect --point $pt --metric-points 2200 --seed 0 --out "$run/cluster-$pt" --quiet > "$run/cluster-$pt.txt" 2>&1
  done
done
