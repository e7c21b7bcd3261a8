#!/usr/bin/env bash
# The §4.3 analysis of SmolLM2-135M-Instruct on SocialEval, end to end, with its controls
# (docs/findings.md reports what this produced). Every step is resumable: rerunning the script
# skips what is done (extract resumes; analyses whose output exists are kept unless FORCE=1).
#
#   bench/findings-smollm2.sh [OUT_DIR]        # default runs/findings
#
# Steps, in order of priority, each run analysed as soon as it is extracted (a later step never
# changes an earlier one's numbers):
#   1. convert the GGUF (Q4_1) to an ONNX folder with fp32 weights (the Q4_1 values, exactly)
#   2. English, question + response: extract (final, MLP inputs, residual stream) through the
#      trained model; cluster it (t-SNE, separation with nulls, token baselines, the per-layer
#      sweep); wanda at 256×256 (the paper's; kept as wanda-256/) and --block auto; then the same
#      items through its random-weights control (seed 0), clustered and compared with the trained
#   3. Chinese, question + response, trained (with the MLP inputs, for its neuron regions)
#   4. English, response only, trained; compared with question + response
#   5. wanda on the control (256 and auto)
#   6. the probe on every dimension (--probe-pca 0) for question + response, trained and control
#   7. the random-weights controls of 3 and 5, and their comparisons
#   8. Chinese, response only, trained and control; compared with question + response
#   9. question only, trained and control, English and Chinese: does the question's wording reach
#      the last token?
#  10. a report per run
# Wall times of every step go to OUT_DIR/times.tsv (extraction times are also in each run's manifest).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/findings}
SHARED=${SHARED:-../shared}
GGUF=$SHARED/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
TREES=$SHARED/socialeval/worldtree_data
LOBES=${LOBES:-"node --import tsx src/cli/bin.ts"}
MODEL=$OUT/smollm2-fp32
SEED=0
mkdir -p "$OUT"
TIMES=$OUT/times.tsv
. bench/steps.sh
done_or() { [ -z "${FORCE:-}" ] && [ -e "$1" ]; } # done_or PATH: true when PATH exists (skip the step)

done_or "$MODEL/model.onnx" || step convert $LOBES convert "$GGUF" --out "$MODEL" --weights fp32 --force --quiet

extract() { # extract NAME SPEC CAPTURE [--control random]
  local name=$1 spec=$2 capture=$3; shift 3
  if [ -f "$OUT/$name/manifest.json" ] && grep -q '"complete": true' "$OUT/$name/manifest.json"; then return 0; fi
  step "extract $name" $LOBES extract --model "$MODEL" --data "$spec" --out "$OUT/$name" --capture "$capture" --dtype fp16 --quiet "$@"
}
cluster() { # cluster NAME: the default analysis with the sweep
  local run=$1
  done_or "$OUT/$run/cluster/metrics.json" ||
    step "cluster $run" $LOBES cluster "$OUT/$run" --by aspect --sweep --metric-points 2200 --seed $SEED --quiet
}
cluster_full() { # cluster_full NAME: the probe on every dimension (576; the token counts: every id in two items), C = 1 (a nested search is 13 fits per fold at 576 dims);
  # its null has 20 permutations (each retrains 5 folds on up to 4,416 features)
  local run=$1
  done_or "$OUT/$run/cluster-full/metrics.json" ||
    step "cluster full-dim probe $run" $LOBES cluster "$OUT/$run" --by aspect --probe-pca 0 --probe-permutations 20 --probe-c 1 --metric-points 2200 --seed $SEED --out "$OUT/$run/cluster-full" --quiet
}
wanda() { # wanda NAME: 256×256 (kept as wanda-256/), then --block auto (RUN/wanda/)
  local run=$1
  if ! done_or "$OUT/$run/wanda-256"; then
    step "wanda 256 $run" $LOBES wanda "$OUT/$run" --by aspect --block 256 --permutations 200 --seed $SEED --quiet
    rm -rf "$OUT/$run/wanda-256" && cp -r "$OUT/$run/wanda" "$OUT/$run/wanda-256"
  fi
  (done_or "$OUT/$run/wanda/settings.json" && grep -q '"auto": true' "$OUT/$run/wanda/settings.json") ||
    step "wanda auto $run" $LOBES wanda "$OUT/$run" --by aspect --block auto --permutations 200 --seed $SEED --quiet
}
wanda_sweep() { # wanda_sweep NAME: --block auto again with the block-size × top-fraction sweep (16–128 × 0.05–0.2) into RUN/wanda/sensitivity.csv
  local run=$1
  done_or "$OUT/$run/wanda/sensitivity.csv" ||
    step "wanda sweep $run" $LOBES wanda "$OUT/$run" --by aspect --block auto --permutations 200 --seed $SEED --sweep all --quiet
}
compare() { # compare A B FILE
  done_or "$OUT/$3" ||
    step "compare $1 $2" $LOBES compare "$OUT/$1" "$OUT/$2" --out "$OUT/$3"
}
EN="socialeval:$TREES?lang=en"
ZH="socialeval:$TREES?lang=zh"
CTL="--control random --control-seed $SEED"

