#!/usr/bin/env bash
# The shuffled-label null and the fit split on SmolLM2-135M-Instruct (docs/ablate.md,
# bench/RESULTS.md "ablate --shuffled --fit-split"): a run with the MLP inputs of a --limit
# sample of English SocialEval items, wanda regions by aspect (--block auto: 32×32), then
# `lobes ablate --region all` over the same items with the regions fitted on one half of them,
# scored on the other half, against K random regions and S shuffled-label regions.
#
#   bench/ablate-shuffled-smollm2.sh [OUT_DIR]          # default runs/ablate-shuffled
#   ITEMS=60 K=3 S=5 bench/ablate-shuffled-smollm2.sh
#
# Wall time and peak RSS: OUT_DIR/abl.err (GNU time -v).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/ablate-shuffled}
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
spec="socialeval:$SHARED/socialeval/worldtree_data?lang=en"
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
ITEMS=${ITEMS:-60}; K=${K:-3}; S=${S:-5}
mkdir -p "$OUT"
[ -f "$OUT/en/wanda/regions.json" ] || {
  $LOBES extract --model "$GGUF" --data "$spec" --out "$OUT/en" --capture mlp --dtype fp16 --limit "$ITEMS" --quiet
  $LOBES wanda "$OUT/en" --by aspect --block auto --permutations 20 --seed 0 --quiet
}
/usr/bin/time -v $LOBES ablate "$OUT/en" --region all --data "$spec" --out "$OUT/abl" --limit "$ITEMS" \
  --random "$K" --shuffled "$S" --fit-split 0 --seed 0 > "$OUT/abl.out" 2> "$OUT/abl.err"
mkdir -p bench/ablate && cp "$OUT/abl/summary.json" bench/ablate/smollm2-en-shuffled-fit-summary.json
