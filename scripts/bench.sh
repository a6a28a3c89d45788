#!/usr/bin/env bash
# make bench: how many idle sessions one parley process holds and at what memory; echo throughput
# and latency at 100 and 1,000 connections; Opus decode and encode speed against raw libopus.
# Loopback only; every run is bounded.
# The load client shares the machine's cores with the server: its CPU is reported beside each figure.
#
#   HOLD=19000 ECHO_SECONDS=10 PORT=9200 scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.build/release
PORT="${PORT:-9200}"
HOLD="${HOLD:-19000}"
ECHO_SECONDS="${ECHO_SECONDS:-10}"
LOOPS="${LOOPS:-2}"
OUT="LoadTests/reports/bench-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"

for tool in parley parley-load; do
  [ -x "$BIN/$tool" ] || { echo "bench: $BIN/$tool is missing; run 'swift build -c release' (make bench does)" >&2; exit 2; }
done

"$BIN/parley" serve --host 127.0.0.1 --port "$PORT" --loops "$LOOPS" > "$OUT/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.1
done

run() {
  local name=$1; shift
  echo "\$ parley-load $*" | tee "$OUT/$name.txt"
  "$BIN/parley-load" "$@" --json "$OUT/$name.json" 2>&1 | tee -a "$OUT/$name.txt"
}

url="ws://127.0.0.1:$PORT/echo"
run "hold-$HOLD" hold "$HOLD" --url "$url" --hold-seconds 10
sleep 2  # let the held sessions finish closing
run echo-100 echo --url "$url" --connections 100 --duration "$ECHO_SECONDS"
run echo-1000 echo --url "$url" --connections 1000 --duration "$ECHO_SECONDS"

kill -TERM "$server"
wait "$server" && echo "server exited 0 after SIGTERM" | tee "$OUT/shutdown.txt"
trap - EXIT

# The codec runs with no server: its figures are CPU time of one thread, i.e. per core.
espeak-ng -v en-us -s 140 -w "$OUT/speech.wav" \
  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."
run codec codec --input "$OUT/speech.wav"

ln -sfn "$(basename "$OUT")" LoadTests/reports/latest
echo "bench: reports in $OUT (LoadTests/reports/latest)"
