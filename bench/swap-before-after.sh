#!/usr/bin/env bash
# Wall and CPU time of `lobes swap` on the tiny model's swap run (the docs/datasets.md example:
# 3,970 English texts, 1,985 swapped), for an earlier commit and this checkout in one sitting,
# and whether the two write the same swap.json and swap.csv byte for byte.
#
#   bash bench/swap-before-after.sh BASE_COMMIT [SWAP_ARGS...]
#
# BASE_COMMIT is checked out into a temporary worktree that uses this checkout's node_modules
# (both sides run src/cli/bin.ts through tsx). The run is extracted once, by this checkout.
# Prints one TSV line per side, the new/old CPU ratio, and IDENTICAL or DIFFERENT.
set -euo pipefail
BASE=${1:?usage: bench/swap-before-after.sh BASE_COMMIT [SWAP_ARGS...]}
shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/../shared/socialeval/worldtree_data
WORK=$(mktemp -d /tmp/lobes-swap-XXXXXX)
OLD=$WORK/old
git -C "$ROOT" worktree add -q --detach "$OLD" "$BASE"
trap 'git -C "$ROOT" worktree remove --force "$OLD"; rm -rf "$WORK"' EXIT
ln -s "$ROOT/node_modules" "$OLD/node_modules"

lobes() { # dir, args...
  local dir=$1; shift
  (cd "$dir" && node --import tsx src/cli/bin.ts "$@")
}
lobes "$ROOT" extract --model "$ROOT/models/tiny-llama" --data "socialeval:$D?lang=en&swap=0" --capture final,resid,mean --out "$WORK/run" --quiet >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'side\twall_s\tcpu_s\n'
declare -A CPU
for side in old new; do
  dir=$ROOT; [ "$side" = old ] && dir=$OLD
  (cd "$dir" && /usr/bin/time -f '%e %U %S' -o "$WORK/t.txt" node --import tsx src/cli/bin.ts swap "$WORK/run" --out "$WORK/out-$side" --quiet "$@" >/dev/null)
  read -r wall user sys < "$WORK/t.txt"
  CPU[$side]=$(python3 -c "print(round($user + $sys, 2))")
  printf '%s\t%s\t%s\n' "$side" "$wall" "${CPU[$side]}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -c "print('cpu new/old', round(${CPU[new]} / ${CPU[old]}, 3))"
if cmp -s "$WORK/out-old/swap.json" "$WORK/out-new/swap.json" && cmp -s "$WORK/out-old/swap.csv" "$WORK/out-new/swap.csv"; then echo IDENTICAL; else echo DIFFERENT; fi
