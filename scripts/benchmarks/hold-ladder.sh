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
cd "$(dirname "$0")/../.."

BIN=.build/release
MAX="${1:-1000000}"
OUT="${2:-LoadTests/reports/ladder-$(date -u +%Y%m%dT%H%M%SZ)}"
PORT="${PORT:-9450}"
mkdir -p "$OUT"
for tool in parley parley-load; do
  [ -x "$BIN/$tool" ] || { echo "ladder: $BIN/$tool is missing; run 'swift build -c release'" >&2; exit 2; }
done

server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null || true' EXIT

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
  "$BIN/parley" serve --host 127.0.0.1 --port "$PORT" --workers "$workers" --loops "$loops" --idle-timeout "$idle" \
    --transcriber none --synthesizer none --turn-model none --vad energy \
    > "$OUT/server-$sessions.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  timeout=$(( sessions / 2500 + 60 ))
  echo "\$ parley-load hold $sessions (server: --workers $workers --loops $loops --idle-timeout $idle)" | tee "$OUT/hold-$sessions.txt"
  "$BIN/parley-load" hold "$sessions" --url "ws://127.0.0.1:$PORT/echo" --hold-seconds 10 --connect-timeout "$timeout" \
    --sources "$sources" --json "$OUT/hold-$sessions.json" 2>&1 | grep -v '^holding\|^connecting' | tee -a "$OUT/hold-$sessions.txt" || status=1
  kill -TERM "$server"; wait "$server" || true; server=""
  sleep 3  # the kernel lets the last step's sockets go
  [ "$status" -eq 0 ] || { echo "ladder: stopped at $sessions sessions" | tee -a "$OUT/summary.txt"; break; }
done <<< "$steps"

# The full ladder's table goes into docs/benchmarks.md; a shorter one only into its own report.
docs=()
[ "$MAX" -ge 1000000 ] && docs=(--docs docs/benchmarks.md --block-prefix full-)
"$BIN/parley-load" report "$OUT" "${docs[@]}" || true
echo "ladder: reports in $OUT"
exit "$status"
