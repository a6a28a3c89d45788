#!/usr/bin/env bash
# make bench: idle sessions and their memory at 10,000 and 19,000 on one parley process and at
# 50,000 and 100,000 on six worker processes; echo throughput and latency at 100 and 1,000
# connections; 10,000 sessions with 200 to 600 of them speaking Opus in real time; the same
# over TLS (scripts/benchmarks/bench-tls.sh); agent turns in 2,000 Realtime sessions against a mock
# model; Opus decode and encode speed against raw libopus. Then the report (charts and tables), whose
# tables go into docs/benchmarks.md.
# Loopback only; every run is bounded.
# The load client shares the machine's cores with the server: its CPU is reported beside each figure.
#
#   HOLD=19000 ECHO_SECONDS=10 TURNS=2000 TURNS_SECONDS=20 PORT=9200 scripts/benchmarks/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${BIN:-.build/release}"  # BIN=DIR measures another build (a before/after pair)
PORT="${PORT:-9200}"
HOLD="${HOLD:-19000}"
ECHO_SECONDS="${ECHO_SECONDS:-10}"
LOOPS="${LOOPS:-2}"
TURNS="${TURNS:-2000}"
TURNS_SECONDS="${TURNS_SECONDS:-20}"
TURNS_PORT="${TURNS_PORT:-$((PORT + 1))}"
MOCK_PORT="${MOCK_PORT:-$((PORT + 2))}"
OUT="LoadTests/reports/bench-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"

for tool in parley parley-load; do
  [ -x "$BIN/$tool" ] || { echo "bench: $BIN/$tool is missing; run 'swift build -c release' (make bench does)" >&2; exit 2; }
done

# Every process started here, so that an early exit leaves none behind.
started=()
trap 'for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT

# Waits until the server with pid $1 answers /healthz on port $2; shows its log $3 if it dies.
wait_healthy() {
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$2/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$1" 2>/dev/null || { cat "$3" >&2; exit 1; }
    sleep 0.1
  done
  echo "bench: nothing answered on port $2 within 10 s" >&2
  exit 1
}

"$BIN/parley" serve --host 127.0.0.1 --port "$PORT" --loops "$LOOPS" > "$OUT/server.log" 2>&1 &
server=$!
started+=("$server")
wait_healthy "$server" "$PORT" "$OUT/server.log"

run() {
  local name=$1; shift
  echo "\$ parley-load $*" | tee "$OUT/$name.txt"
  "$BIN/parley-load" "$@" --json "$OUT/$name.json" 2>&1 | tee -a "$OUT/$name.txt"
}

url="ws://127.0.0.1:$PORT/echo"
run hold-10000 hold 10000 --url "$url" --hold-seconds 10
sleep 2  # let the held sessions finish closing
run "hold-$HOLD" hold "$HOLD" --url "$url" --hold-seconds 10
sleep 2
run echo-100 echo --url "$url" --connections 100 --duration "$ECHO_SECONDS"
run echo-1000 echo --url "$url" --connections 1000 --duration "$ECHO_SECONDS"

kill -TERM "$server"
wait "$server" && echo "server exited 0 after SIGTERM" | tee "$OUT/shutdown.txt"

# Agent turns: Realtime sessions on a server whose model is parley's mock (200 ms to the first
# token, then 50 tokens/s, 20 tokens a reply), each session sending a text turn every 5 s. A
# separate server, so that the idle and echo figures above are not disturbed by a model upstream.
# The 10,000-session run (two client processes; client, server and mock share the cores):
#   parley-load turns 10000 --url ws://127.0.0.1:9201/v1/realtime --duration 30 --turn-interval 10
"$BIN/parley" mock-llm --host 127.0.0.1 --port "$MOCK_PORT" --loops 1 \
  --first-token-ms 200 --tokens-per-second 50 --reply-tokens 20 > "$OUT/mock-llm.log" 2>&1 &
