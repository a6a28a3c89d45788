#!/usr/bin/env bash
# WebRTC calls at scale (issue 38): for each of LEVELS concurrent calls, a fresh release server and
# `parley-load webrtc`, which makes each call as a browser does (SDP offer on POST
# /v1/realtime/calls, ICE, DTLS as the client, SRTP, SCTP and the oai-events channel) from Parley's
# own pieces, asks every call for a greeting, and has TALKING of the callers speak in turns (20 ms
# Opus packets as SRTP; the rest silent, DTX, with consent checks). Reported per level: set-up times
# from the offer's POST (answer, ICE, DTLS, channel open, first reply audio), the server's
# parley_audio_input_lag_seconds p99 over the measured window, its CPU (/proc), RSS and accounted
# bytes per call, the client's CPU and vmstat's steal. With PROFILE=1, a perf profile of the server
# at the last level. Speech is cheap on purpose: no recognition, espeak-ng replies, energy VAD, no
# turn model (SERVE_OPTIONS overrides). Loopback only; every run is bounded (--connect-timeout,
# --warmup, --duration).
#
#   LEVELS="100 250 500" TALKING=0.2 MEASURE=20 PORT=9670 scripts/benchmarks/webrtc-calls.sh [OUT_DIR]
set -euo pipefail
PORT="${PORT:-9670}"
LEVELS="${LEVELS:-100 250 500}"
TALKING="${TALKING:-0.2}"
MEASURE="${MEASURE:-20}"
WARMUP="${WARMUP:-5}"
RATE="${RATE:-50}"
LOOPS="${LOOPS:-2}"
read -r -a SERVE_OPTIONS <<< "${SERVE_OPTIONS:---transcriber none --synthesizer espeak-ng --vad energy --turn-model none}"
OUT="${1:-LoadTests/reports/webrtc-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat
machine_state > "$OUT/machine.txt" 2>&1 || true

espeak-ng -v en-us -s 140 -w "$OUT/speech-22k.wav" "What is the weather like in Paris. I would like to book a table for two at eight."
sox "$OUT/speech-22k.wav" -r 48000 -c 1 -b 16 "$OUT/speech.wav"

last=""
for calls in $LEVELS; do
  start_parley "server-$calls" serve "$PORT" --loops "$LOOPS" "${SERVE_OPTIONS[@]}" --log-level warning
  server=$pid
  # Other work on the machine shows here (steal does not count it): the load average at each level.
  log "level $calls: server pid $server on port $port; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  run "webrtc-$calls" webrtc "$calls" --talking "$TALKING" --url "http://127.0.0.1:$port" --input "$OUT/speech.wav" \
    --rate "$RATE" --warmup "$WARMUP" --duration "$MEASURE" --connect-timeout 90 --server-pid "$server" || true
  last=$calls
  if [[ "${PROFILE:-0}" == 1 && "$calls" == "${LEVELS##* }" ]] && command -v perf > /dev/null; then
    # The same load again, profiled while it streams (not measured: perf costs some).
    start webrtc-profiled "$BIN/parley-load" webrtc "$calls" --talking "$TALKING" --url "http://127.0.0.1:$port" \
      --input "$OUT/speech.wav" --rate "$RATE" --warmup 2 --duration 15 --connect-timeout 90
    sleep $((calls / RATE + 6))
    perf record -F 499 -g -p "$server" -o "$OUT/perf.data" -- sleep 8 > /dev/null 2>&1 || true
    finish webrtc-profiled || true
    perf report -i "$OUT/perf.data" --no-children --sort dso,symbol --stdio 2> /dev/null | grep -v '^#' | grep '%' | head -40 > "$OUT/profile.txt" || true
    perf report -i "$OUT/perf.data" --no-children --sort dso --stdio 2> /dev/null | grep -v '^#' | grep '%' | head -12 > "$OUT/profile-dso.txt" || true
    rm -f "$OUT/perf.data"
  fi
  log "level $calls done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  stop "server-$calls" || true
done
echo "webrtc-calls: steal (vmstat st) over the run: $(steal)"
echo "webrtc-calls: reports in $OUT (levels: $LEVELS; last $last)"
