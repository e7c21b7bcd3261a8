#!/usr/bin/env bash
# Cloze scoring of SmolLM2-135M-Instruct on SocialEval IAE (docs/findings.md, "Cloze scoring"):
# seeded samples of 96 items per language, stratified by language and aspect (--limit 96 --seed 0),
# every option's text scored as a continuation of the published prompt cut at its options
# (--scoring cloze), with acc_mutual_info (--mutual-info).
#
#   bench/findings-cloze.sh [OUT_DIR]             # default runs/findings; both languages
#   LANGS=en bench/findings-cloze.sh              # one language (run two at once, one per language)
#   CONTROL=1 LANGS=en bench/findings-cloze.sh    # also the random-weights control (seed 0), English
#
# Each sample is evaluated as 12 shards of one 8-item chunk (--chunk-units 8 --shard i/12), in a
# spread order (0, 6, 3, 9, …) so that the shards done when a run must stop cover the sample
# (it keeps the data's order, which is the world files' orientation). Every shard is a resumable
# job: rerunning the script continues an interrupted shard and skips finished ones; a shard that
# fails is reported and the others go on. When all 12 are done, `lobes eval merge` joins them into
# OUT_DIR/cloze-LANG (the same records as one evaluation); otherwise the finished shards are used.
# bench/findings-cloze-items.ts then reduces them to bench/cloze/smollm2-LANG.json (the control:
# smollm2-en-control.json), which bench/findings-summary.ts reads; the cloze section of
# bench/findings-summary.out.md is rewritten from those files at the end.
# The control is `lobes eval GGUF --control random --control-seed 0` (docs/controls.md): the
# weights `lobes extract --control random` draws for the GGUF (from its fp16 conversion), laid
# out in the genai layout with the KV cache, so it costs about what the trained model does.
# Wall times go to OUT_DIR/times.tsv, as bench/findings-smollm2.sh writes them.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/findings}
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
TREES=$SHARED/socialeval/worldtree_data
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
LANGS=${LANGS:-"en zh"}
SHARDS=12
ORDER="0 6 3 9 1 7 4 10 2 8 5 11"
SEED=0
mkdir -p "$OUT" bench/cloze
TIMES=$OUT/times.tsv
. bench/steps.sh
finished() { [ -f "$1/eval.json" ] && grep -q '"complete": true' "$1/eval.json"; }

sample() { # sample NAME MODEL LANG OUT_JSON [eval options…]: the 12 shards, merged when all are done, reduced
  local name=$1 model=$2 lang=$3 json=$4; shift 4
  local merged=$OUT/$name ok=() i dir
  if ! finished "$merged"; then
    for i in $ORDER; do
      dir=$OUT/$name-shards/$i
      finished "$dir" ||
        step "eval $name shard $i/$SHARDS" $LOBES eval --model "$model" --data "socialeval:$TREES?lang=$lang" --task iae \
          --scoring cloze --mutual-info --limit 96 --seed $SEED --chunk-units 8 --shard "$i/$SHARDS" \
          --out "$dir" --quiet "$@" ||
        echo "== $name shard $i/$SHARDS failed; going on" >&2
    done
    for i in $(seq 0 $((SHARDS - 1))); do finished "$OUT/$name-shards/$i" && ok+=("$OUT/$name-shards/$i"); done
    if [ ${#ok[@]} -eq $SHARDS ]; then step "merge $name" $LOBES eval merge "${ok[@]}" --out "$merged" --quiet; fi
  fi
  if finished "$merged"; then ok=("$merged"); fi
  if [ ${#ok[@]} -gt 0 ]; then node --import tsx bench/findings-cloze-items.ts "$json" "${ok[@]}"; fi
}

for lang in $LANGS; do
  sample "cloze-$lang" "$GGUF" "$lang" "bench/cloze/smollm2-$lang.json" --cache "$OUT/cache/gguf"
done
if [ -n "${CONTROL:-}" ]; then
  # the control drawn once into the cache (by the first shard, under a lock) and read by every shard
  sample cloze-en-control "$GGUF" en bench/cloze/smollm2-en-control.json --cache "$OUT/cache/gguf" --control random --control-seed $SEED
fi
node --import tsx bench/findings-summary.ts --cloze-into bench/findings-summary.out.md