mock=$!
started+=("$mock")
wait_healthy "$mock" "$MOCK_PORT" "$OUT/mock-llm.log"
"$BIN/parley" serve --host 127.0.0.1 --port "$TURNS_PORT" --loops "$LOOPS" \
  --llm openai --llm-base-url "http://127.0.0.1:$MOCK_PORT/v1" --llm-model mock > "$OUT/server-turns.log" 2>&1 &
turns_server=$!
started+=("$turns_server")
wait_healthy "$turns_server" "$TURNS_PORT" "$OUT/server-turns.log"
run "turns-$TURNS" turns "$TURNS" --url "ws://127.0.0.1:$TURNS_PORT/v1/realtime" --duration "$TURNS_SECONDS"
kill -TERM "$turns_server" "$mock"
wait "$turns_server" && echo "turns server exited 0 after SIGTERM" | tee -a "$OUT/shutdown.txt"
wait "$mock" || true

# Past one process's descriptor limit: 50,000 and 100,000 idle sessions on six worker processes.
WORKERS_PORT=$((PORT + 20))
"$BIN/parley" serve --host 127.0.0.1 --port "$WORKERS_PORT" --workers 6 --loops 1 > "$OUT/server-workers.log" 2>&1 &
workers=$!
started+=("$workers")
wait_healthy "$workers" "$WORKERS_PORT" "$OUT/server-workers.log"
run hold-50000-workers hold 50000 --url "ws://127.0.0.1:$WORKERS_PORT/echo" --hold-seconds 5 --connect-timeout 120
sleep 3
run hold-100000-workers hold 100000 --url "ws://127.0.0.1:$WORKERS_PORT/echo" --hold-seconds 5 --connect-timeout 120
kill -TERM "$workers"
wait "$workers" && echo "workers server exited 0 after SIGTERM" | tee -a "$OUT/shutdown.txt"

# Voice: 10,000 sessions on the default server (two loops), some of them streaming Opus at
# real-time pace through decoding, VAD and turns, the built-in agent answering. A step that misses
# the 5 ms p99 budget is reported as such and the bench goes on.
espeak-ng -v en-us -s 140 -w "$OUT/speech.wav" \
  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."
VOICE_PORT=$((PORT + 30))
# Speech is off here: this measures decoding, VAD and turns at scale; what recognition and
# synthesis sustain is measured on its own.
"$BIN/parley" serve --host 127.0.0.1 --port "$VOICE_PORT" --transcriber none --synthesizer none > "$OUT/server-voice.log" 2>&1 &
voice_server=$!
started+=("$voice_server")
wait_healthy "$voice_server" "$VOICE_PORT" "$OUT/server-voice.log"
for speaking in ${VOICE_STEPS:-200 300 400 500 600}; do
  sleep 2
  run "voice-$speaking" voice 10000 --speaking "$speaking" --url "ws://127.0.0.1:$VOICE_PORT/ws" --input "$OUT/speech.wav" \
    --warmup 3 --duration 10 || true
done
kill -TERM "$voice_server"
wait "$voice_server" && echo "voice server exited 0 after SIGTERM" | tee -a "$OUT/shutdown.txt"
trap - EXIT

# TLS: wss beside ws (idle memory at 10,000, echo, handshakes per core), in $OUT/tls.
PORT=$((PORT + 10)) scripts/benchmarks/bench-tls.sh "$OUT/tls"

# Speech: recognition on one core, and voice to voice with everything on, in $OUT/speech.
PORT=$((PORT + 40)) scripts/benchmarks/bench-speech.sh "$OUT/speech" "$OUT/speech.wav"

# The codec runs with no server: its figures are CPU time of one thread, i.e. per core.
run codec codec --input "$OUT/speech.wav"

# One page of charts and a Markdown summary of everything above; its tables into the docs.
"$BIN/parley-load" report "$OUT" --docs docs/benchmarks.md

ln -sfn "$(basename "$OUT")" LoadTests/reports/latest
echo "bench: reports in $OUT (LoadTests/reports/latest)"
