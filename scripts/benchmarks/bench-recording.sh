#!/usr/bin/env bash
# What recording costs: the same talkers (the embedded pipeline: Whisper, the built-in agent,
# Piper; real speech in four voices, barge-ins) against a release server with --recordings, once
# with no session asking to be recorded and once with every session recorded, side by side. Per
# recorded minute: the recording thread's CPU (read from /proc by its name, recorder-0), the whole
# server's CPU (its speech helper's included) beside the unrecorded run's, and the Ogg Opus bytes
# written. make bench-recording runs it after make release; about 6 minutes.
#   TALKERS (10), TURNS (3 a talker), BIN (.build/release), OUT (LoadTests/reports/recording-<UTC time>)
set -euo pipefail
OUT="${OUT:-LoadTests/reports/recording-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
recordings="$WORK/recordings"
mkdir -p "$recordings"

# The CPU seconds of $server's threads named $1 (all of them without one), from /proc.
thread_cpu() {
  local ticks=0 name=${1:-}
  for stat in /proc/"$server"/task/*/stat; do
    local line; line=$(cat "$stat" 2>/dev/null) || continue
    local comm=${line#*(}; comm=${comm%%)*}
    [ -z "$name" ] || [ "$comm" = "$name" ] || continue
    local rest=${line##*) }
    read -r -a fields <<< "$rest"
    ticks=$(( ticks + fields[11] + fields[12] ))
  done
  awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }' 
}

# measure NAME [--record]: talkers against a fresh server; prints CPU and the recording's figures.
measure() {
  local name=$1; shift
  serve_speech "$name" --recordings "$recordings"
  local args=(talkers --url "ws://127.0.0.1:$port" --talkers "${TALKERS:-10}" --turns-per-talker "${TURNS:-3}" --duration 240
              --barge-in-every 3 --voices joe,joe-1.25,en-us,en-gb+f3 --server-pid "$server" "$@")
  echo "\$ parley-load $(printf '%q ' "${args[@]}")" | tee "$OUT/$name.txt"
  timeout 600 "$BIN/parley-load" "${args[@]}" --json "$OUT/$name.json" | tee -a "$OUT/$name.txt"
  sleep 2
  local seconds bytes recorder
  seconds=$(metric "$port" parley_recording_seconds_total); bytes=$(metric "$port" parley_recording_bytes_total)
  recorder=$(thread_cpu recorder-0)
  echo "$name: server CPU (parley process) $(thread_cpu) s, recording thread $recorder s, recorded ${seconds:-0} s, ${bytes:-0} bytes, dropped $(metric "$port" parley_recording_blocks_dropped_total)" | tee -a "$OUT/summary.txt"
  if [ "${seconds:-0}" != "0" ]; then
    awk -v n="$name" -v c="$recorder" -v s="$seconds" -v b="$bytes" \
      'BEGIN { printf "%s: per recorded minute: recording thread %.3f CPU s (%.2f %% of a core), %.0f KiB\n", n, c * 60 / s, c * 100 / s, b * 60 / s / 1024 }' | tee -a "$OUT/summary.txt"
  fi
  stop "$name" || true
}

machine_state | tee "$OUT/machine.txt"
measure unrecorded
measure recorded --record
vmstat 1 2 | tail -1 | sed 's/^/vmstat after: /' | tee -a "$OUT/machine.txt"
ls -la "$recordings" | head -5
echo "bench-recording: $OUT/summary.txt, {unrecorded,recorded}.txt and .json"
