#!/usr/bin/env bash
# The idle-session ladder: 10,000, 19,000 (one process), then 50,000, 100,000, 250,000, 500,000 and
# 1,000,000 on worker processes (--workers, about 18,000 sessions each), up to MAX; each step held
# 10 s. Stops at the first step that fails: that is where this machine stops.
# Loopback only; every step is bounded by its connect timeout and hold time.
#
#   scripts/benchmarks/hold-ladder.sh [MAX] [OUT_DIR]      # MAX defaults to 1000000
#
# Writes one text and JSON report per step into OUT_DIR (default LoadTests/reports/ladder-<UTC
# time>), then report.html and summary.md (parley-load report). Needs the release build.
set -euo pipefail
BIN=.build/release
MAX="${1:-1000000}"
OUT="${2:-LoadTests/reports/ladder-$(date -u +%Y%m%dT%H%M%SZ)}"
PORT="${PORT:-9450}"
. "$(dirname "$0")/../lib/bench.sh"

# sessions workers sources idle-timeout
steps="10000 1 16 60
19000 1 16 60
50000 3 16 60
100000 6 16 60
250000 14 64 600
500000 28 128 900
1000000 56 200 900"

status=0
while read -r sessions workers sources idle; do
  [ "$sessions" -le "$MAX" ] || break
  loops=$([ "$workers" -eq 1 ] && echo 2 || echo 1)
  # Idle /echo connections: no speech. With it, each worker starts its own speech helper (Whisper,
  # Piper, Smart Turn: about 320 MiB and seconds of CPU each) and listens only once it is ready, so
  # the first workers up took every connection and hit the descriptor limit (the 250,000 step).
  WAIT_SECONDS=120 start_parley "server-$sessions" serve "$PORT" --workers "$workers" --loops "$loops" --idle-timeout "$idle" \
    --transcriber none --synthesizer none --turn-model none --vad energy
  timeout=$(( sessions / 2500 + 60 ))
  run "hold-$sessions" hold "$sessions" --url "ws://127.0.0.1:$PORT/echo" --hold-seconds 10 --connect-timeout "$timeout" \
    --sources "$sources" || status=1
  echo "server: --workers $workers --loops $loops --idle-timeout $idle" | tee -a "$OUT/hold-$sessions.txt"
  stop "server-$sessions" || true
  sleep 3  # the kernel lets the last step's sockets go
  [ "$status" -eq 0 ] || { echo "hold-ladder: stopped at $sessions sessions" | tee -a "$OUT/summary.txt"; break; }
done <<< "$steps"

# The full ladder's table goes into docs/benchmarks.md; a shorter one only into its own report.
docs=()
[ "$MAX" -ge 1000000 ] && docs=(--docs docs/benchmarks.md --block-prefix full-)
"$BIN/parley-load" report "$OUT" "${docs[@]}" || true
echo "hold-ladder: reports in $OUT"
exit "$status"
