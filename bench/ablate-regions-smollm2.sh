#!/usr/bin/env bash
# The ablations of docs/findings-ablation.md's sections "The set differences (--minus others)" and
# "Answers (--task iae)", on SmolLM2-135M-Instruct, English:
#   1. a run with the MLP inputs of all 1,985 English items, straight from the GGUF (so its model
#      is the GGUF's conversion), and wanda regions by aspect (--block auto: 32×32, top 10%, 200
#      permutations);
#   2. each aspect's region minus every other aspect's (A∖others), zeroed in turn, on the
#      response's log-likelihood of 75 stratified items, 5 random regions of the same per-matrix
#      size per region (1 + 5 + 25 passes);
#   3. each aspect's whole region zeroed in turn, on the answers of 96 stratified IAE items (cloze
#      scoring, acc_mutual_info: the metric on which this model is above chance), 5 random regions
#      (1 + 5 + 5 passes), scored through the GGUF's genai conversion (KV cache).
# Resumable: extract and ablate resume their folders. Wall time and peak RSS of the ablations in
# OUT/times.tsv and the GNU time output of each log.
#
#   SHARED=../shared bench/ablate-regions-smollm2.sh [OUT_DIR]     # default runs/ablate-regions
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/ablate-regions}
SHARED=${SHARED:-../shared}
TIMES=$OUT/times.tsv
mkdir -p "$OUT"
. bench/steps.sh
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
G=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
S="socialeval:$SHARED/socialeval/worldtree_data?lang=en"
[ -f "$OUT/en/manifest.json" ] && grep -q '"complete": true' "$OUT/en/manifest.json" ||
  step "extract en mlp" $LOBES extract --model "$G" --data "$S" --out "$OUT/en" --capture mlp --dtype fp16 --quiet
[ -f "$OUT/en/wanda/regions.json" ] || step "wanda en auto" $LOBES wanda "$OUT/en" --by aspect --block auto --permutations 200 --seed 0 --quiet
step "ablate en minus others" /usr/bin/time -v $LOBES ablate "$OUT/en" --model "$G" --region all --minus others --data "$S" --out "$OUT/en-minus" --limit 75 --random 5 --seed 0
step "ablate en iae" /usr/bin/time -v $LOBES ablate "$OUT/en" --model "$G" --region all --data "$S" --out "$OUT/en-iae" --task iae --scoring cloze --metric acc_mutual_info --limit 96 --random 5 --seed 0
mkdir -p bench/ablate
cp "$OUT/en-minus/summary.json" bench/ablate/smollm2-en-minus-summary.json
cp "$OUT/en-iae/summary.json" bench/ablate/smollm2-en-iae-summary.json
