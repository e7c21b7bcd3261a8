#!/usr/bin/env bash
# Wall and CPU time of every stage (extract, wanda, cluster, eval, attend) on SmolLM2 and
# SocialEval items, for an earlier commit and this checkout, alternating in one sitting.
#
#   bash bench/stages-before-after.sh BASE_COMMIT [REPS] [SPEC]
#
# Environment: STAGES (default "extract wanda cluster eval attend"; extract always runs, the
# others read its run), WANDA_ARGS and CLUSTER_ARGS (extra flags given to both sides, e.g.
# WANDA_ARGS="--block 32" when the sides' default block sizes differ).
#
# SPEC defaults to one slice of the English items (orientation [1,-1]: 265 samples), which both
# sides read identically (the earlier commit has no --limit in extract).
#
# BASE_COMMIT is checked out into a temporary worktree and installed there (npm ci). Each side
# converts the GGUF into its own folder before any timing (the converter differs between commits);
# eval and attend read that folder (the earlier commit could not attend an eval of a GGUF).
# Prints one TSV line per stage and repetition, then the medians and new/old ratios.
set -euo pipefail
BASE=${1:?usage: bench/stages-before-after.sh BASE_COMMIT [REPS] [SPEC]}
REPS=${2:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=$ROOT/../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
D=$ROOT/../shared/socialeval/worldtree_data
SPEC=${3:-"socialeval:$D?lang=en&orientation=[1,-1]"}
WORK=$(mktemp -d /tmp/lobes-stages-XXXXXX)
OLD=$WORK/old
git -C "$ROOT" worktree add -q --detach "$OLD" "$BASE"
trap 'git -C "$ROOT" worktree remove --force "$OLD"; rm -rf "$WORK"' EXIT
(cd "$OLD" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >/dev/null 2>&1)

lobes() { # side, args...
  local side=$1; shift
  local dir=$ROOT; [ "$side" = old ] && dir=$OLD
  (cd "$dir" && node --import tsx src/cli/bin.ts "$@")
}
for side in old new; do lobes $side convert "$G" --out "$WORK/$side-model" >/dev/null; done

OUT=$WORK/times.tsv
printf 'side\trep\tstage\twall_s\tcpu_s\n' > "$OUT"
timed() { # side rep stage args...
  local side=$1 rep=$2 stage=$3; shift 3
  local t=$WORK/t.txt
  local dir=$ROOT; [ "$side" = old ] && dir=$OLD
  (cd "$dir" && /usr/bin/time -f '%e %U %S' -o "$t" node --import tsx src/cli/bin.ts "$@" >/dev/null 2>"$WORK/$side-$stage.err") || { echo "$side $stage failed: $(tail -2 "$WORK/$side-$stage.err")" >&2; return 1; }
  read -r wall user sys < "$t"
  printf '%s\t%s\t%s\t%s\t%s\n' "$side" "$rep" "$stage" "$wall" "$(python3 -c "print(round($user + $sys, 2))")" | tee -a "$OUT"
}
STAGES=${STAGES:-extract wanda cluster eval attend}
on() { [[ " $STAGES " == *" $1 "* ]]; }
for rep in $(seq 1 "$REPS"); do
  for side in old new; do
    R=$WORK/$side-r$rep
    timed $side $rep extract extract --model "$G" --cache "$WORK/$side-cache" --data "$SPEC" --out "$R/run"
    # shellcheck disable=SC2086
    if on wanda; then timed $side $rep wanda wanda "$R/run" --by aspect --permutations 50 ${WANDA_ARGS:-}; fi
    # shellcheck disable=SC2086
    if on cluster; then timed $side $rep cluster cluster "$R/run" --by aspect ${CLUSTER_ARGS:-}; fi
    if on eval; then timed $side $rep eval eval "$WORK/$side-model" --data "$SPEC" --task iae --limit 12 --out "$R/eval"; fi
    if on attend; then timed $side $rep attend attend "$WORK/$side-model" --eval "$R/eval" --items all --out "$R/attend"; fi
  done
done
echo
echo "medians (new/old):"
python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
for stage in ['extract', 'wanda', 'cluster', 'eval', 'attend']:
    if not any(x['stage'] == stage for x in rows):
        continue
    m = {}
    for side in ['old', 'new']:
        r = [x for x in rows if x['side'] == side and x['stage'] == stage]
        m[side] = (statistics.median(float(x['wall_s']) for x in r), statistics.median(float(x['cpu_s']) for x in r))
    print(f"{stage:8s} wall old {m['old'][0]:7.2f} s new {m['new'][0]:7.2f} s ratio {m['new'][0]/m['old'][0]:.3f}   cpu old {m['old'][1]:7.2f} s new {m['new'][1]:7.2f} s ratio {m['new'][1]/m['old'][1]:.3f}")
EOF
