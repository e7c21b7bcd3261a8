#!/usr/bin/env bash
# The question/response swap experiment on SmolLM2-135M-Instruct (docs/findings-swap.md reports
# what this produced). Resumable: extract resumes, and an analysis whose output exists is kept
# unless FORCE=1.
#
#   bench/swap-smollm2.sh [OUT_DIR]     # default runs/swap
#
# Environment: LANGS (default "en zh"; e.g. LANGS=zh runs Chinese alone), LIMIT_EN, LIMIT_ZH (texts per language, default 1200 and 600: half own, half
# swapped), POINTS (the capture points lobes swap reads; default the final points and layers
# 0, 8, 16, 24 and 29 (the last), last token and mean), SWAP_ARGS (more lobes swap flags), CONTROL=1
# (also extract each language through the model's random-weights control into OUT_DIR/LANG-swap-ctl
# and give it to lobes swap --control; its conditional tests are printed beside the run's),
# PERM_ARGS (default "--permutations 10", the tables of docs/findings-swap.md; empty: lobes swap's
# defaults, 20 plain and the conditional nulls sized to their family, at most 100; a given
# --permutations also caps the conditional nulls). The conditional test's re-run there was
# `CONTROL=1 PERM_ARGS= LANGS=en bench/swap-smollm2.sh` without the layers-4-12-20-28 step. The defaults are
# what docs/findings-swap.md reports: a subset, because the machine they ran on was a shared,
# loaded 2-core box.
#
#   1. convert the GGUF (Q4_1) to an ONNX folder with fp32 weights (the Q4_1 values, exactly)
#   2. per language (en, zh): extract socialeval:…&swap=0 (every response with its own question and
#      with a question of another aspect), a seeded --limit sample stratified by swapped ×
#      response aspect, capturing the last token and the mean over the tokens at every layer
#      (final, resid, mean)
#   3. lobes swap on each run, right after its extraction: probes of the swapped samples for the
#      question's and the response's aspect at the POINTS (last token and mean), with the token
#      baselines of the same texts and paired CIs
# Wall times go to OUT_DIR/times.tsv with the load average around each step.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/swap}
LIMIT_EN=${LIMIT_EN:-1200}
LIMIT_ZH=${LIMIT_ZH:-600}
if [ -z "${POINTS:-}" ]; then
  POINTS=final.hidden,final.mean
  for l in 0 8 16 24 29; do POINTS=$POINTS,layers.$l.resid_out,layers.$l.resid_out.mean; done
fi
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
TREES=$SHARED/socialeval/worldtree_data
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
MODEL=$OUT/smollm2-fp32
SEED=0
PERM_ARGS=${PERM_ARGS---permutations 10}
mkdir -p "$OUT"
TIMES=$OUT/times.tsv
. bench/steps.sh
done_or() { [ -z "${FORCE:-}" ] && [ -e "$1" ]; }

done_or "$MODEL/model.onnx" || step convert $LOBES convert "$GGUF" --out "$MODEL" --weights fp32 --force --quiet
LANGS=${LANGS:-"en zh"}
for lang in $LANGS; do
  run=$OUT/$lang-swap
  limit=$([ "$lang" = en ] && echo "$LIMIT_EN" || echo "$LIMIT_ZH")
  if ! { [ -f "$run/manifest.json" ] && grep -q '"complete": true' "$run/manifest.json"; }; then
    step "extract $lang-swap" $LOBES extract --model "$MODEL" --data "socialeval:$TREES?lang=$lang&swap=$SEED" --out "$run" \
      --capture final,resid,mean --dtype fp16 --limit "$limit" --by swapped,response_aspect --seed $SEED --quiet
  fi
  ctl_args=
  if [ -n "${CONTROL:-}" ]; then
    if ! { [ -f "$run-ctl/manifest.json" ] && grep -q '"complete": true' "$run-ctl/manifest.json"; }; then
      step "extract $lang-swap-ctl" $LOBES extract --model "$MODEL" --data "socialeval:$TREES?lang=$lang&swap=$SEED" --out "$run-ctl" \
        --capture final,resid,mean --dtype fp16 --limit "$limit" --by swapped,response_aspect --seed $SEED --control random --cache "$OUT/cache" --quiet
    fi
    ctl_args="--control $run-ctl"
  fi
  # the analysis of a language as soon as it is extracted
  done_or "$run/swap/swap.json" ||
    step "swap $lang" sh -c "$LOBES swap '$run' --points '$POINTS' --seed $SEED --probe-repeats 2 $PERM_ARGS $ctl_args ${SWAP_ARGS:-} > '$OUT/$lang-swap.txt'"
done
# more English layers (4, 12, 20, 28), the same settings, in RUN/swap-more (bench/swap-summary.ts joins them)
case " $LANGS " in *" en "*) ;; *) echo "done; wall times in $TIMES" >&2; exit 0 ;; esac
MORE=layers.4.resid_out,layers.4.resid_out.mean,layers.12.resid_out,layers.12.resid_out.mean,layers.20.resid_out,layers.20.resid_out.mean,layers.28.resid_out,layers.28.resid_out.mean
done_or "$OUT/en-swap/swap-more/swap.json" ||
  step "swap en (layers 4 12 20 28)" sh -c "$LOBES swap '$OUT/en-swap' --points '$MORE' --seed $SEED --probe-repeats 2 $PERM_ARGS --out '$OUT/en-swap/swap-more' ${SWAP_ARGS:-} > '$OUT/en-swap-more.txt'"
echo "done; wall times in $TIMES" >&2
