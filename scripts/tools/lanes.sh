#!/usr/bin/env bash
# make test's script phases in lanes side by side (issue 50):
#
#   scripts/tools/lanes.sh "PHASE PHASE ..." "PHASE ..." ...
#
# Each argument is a lane: its phases run one after another (scripts/tools/phase.sh, so each is
# timed in make test's budget), and the lanes run at once. A phase is scripts/tests/PHASE-test.sh
# when there is one, else scripts/tools/check-PHASE.sh (deploy), else `make PHASE` (fuzz-smoke,
# e2e). A lane stops at its first failure; the others go on, so that one run says every failure.
# Each lane's output goes to its own log, shown whole once every lane has ended, one lane after
# the other, so the lines of two lanes never mix.
#
# Why: measured on the two cores of CI's machine (vmstat every 5 s, 2026-11-27), each script phase
# left 47 to 69 % of the CPU idle, one core's worth: a server, a client and a helper that mostly
# wait on each other, on real time (the chaos run's two minutes, the SDK clients' turns). So two
# lanes; they still left 43 % of the CPU idle (vmstat, 2026-11-28: lanes of 342 and 322 s, make
# test built in 503 s). Three left 24 % (lanes of 232 to 236 s, built in 389 to 400 s),
# but in four runs two failed on outcomes the load moved: a spoken turn's first words lost (a bug,
# fixed: SessionEngine's audio kept between turns) and, from a clean clone with the fuzzers' build
# beside the SIP calls, a barge-in that did not cut its reply. A suite that must pass first time
# on CI's two cores stays at two. Each lane takes its loopback ports from its own slice (PORT_SLICE, read by
# harness.sh's free_port), so that a port one lane let go (a chaos node killed and started again
# on its port) is never picked by the other meanwhile.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 \"PHASE ...\" [\"PHASE ...\" ...]" >&2; exit 2; }

dir=.build/test-lanes
rm -rf "$dir"
mkdir -p "$dir"

run_lane() {
  local phases=$1 phase
  for phase in $phases; do
    if [ -x "scripts/tests/$phase-test.sh" ]; then
      scripts/tools/phase.sh "$phase" "scripts/tests/$phase-test.sh" || return
    elif [ -x "scripts/tools/check-$phase.sh" ]; then
      scripts/tools/phase.sh "$phase" "scripts/tools/check-$phase.sh" || return
    else
      scripts/tools/phase.sh "$phase" "${MAKE:-make}" --no-print-directory "$phase" || return
    fi
  done
}

lanes=$#
pids=()
for ((i = 0; i < lanes; i++)); do
  phases=${*:i+1:1}
  ( export PORT_SLICE="$i/$lanes"; run_lane "$phases" ) > "$dir/lane-$i.log" 2>&1 &
  pids+=($!)
  echo "lanes: lane $((i + 1)) of $lanes: $phases (its output: $dir/lane-$i.log, shown when every lane has ended)" >&2
done

status=0
statuses=()
for ((i = 0; i < lanes; i++)); do
  lane_status=0
  wait "${pids[i]}" || lane_status=$?
  statuses+=("$lane_status")
  [ "$lane_status" -eq 0 ] || status=$lane_status
done
for ((i = 0; i < lanes; i++)); do
  echo "==== lane $((i + 1)) of $lanes: ${*:i+1:1} ($([ "${statuses[i]}" -eq 0 ] && echo passed || echo "FAILED, status ${statuses[i]}"))"
  cat "$dir/lane-$i.log"
done
exit "$status"
