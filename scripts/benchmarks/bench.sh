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
PORT="${PORT:-9200}"
HOLD="${HOLD:-19000}"
ECHO_SECONDS="${ECHO_SECONDS:-10}"
LOOPS="${LOOPS:-2}"
TURNS="${TURNS:-2000}"
TURNS_SECONDS="${TURNS_SECONDS:-20}"
TURNS_PORT="${TURNS_PORT:-$((PORT + 1))}"
MOCK_PORT="${MOCK_PORT:-$((PORT + 2))}"
OUT="LoadTests/reports/bench-$(date -u +%Y%m%dT%H%M%SZ)"
. "$(dirname "$0")/../lib/bench.sh"

start_parley server serve "$PORT" --loops "$LOOPS"

url="ws://127.0.0.1:$PORT/echo"
run hold-10000 hold 10000 --url "$url" --hold-seconds 10
sleep 2  # let the held sessions finish closing
run "hold-$HOLD" hold "$HOLD" --url "$url" --hold-seconds 10
sleep 2
run echo-100 echo --url "$url" --connections 100 --duration "$ECHO_SECONDS"
run echo-1000 echo --url "$url" --connections 1000 --duration "$ECHO_SECONDS"

stop server && echo "server exited 0 after SIGTERM" | tee "$OUT/shutdown.txt"

# Agent turns: Realtime sessions on a server whose model is parley's mock (200 ms to the first
# token, then 50 tokens/s, 20 tokens a reply), each session sending a text turn every 5 s. A
# separate server, so that the idle and echo figures above are not disturbed by a model upstream.
# The 10,000-session run (two client processes; client, server and mock share the cores):
#   parley-load turns 10000 --url ws://127.0.0.1:9201/v1/realtime --duration 30 --turn-interval 10
start_parley mock-llm mock-llm "$MOCK_PORT" --loops 1 --first-token-ms 200 --tokens-per-second 50 --reply-tokens 20
start_parley server-turns serve "$TURNS_PORT" --loops "$LOOPS" --llm openai --llm-base-url "http://127.0.0.1:$MOCK_PORT/v1" --llm-model mock
run "turns-$TURNS" turns "$TURNS" --url "ws://127.0.0.1:$TURNS_PORT/v1/realtime" --duration "$TURNS_SECONDS"
stop server-turns && echo "turns server exited 0 after SIGTERM" | tee -a "$OUT/shutdown.txt"
stop mock-llm || true

# Past one process's descriptor limit: 50,000 and 100,000 idle sessions on six worker processes.
WORKERS_PORT=$((PORT + 20))
start_parley server-workers serve "$WORKERS_PORT" --workers 6 --loops 1
run hold-50000-workers hold 50000 --url "ws://127.0.0.1:$WORKERS_PORT/echo" --hold-seconds 5 --connect-timeout 120
sleep 3
run hold-100000-workers hold 100000 --url "ws://127.0.0.1:$WORKERS_PORT/echo" --hold-seconds 5 --connect-timeout 120
stop server-workers && echo "workers server exited 0 after SIGTERM" | tee -a "$OUT/shutdown.txt"

# Voice: 10,000 sessions on the default server (two loops), some of them streaming Opus at
# real-time pace through decoding, VAD and turns, the built-in agent answering. A step that misses
# the 5 ms p99 budget is reported as such and the bench goes on.
espeak-ng -v en-us -s 140 -w "$OUT/speech.wav" \
  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."
VOICE_PORT=$((PORT + 30))
# Speech is off here: this measures decoding, VAD and turns at scale; what recognition and
# synthesis sustain is measured on its own.
start_parley server-voice serve "$VOICE_PORT" --transcriber none --synthesizer none
for speaking in ${VOICE_STEPS:-200 300 400 500 600}; do
  sleep 2
  run "voice-$speaking" voice 10000 --speaking "$speaking" --url "ws://127.0.0.1:$VOICE_PORT/ws" --input "$OUT/speech.wav" \
    --warmup 3 --duration 10 || true
done
stop server-voice && echo "voice server exited 0 after SIGTERM" | tee -a "$OUT/shutdown.txt"

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
