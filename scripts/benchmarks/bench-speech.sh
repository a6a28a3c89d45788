#!/usr/bin/env bash
# The embedded speech stack under load: how many speaking sessions pocketsphinx keeps up with on one
# core, and the voice-to-voice latency with the built-in agent (speech_stopped to the first reply
# audio sent). Loopback only, every run bounded; make bench runs it.
#
#   scripts/benchmarks/bench-speech.sh OUT_DIR SPEECH_WAV
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${BIN:-.build/release}"  # BIN=DIR measures another build (a before/after pair)
OUT="${1:?usage: scripts/benchmarks/bench-speech.sh OUT_DIR SPEECH_WAV}"
SPEECH="${2:?usage: scripts/benchmarks/bench-speech.sh OUT_DIR SPEECH_WAV}"
PORT="${PORT:-9600}"
SECONDS_MEASURED="${SPEECH_SECONDS:-20}"
mkdir -p "$OUT"

server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null || true' EXIT

start_server() {
  "$BIN/parley" serve --host 127.0.0.1 --port "$PORT" "$@" > "$OUT/server-$PORT.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "bench-speech: the server did not start" >&2; cat "$OUT/server-$PORT.log" >&2; exit 1
}

stop_server() { kill -TERM "$server"; wait "$server" || true; server=""; PORT=$((PORT + 1)); }

run() {
  local name=$1; shift
  echo "\$ parley-load $*" | tee "$OUT/$name.txt"
  "$BIN/parley-load" "$@" --json "$OUT/$name.json" 2>&1 | grep -v '^measuring\|^connecting\|^warmup' | tee -a "$OUT/$name.txt" || true
}

# Recognition on one core: one speech worker, room for every turn, no synthesis. Each speaker
# talks for 7.5 s of every 8.5; a step keeps up while its final transcripts come soon after
# speech stops.
for speaking in ${RECOGNITION_STEPS:-1 2 3}; do
  start_server --loops 1 --speech-workers 1 --recognizers 8 --synthesizer none
  run "recognition-1core-$speaking" voice 20 --speaking "$speaking" --url "ws://127.0.0.1:$PORT/ws" --input "$SPEECH" \
    --warmup 5 --duration "$SECONDS_MEASURED"
  stop_server
done

# Voice to voice with everything on, the defaults: pocketsphinx, the built-in agent, espeak-ng.
# Each speaker waits 6 s after speaking, as a user waits for the answer, so replies are heard out.
start_server
run voice-to-voice-3 voice 20 --speaking 3 --pause 6 --url "ws://127.0.0.1:$PORT/ws" --input "$SPEECH" --warmup 5 --duration 40
stop_server
trap - EXIT
