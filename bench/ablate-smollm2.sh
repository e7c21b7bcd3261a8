#!/usr/bin/env bash
# The ablation finding on SmolLM2-135M-Instruct (docs/findings-ablation.md): for English and
# Chinese, a run with the MLP inputs of a --limit sample of SocialEval items, wanda regions by
# aspect (--block auto: 32×32), then `lobes ablate --region all` over another --limit sample with
# K random regions. Sizes are set for a 2-core machine shared with other jobs; the full data
# (no --limit on either step, --random 10) is the same command without the limits.
#
#   bench/ablate-smollm2.sh [OUT_DIR]          # default runs/ablate
#   EN_RUN=500 EN_ITEMS=75 ZH_RUN=150 ZH_ITEMS=40 K=5 bench/ablate-smollm2.sh
#
# Wall time and peak RSS of each ablation: OUT_DIR/<lang>-all.err (GNU time -v).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/ablate}
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
TREES=$SHARED/socialeval/worldtree_data
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
EN_RUN=${EN_RUN:-500}; EN_ITEMS=${EN_ITEMS:-75}; ZH_RUN=${ZH_RUN:-150}; ZH_ITEMS=${ZH_ITEMS:-40}; K=${K:-5}
mkdir -p "$OUT"
for lang in en zh; do
  if [ $lang = en ]; then nrun=$EN_RUN; nitems=$EN_ITEMS; else nrun=$ZH_RUN; nitems=$ZH_ITEMS; fi
  spec="socialeval:$TREES?lang=$lang"
  [ -f "$OUT/$lang-qr/wanda/regions.json" ] || {
    $LOBES extract --model "$GGUF" --data "$spec" --out "$OUT/$lang-qr" --capture mlp --dtype fp16 --limit "$nrun" --quiet
    $LOBES wanda "$OUT/$lang-qr" --by aspect --block auto --permutations 20 --seed 0 --quiet
  }
  /usr/bin/time -v $LOBES ablate "$OUT/$lang-qr" --region all --data "$spec" --out "$OUT/$lang-all" \
    --limit "$nitems" --random "$K" --seed 0 > "$OUT/$lang-all.out" 2> "$OUT/$lang-all.err"
  mkdir -p bench/ablate && cp "$OUT/$lang-all/summary.json" "bench/ablate/smollm2-$lang-summary.json"
done
