#!/usr/bin/env bash
# The cost of lineage (every output records the sha256 of its files and the content hashes of its
# inputs; every reader checks them) on the SmolLM2 SocialEval run: the same stages with lobes before
# lineage (BEFORE, a commit) and with this checkout, alternating the two in one sitting.
#
#   bench/lineage-cost.sh [OUT_DIR] [PAIRS]        # default /tmp/lobes-lineage-bench, 3 pairs
#
# Each side extracts its own run of the same 200 English items (fp16, final + MLP inputs), then,
# PAIRS times, alternating which side goes first: wanda (--block auto, 200 permutations), cluster
# (the defaults), ablate (one region, 24 items, 3 random regions) and report. The first pair is
# the "first run" (cold file-hash cache of the model for this checkout's lineage); the later pairs
# are "later runs". Wall times and the load average go to OUT_DIR/times.tsv; the ratios
# (after / before, the median of the pairs) are printed by bench/lineage-cost.py.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/lobes-lineage-bench}
PAIRS=${2:-3}
BEFORE=${BEFORE:-b2d161f}
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
SPEC="socialeval:$SHARED/socialeval/worldtree_data?lang=en"
mkdir -p "$OUT"
TIMES=$OUT/times.tsv
. bench/steps.sh

# lobes before lineage: a worktree of BEFORE sharing this checkout's node_modules
OLD=$OUT/before-src
if [ ! -d "$OLD" ]; then
  git worktree add -q --detach "$OLD" "$BEFORE"
  ln -s "$(pwd)/node_modules" "$OLD/node_modules"
fi
NEW_LOBES="node --import tsx $(pwd)/src/cli/bin.ts"
OLD_LOBES="node --import tsx $OLD/src/cli/bin.ts"
MODEL=$OUT/smollm2-fp32
[ -f "$MODEL/model.onnx" ] || step convert $NEW_LOBES convert "$GGUF" --out "$MODEL" --weights fp32 --force --quiet

side() { # side NAME LOBES PAIR
  local name=$1 lobes=$2 p=$3 run=$OUT/run-$1
  if [ ! -f "$run/manifest.json" ]; then
    step "extract $name" $lobes extract --model "$MODEL" --data "$SPEC" --limit 200 --capture final,mlp --dtype fp16 --out "$run" --quiet
  fi
  step "wanda $name $p" $lobes wanda "$run" --by aspect --block auto --permutations 200 --seed 0 --quiet
  step "cluster $name $p" $lobes cluster "$run" --by aspect --seed 0 --quiet
  rm -rf "$OUT/ablate-$name"
  step "ablate $name $p" $lobes ablate "$run" --region Cooperation --data "$SPEC" --limit 24 --random 3 --out "$OUT/ablate-$name" --quiet
  step "report $name $p" $lobes report "$run" --ablate-dir "$OUT/ablate-$name" --out "$OUT/report-$name.html"
}

for p in $(seq 1 "$PAIRS"); do
  if [ $((p % 2)) -eq 1 ]; then side before "$OLD_LOBES" "$p"; side after "$NEW_LOBES" "$p"
  else side after "$NEW_LOBES" "$p"; side before "$OLD_LOBES" "$p"; fi
done
python3 bench/lineage-cost.py "$TIMES"
