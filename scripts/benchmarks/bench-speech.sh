#!/usr/bin/env bash
# The embedded speech stack under load: how many speaking sessions pocketsphinx keeps up with on one
# core, and the voice-to-voice latency with the built-in agent (speech_stopped to the first reply
# audio sent). Loopback only, every run bounded; make bench runs it.
#
#   scripts/benchmarks/bench-speech.sh OUT_DIR SPEECH_WAV
set -euo pipefail
OUT="${1:?usage: scripts/benchmarks/bench-speech.sh OUT_DIR SPEECH_WAV}"
SPEECH="${2:?usage: scripts/benchmarks/bench-speech.sh OUT_DIR SPEECH_WAV}"
PORT="${PORT:-9600}"
SECONDS_MEASURED="${SPEECH_SECONDS:-20}"
. "$(dirname "$0")/../lib/bench.sh"

# A server on PORT, its log in $OUT/server-PORT.log; the next one on the port after.
start_server() { start_parley "server-$PORT" serve "$PORT" "$@"; }
stop_server() { stop "server-$PORT" || true; PORT=$((PORT + 1)); }

# Recognition on one core: one speech worker, room for every turn, no synthesis. Each speaker
# talks for 7.5 s of every 8.5; a step keeps up while its final transcripts come soon after
# speech stops.
for speaking in ${RECOGNITION_STEPS:-1 2 3}; do
  start_server --loops 1 --speech-workers 1 --recognizers 8 --synthesizer none
  run "recognition-1core-$speaking" voice 20 --speaking "$speaking" --url "ws://127.0.0.1:$PORT/ws" --input "$SPEECH" \
    --warmup 5 --duration "$SECONDS_MEASURED" || true
  stop_server
done

# Voice to voice with everything on, the defaults: pocketsphinx, the built-in agent, espeak-ng.
# Each speaker waits 6 s after speaking, as a user waits for the answer, so replies are heard out.
start_server
run voice-to-voice-3 voice 20 --speaking 3 --pause 6 --url "ws://127.0.0.1:$PORT/ws" --input "$SPEECH" --warmup 5 --duration 40 || true
stop_server
