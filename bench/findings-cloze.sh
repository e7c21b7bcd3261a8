#!/usr/bin/env bash
# Cloze scoring of SmolLM2-135M-Instruct on SocialEval IAE (docs/findings.md, "Cloze scoring"):
# seeded samples of 96 items per language, stratified by language and aspect (--limit 96 --seed 0),
# every option's text scored as a continuation of the published prompt cut at its options
# (--scoring cloze), with acc_mutual_info (--mutual-info).
#
#   bench/findings-cloze.sh [OUT_DIR]             # default runs/findings; both languages
#   LANGS=en bench/findings-cloze.sh              # one language (run two at once, one per language)
#
# Each sample is evaluated as 12 shards of one 8-item chunk (--chunk-units 8 --shard i/12), in a
# spread order (0, 6, 3, 9, …) so that the shards done when a run must stop cover the sample
# (it keeps the data's order, which is the world files' orientation). Every shard is a resumable
# job: rerunning the script continues an interrupted shard and skips finished ones. When all 12
# are done, `lobes eval merge` joins them into OUT_DIR/cloze-LANG (the same records as one
# evaluation). bench/findings-cloze-items.ts then reduces the finished shards (or the merged
# evaluation) to bench/cloze/smollm2-LANG.json, which bench/findings-summary.ts reads; the cloze
# section of bench/findings-summary.out.md is regenerated from those files
# (node --import tsx bench/findings-summary.ts --cloze).
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
mkdir -p "$OUT"
TIMES=$OUT/times.tsv
[ -f "$TIMES" ] || printf 'step\tseconds\tload_avg_1m_start\tload_avg_1m_end\n' > "$TIMES"

step() { # step NAME CMD... : run CMD, log its wall time and the load average around it
  local name=$1; shift
  local l0 t0 t1 l1
  l0=$(cut -d' ' -f1 /proc/loadavg); t0=$(date +%s.%N)
  echo "== $name: $*" >&2
  "$@"
  t1=$(date +%s.%N); l1=$(cut -d' ' -f1 /proc/loadavg)
  printf '%s\t%.1f\t%s\t%s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$l0" "$l1" >> "$TIMES"
}
finished() { [ -f "$1/eval.json" ] && grep -q '"complete": true' "$1/eval.json"; }

for lang in $LANGS; do
  merged=$OUT/cloze-$lang
  if ! finished "$merged"; then
    for i in $ORDER; do
      dir=$OUT/cloze-$lang-shards/$i
      finished "$dir" ||
        step "eval cloze $lang shard $i/$SHARDS" $LOBES eval --model "$GGUF" --data "socialeval:$TREES?lang=$lang" --task iae \
          --scoring cloze --mutual-info --limit 96 --seed $SEED --chunk-units 8 --shard "$i/$SHARDS" \
          --cache "$OUT/cache/gguf" --out "$dir" --quiet
    done
    shards=()
    for i in $(seq 0 $((SHARDS - 1))); do shards+=("$OUT/cloze-$lang-shards/$i"); done
    step "merge cloze $lang" $LOBES eval merge "${shards[@]}" --out "$merged" --quiet
  fi
  mkdir -p bench/cloze
  node --import tsx bench/findings-cloze-items.ts "bench/cloze/smollm2-$lang.json" "$merged"
done
