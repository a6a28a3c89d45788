#!/usr/bin/env bash
# make test's budget, printed (issue 50, item 6):
#   phase.sh NAME COMMAND...   runs COMMAND; says how long it took, and records NAME, its seconds and
#                              its exit status in .build/test-phases; exits with COMMAND's status
#   phase.sh --start           forgets the last run's phases
#   phase.sh --report          the phases of this run, each with its time and share, and the total
set -uo pipefail
record=.build/test-phases
case "${1:-}" in
  --start) mkdir -p .build; : > "$record"; exit 0 ;;
  --report)
    [ -s "$record" ] || exit 0
    awk '{ t += $2; n[NR] = $1; s[NR] = $2; r[NR] = $3 } END {
      printf "make test: %d phases, %d s (%.1f min)\n", NR, t, t / 60
      for (i = 1; i <= NR; i++) printf "  %-24s %6d s  %5.1f %%%s\n", n[i], s[i], t ? 100 * s[i] / t : 0, r[i] == 0 ? "" : "  FAILED (" r[i] ")"
    }' "$record"
    exit 0 ;;
esac
name=$1; shift
started=$(date +%s)
"$@"
status=$?
seconds=$(( $(date +%s) - started ))
mkdir -p .build
echo "$name $seconds $status" >> "$record"
echo "make test: $name took $seconds s$([ "$status" = 0 ] || echo ", FAILED ($status)")" >&2
exit "$status"
