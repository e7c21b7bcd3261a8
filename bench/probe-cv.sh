#!/usr/bin/env bash
# The cost of `lobes cluster` on a matrix the shape of the SmolLM2 runs (2,000 items × 576
# dimensions, 5 classes; the probe's metric sample is all 2,000), for this checkout and, given
# BEFORE=DIR (another checkout of lobes with node_modules), for that one, alternating.
#
#   BEFORE=/tmp/lobes-before bench/probe-cv.sh [OUT_DIR] [EXTRA CLUSTER FLAGS...]
#
# Data (written once by bench/probe-cv-data.ts): 5 Gaussian classes whose means differ in 20
# directions, on an anisotropic background (variances 1/j over the 576 coordinates), so that the
# probe scores between chance and 1. Prints per run the wall and CPU seconds of the process and
# the seconds of each metrics stage (metrics.json `timings`), with the load average around it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/out/probe-cv}
shift || true
EXTRA=("$@")
mkdir -p "$OUT"
[ -f "$OUT/X.npy" ] || node --import tsx bench/probe-cv-data.ts "$OUT"
run() { # run WHICH DIR
  local which=$1 dir=$2 res=$OUT/$1
  local load0; load0=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f '%e %U %S' -o "$OUT/time.txt" node --import tsx "$dir/src/cli/bin.ts" cluster "$OUT/X.npy" --labels "$OUT/labels.txt" --out "$res" --quiet --threads 2 "${EXTRA[@]}" > /dev/null
  read -r wall user sys < "$OUT/time.txt"
  node -e '
const [which, f, wall, user, sys, l0, l1] = process.argv.slice(1);
const m = JSON.parse(require("fs").readFileSync(f, "utf8"));
const t = m.timings;
const met = Object.entries(t).filter(([k]) => k.startsWith("metrics")).reduce((a, [, v]) => a + v, 0);
const pr = m.spaces.find((s) => s.space === "original-euclidean").probe.balancedAccuracy;
console.log(`${which.padEnd(7)} wall ${(+wall).toFixed(1)} s  cpu ${(+user + +sys).toFixed(1)} s  t-SNE ${t.tsne.toFixed(1)} s  metrics ${met.toFixed(1)} s  probe balanced accuracy ${pr.value.toFixed(3)} [${pr.ci95.map((v) => v.toFixed(3)).join(", ")}]  load ${l0} -> ${l1}`);
console.log("       ", JSON.stringify(Object.fromEntries(Object.entries(t).filter(([k]) => k.startsWith("metrics")))));
' "$which" "$res/metrics.json" "$wall" "$user" "$sys" "$load0" "$(cut -d' ' -f1 /proc/loadavg)"
}
[ -n "${BEFORE:-}" ] && run before "$BEFORE"
run after .
