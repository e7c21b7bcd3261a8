#!/usr/bin/env bash
# The cost of verified reads: wall and CPU time of `lobes wanda` and `lobes cluster` (default
# settings), and of reading every capture point of the run once through openRun (the reads
# alone), for two lobes checkouts (before and after), interleaved so that a change in machine
# load hits both alike. The "after" checkout is also timed with the file-hash cache off
# (LOBES_HASH_CACHE=off: the model's graph and weight data are hashed on every run, as on a
# machine that never hashed them before).
#
#   bench/verified-reads.sh RUN BEFORE_CHECKOUT AFTER_CHECKOUT [REPEATS]
#
# Prints one line per timing: version, command, wall seconds, CPU seconds (user + system).
set -euo pipefail
run=$(realpath "$1")
before=$(realpath "$2")
after=$(realpath "$3")
repeats=${4:-3}

READ_ALL="import('./src/store/index.ts').then(async (s) => { const r = await s.openRun('$run'); for (const h of r.hooks()) await r.read(h.name); })"

time_it() { # label checkout env command...
  local label=$1 dir=$2 envs=$3 what=$4
  shift 3
  local out
  if [ "$what" = read-all ]; then
    out=$( { cd "$dir" && env $envs /usr/bin/time -f '%e %U %S' node --import tsx -e "$READ_ALL" >/dev/null; } 2>&1 | tail -1)
  else
    out=$( { cd "$dir" && env $envs /usr/bin/time -f '%e %U %S' node --import tsx src/cli/bin.ts "$@" --quiet >/dev/null; } 2>&1 | tail -1)
  fi
  read -r wall user sys <<<"$out"
  printf '%s\t%s\t%s\t%.2f\n' "$label" "$what" "$wall" "$(echo "$user + $sys" | bc)"
}

for ((i = 1; i <= repeats; i++)); do
  for cmd in read-all wanda cluster; do
    time_it before "$before" "" "$cmd" "$run"
    time_it after "$after" "" "$cmd" "$run"
    time_it after-nocache "$after" "LOBES_HASH_CACHE=off" "$cmd" "$run"
  done
done
