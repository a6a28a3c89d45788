#!/usr/bin/env bash
# make test's budget, printed (issue 50, item 6):
#   phase.sh NAME COMMAND...   runs COMMAND; says how long it took, and records NAME, its seconds and
#                              its exit status in .build/test-phases; exits with COMMAND's status
#   phase.sh --start           forgets the last run's phases
#   phase.sh --report          the phases of this run, each with its time and its share of the run's
#                              wall-clock time, and that time
set -uo pipefail
record=.build/test-phases
case "${1:-}" in
  --start) mkdir -p .build; : > "$record"; date +%s > "$record.start"; exit 0 ;;
  --report)
    [ -s "$record" ] || exit 0
    # Phases in lanes (scripts/tools/lanes.sh) overlap: the run's time is the wall clock's, and a
    # phase's share is of that, so the shares add up to more than 100 %.
    wall=$(( $(date +%s) - $(cat "$record.start" 2>/dev/null || date +%s) ))
    awk -v wall="$wall" '{ t += $2; n[NR] = $1; s[NR] = $2; r[NR] = $3 } END {
      if (wall <= 0) wall = t
      printf "make test: %d phases, %d s (%.1f min) on the wall clock; the phases took %d s, some side by side\n", NR, wall, wall / 60, t
      for (i = 1; i <= NR; i++) printf "  %-24s %6d s  %5.1f %%%s\n", n[i], s[i], 100 * s[i] / wall, r[i] == 0 ? "" : "  FAILED (" r[i] ")"
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
