# Sourced by the bench/*-smollm2.sh and findings-cloze.sh scripts: `step NAME CMD...` runs CMD and
# appends its wall time and the 1-minute load average before and after to $TIMES (a TSV whose
# header is written here when the file is new).
[ -n "${TIMES:-}" ] || { echo "bench/steps.sh: set TIMES before sourcing it" >&2; exit 2; }
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