extract en-qr "$EN" final,mlp,resid
cluster en-qr
wanda en-qr
extract en-qr-control "$EN" final,mlp,resid $CTL
cluster en-qr-control
compare en-qr en-qr-control compare-en-qr-vs-control.html
# the mean over each text's tokens of the final hidden state, so that the state is compared with the
# token baselines pooled against pooled (the probe on final.mean, with the same baselines)
extract en-qr-mean "$EN" final,mean
cluster_mean() { # cluster_mean NAME: the probe on final.mean
  done_or "$OUT/$1/cluster/metrics.json" ||
    step "cluster $1" $LOBES cluster "$OUT/$1" --by aspect --point final.mean --metric-points 2200 --seed $SEED --quiet
}
cluster_mean en-qr-mean
# and through the random-weights control: does a random network's context mixing also add to the embedding mean?
extract en-qr-mean-control "$EN" final,mean $CTL
cluster_mean en-qr-mean-control
compare en-qr-mean en-qr-mean-control compare-en-qr-mean-vs-control.html
extract zh-qr "$ZH" final,mlp,resid
cluster zh-qr
compare en-qr zh-qr compare-en-vs-zh.html
wanda zh-qr
extract en-r "$EN&text=response" final,resid
cluster en-r
compare en-qr en-r compare-en-qr-vs-r.html
wanda en-qr-control
wanda_sweep en-qr
cluster_full en-qr
cluster_full en-qr-control
cluster_full zh-qr
extract en-r-control "$EN&text=response" final,resid $CTL
cluster en-r-control
compare en-r en-r-control compare-en-r-vs-control.html
extract zh-qr-control "$ZH" final,mlp,resid $CTL
cluster zh-qr-control
compare zh-qr zh-qr-control compare-zh-qr-vs-control.html
wanda zh-qr-control
cluster_full zh-qr-control
alone() { # alone LANG PART [full]: one part of the text (r: response, q: question) through the trained
  # model and its control, each compared (with LANG-qr, and trained with control); full: the probe on every dimension
  local lang=$1 part=$2 spec
  local run=$lang-$part
  spec="socialeval:$TREES?lang=$lang&text=$([ "$part" = r ] && echo response || echo question)"
  extract "$run" "$spec" final,resid
  cluster "$run"
  [ "${3:-}" = full ] && cluster_full "$run"
  compare "$lang-qr" "$run" "compare-$lang-qr-vs-$part.html"
  extract "$run-control" "$spec" final,resid $CTL
  cluster "$run-control"
  compare "$run" "$run-control" "compare-$run-vs-control.html"
}
wanda_sweep zh-qr
alone zh r
alone en q full
alone zh q
for run in en-qr en-qr-control en-r en-r-control zh-qr zh-qr-control zh-r zh-r-control en-q en-q-control zh-q zh-q-control; do
  step "report $run" $LOBES report "$OUT/$run" --out "$OUT/$run.html"
done

# the numbers docs/findings.md quotes, in one file
node --import tsx bench/findings-summary.ts "$OUT" > "$OUT/summary.md"
echo "wrote $OUT/summary.md; wall times in $TIMES" >&2
