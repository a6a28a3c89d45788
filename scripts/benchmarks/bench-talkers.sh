#!/usr/bin/env bash
# Talkers: the embedded pipeline (Whisper, the built-in agent, Piper) with many people talking at
# once. Release servers on free loopback ports, one at a time: the defaults at 10 talkers for the
# latency and stage tables, then a ramp of talkers against a Whisper server and against a
# `--transcriber pocketsphinx` one, each printing the talkers per server core that keep the
# transcription stage's p99 under TRANSCRIPTION_BOUND_MS. `parley-load talkers` is the client; the
# server's CPU is read from /proc (its speech helper's included). Every run is bounded: the client by
# `timeout`, the servers stopped at the end whatever happens. make bench-talkers runs it after
# make release; about 30 minutes with the defaults (the built-in agent's replies run
# about 20 s, and each is heard out).
#   TALKERS (10), RAMP (1,5,10,20), TURNS (6 a talker), DURATION (seconds a step at most, 300),
#   BARGE_IN_EVERY (3), TURN_DETECTION (semantic_vad), VOICES (joe,joe-1.25,en-us,en-gb+f3),
#   TRANSCRIPTION_BOUND_MS (500), BIN (.build/release), OUT (LoadTests/reports/talkers-<UTC time>),
#   LIMIT (minutes each client run may take, 30)
set -euo pipefail
OUT="${OUT:-LoadTests/reports/talkers-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"

# talkers NAME TALKERS: one parley-load talkers run against $port, its text and JSON in $OUT.
talkers() {
  local name=$1 count=$2
  local args=(talkers --url "ws://127.0.0.1:$port" --talkers "$count" --turns-per-talker "${TURNS:-6}" --duration "${DURATION:-300}"
              --barge-in-every "${BARGE_IN_EVERY:-3}" --turn-detection "${TURN_DETECTION:-semantic_vad}"
              --voices "${VOICES:-joe,joe-1.25,en-us,en-gb+f3}" --transcription-bound-ms "${TRANSCRIPTION_BOUND_MS:-500}" --server-pid "$server")
  echo "\$ parley-load $(printf '%q ' "${args[@]}")" | tee "$OUT/$name.txt"
  timeout "$(( ${LIMIT:-30} * 60 ))" "$BIN/parley-load" "${args[@]}" --json "$OUT/$name.json" | tee -a "$OUT/$name.txt"
  # Where the helper's CPU went over the run, by kind of work, per turn (its `stats`).
  local turns
  turns=$(python3 -c 'import json, sys; print(sum(s.get("turns", 0) for s in json.load(open(sys.argv[1])).get("steps", [])))' "$OUT/$name.json" 2>/dev/null || echo 1)
  python3 scripts/benchmarks/speech-helper-stats.py "$server" "$turns" | tee -a "$OUT/$name.txt" || true
}

machine_state | tee "$OUT/machine.txt"

serve_speech whisper
talkers latency "${TALKERS:-10}"
stop whisper || true

serve_speech whisper-ramp
talkers ramp-whisper "${RAMP:-1,5,10,20}"
stop whisper-ramp || true

serve_speech pocketsphinx-ramp --transcriber pocketsphinx
talkers ramp-pocketsphinx "${RAMP:-1,5,10,20}"
stop pocketsphinx-ramp || true

vmstat 1 2 | tail -1 | sed 's/^/vmstat after: /' | tee -a "$OUT/machine.txt"
echo "Whisper:      $(grep '^talkers per core' "$OUT/ramp-whisper.txt" || echo 'talkers per core: n/a')"
echo "pocketsphinx: $(grep '^talkers per core' "$OUT/ramp-pocketsphinx.txt" || echo 'talkers per core: n/a')"
"$BIN/parley-load" report "$OUT"
echo "bench-talkers: $OUT/{latency,ramp-whisper,ramp-pocketsphinx}.txt and .json, summary.md, the servers' logs"
