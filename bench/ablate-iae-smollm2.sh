#!/usr/bin/env bash
# `lobes ablate --task iae` on SmolLM2-135M-Instruct, English: a run with the MLP inputs of a
# --limit sample of SocialEval items, wanda regions by aspect (--block auto: 32×32), then one
# aspect's region ablated with IAE items answered by cloze scoring and acc_mutual_info (the only
# metric on which this model is above chance), against K random regions. Sizes are set for a
# 2-core machine shared with other jobs.
#
#   bench/ablate-iae-smollm2.sh [OUT_DIR]          # default runs/ablate-iae
#   RUN_ITEMS=30 ITEMS=24 K=1 REGION=Cooperation bench/ablate-iae-smollm2.sh
#
# Wall time and peak RSS: OUT_DIR/en-iae.err (GNU time -v); the summary is copied to
# bench/ablate/smollm2-en-iae-summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/ablate-iae}
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
SPEC="socialeval:$SHARED/socialeval/worldtree_data?lang=en"
LOBES=${LOBES:-"node dist/cli/bin.js"}
RUN_ITEMS=${RUN_ITEMS:-30}; ITEMS=${ITEMS:-24}; K=${K:-1}; REGION=${REGION:-Cooperation}
mkdir -p "$OUT"
[ -f "$OUT/en-qr/wanda/regions.json" ] || {
  $LOBES extract --model "$GGUF" --data "$SPEC" --out "$OUT/en-qr" --capture mlp --dtype fp16 --limit "$RUN_ITEMS" --quiet
  $LOBES wanda "$OUT/en-qr" --by aspect --block auto --permutations 20 --seed 0 --quiet
}
uptime > "$OUT/en-iae.load"
/usr/bin/time -v $LOBES ablate "$OUT/en-qr" --model "$GGUF" --region "$REGION" --data "$SPEC" --out "$OUT/en-iae" \
  --task iae --scoring cloze --metric acc_mutual_info --limit "$ITEMS" --random "$K" --seed 0 > "$OUT/en-iae.out" 2> "$OUT/en-iae.err"
uptime >> "$OUT/en-iae.load"
mkdir -p bench/ablate && cp "$OUT/en-iae/summary.json" bench/ablate/smollm2-en-iae-summary.json
