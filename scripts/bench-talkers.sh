#!/usr/bin/env bash
# Talkers: the embedded pipeline (Whisper, the built-in agent, Piper) with many people talking at
# once. Release servers on free loopback ports, one at a time: the defaults at 10 talkers for the
# latency and stage tables, then a ramp of talkers against a Whisper server and against a
# `--transcriber pocketsphinx` one, each printing the talkers per server core that keep the
# transcription stage's p99 under TRANSCRIPTION_BOUND_MS. `parley-load talkers` is the client; the
# server's CPU is read from /proc (its speech helper's included). Every run is bounded: the client by
# `timeout`, the servers stopped at the end whatever happens. make bench-talkers runs it after
# make release; about 15 minutes with the defaults.
#   TALKERS (10), RAMP (1,5,10,20), TURNS (6 a talker), DURATION (seconds a step at most, 300),
#   BARGE_IN_EVERY (3), TURN_DETECTION (semantic_vad), VOICES (joe,joe-1.25,en-us,en-gb+f3),
#   TRANSCRIPTION_BOUND_MS (500), BIN (.build/release), OUT (LoadTests/reports/talkers-<UTC time>),
#   LIMIT (minutes each client run may take, 30)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${BIN:-.build/release}"
OUT="${OUT:-LoadTests/reports/talkers-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
for tool in parley parley-load; do
  [ -x "$BIN/$tool" ] || { echo "bench-talkers: $BIN/$tool is missing; run 'swift build -c release'" >&2; exit 2; }
done
scripts/speech-models.sh >/dev/null

server=""
trap '[ -n "$server" ] && kill -TERM "$server" 2>/dev/null; wait 2>/dev/null || true' EXIT

# A port nothing listens on now: the kernel's choice for a socket bound to port 0.
free_port() { .venv-speech/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve NAME [serve options...]: starts a server on a free port, waits for /healthz and its speech
# helper (Smart Turn); sets $port and $server.
serve() {
  local name=$1; shift
  port=$(free_port)
  "$BIN/parley" serve --host 127.0.0.1 --port "$port" "$@" > "$OUT/$name.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do
    curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^parley_speech_helper_up 1' && return 0
    kill -0 "$server" 2>/dev/null || { cat "$OUT/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "bench-talkers: $name did not become ready on port $port" >&2
  cat "$OUT/$name.log" >&2
  exit 1
}

stop() { kill -TERM "$server"; wait "$server" || true; server=""; }

# talkers NAME TALKERS: one parley-load talkers run against $port, its text and JSON in $OUT.
talkers() {
  local name=$1 count=$2
  local args=(talkers --url "ws://127.0.0.1:$port" --talkers "$count" --turns-per-talker "${TURNS:-6}" --duration "${DURATION:-300}"
              --barge-in-every "${BARGE_IN_EVERY:-3}" --turn-detection "${TURN_DETECTION:-semantic_vad}"
              --voices "${VOICES:-joe,joe-1.25,en-us,en-gb+f3}" --transcription-bound-ms "${TRANSCRIPTION_BOUND_MS:-500}" --server-pid "$server")
  echo "\$ parley-load $(printf '%q ' "${args[@]}")" | tee "$OUT/$name.txt"
  timeout "$(( ${LIMIT:-30} * 60 ))" "$BIN/parley-load" "${args[@]}" --json "$OUT/$name.json" | tee -a "$OUT/$name.txt"
}

echo "machine: $(nproc) cores; vmstat 1 3 (r: runnable, us/sy/id/st: CPU %):" | tee "$OUT/machine.txt"
vmstat 1 3 | tail -2 | tee -a "$OUT/machine.txt"

serve whisper
talkers latency "${TALKERS:-10}"
stop

serve whisper-ramp
talkers ramp-whisper "${RAMP:-1,5,10,20}"
stop

serve pocketsphinx-ramp --transcriber pocketsphinx
talkers ramp-pocketsphinx "${RAMP:-1,5,10,20}"
stop

vmstat 1 2 | tail -1 | sed 's/^/vmstat after: /' | tee -a "$OUT/machine.txt"
echo "Whisper:      $(grep '^talkers per core' "$OUT/ramp-whisper.txt" || echo 'talkers per core: n/a')"
echo "pocketsphinx: $(grep '^talkers per core' "$OUT/ramp-pocketsphinx.txt" || echo 'talkers per core: n/a')"
"$BIN/parley-load" report "$OUT"
echo "bench-talkers: $OUT/{latency,ramp-whisper,ramp-pocketsphinx}.txt and .json, summary.md, the servers' logs"
