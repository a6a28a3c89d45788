#!/usr/bin/env bash
# Phone calls at scale, beside Opus on /ws, in one run: CALLS Twilio Media Streams calls, every
# one streaming a JSON media message every 20 ms (TALKING of them speech, the rest silence, as a
# carrier streams), then VOICE sessions on /ws with SPEAKING of them streaming Opus; the server's
# lag behind real time, its CPU, and a perf profile of where the calls' time goes.
# Speech recognition and synthesis are off: this is the ingest path (parsing, decoding, VAD,
# turn-taking), as in the voice figures. Loopback only; every run is bounded.
#
#   CALLS=1000 TALKING=0.2 VOICE=1000 SPEAKING=200 MEASURE=10 PORT=9660 scripts/benchmarks/bench-calls.sh [OUT_DIR]
set -euo pipefail
PORT="${PORT:-9660}"
CALLS="${CALLS:-1000}"
TALKING="${TALKING:-0.2}"
VOICE="${VOICE:-1000}"
SPEAKING="${SPEAKING:-200}"
MEASURE="${MEASURE:-10}"
OUT="${1:-LoadTests/reports/calls-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat

espeak-ng -v en-us -s 140 -w "$OUT/speech.wav" \
  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."

start_parley server serve "$PORT" --loops 2 --transcriber none --synthesizer none --log-level warning
server=$pid
run "calls-$CALLS" calls "$CALLS" --talking "$TALKING" --url "ws://127.0.0.1:$PORT/twilio" --input "$OUT/speech.wav" \
  --warmup 3 --duration "$MEASURE" --server-pid "$server" || true
run "voice-$VOICE" voice "$VOICE" --speaking "$SPEAKING" --url "ws://127.0.0.1:$PORT/ws" --input "$OUT/speech.wav" \
  --warmup 3 --duration "$MEASURE" --server-pid "$server" || true

# Where the calls' time goes: the same load again, profiled (not measured: perf costs some).
if command -v perf > /dev/null; then
  start calls-profiled "$BIN/parley-load" calls "$CALLS" --talking "$TALKING" --url "ws://127.0.0.1:$PORT/twilio" \
    --input "$OUT/speech.wav" --warmup 2 --duration 12
  sleep 6
  perf record -F 999 -g -p "$server" -o "$OUT/perf.data" -- sleep 6 > /dev/null 2>&1 || true
  finish calls-profiled || true
  perf report -i "$OUT/perf.data" --no-children --sort dso,symbol --stdio 2> /dev/null | grep -v '^#' | grep '%' | head -40 > "$OUT/profile.txt" || true
  perf report -i "$OUT/perf.data" --no-children --sort dso --stdio 2> /dev/null | grep -v '^#' | grep '%' | head -12 > "$OUT/profile-dso.txt" || true
  # Inclusive shares of the steps a media message goes through.
  perf report -i "$OUT/perf.data" --children --sort symbol --stdio -g none 2> /dev/null \
    | grep -E 'TwilioMessage.*parse|JSONParser|Base64.*decode|G711.*decode|feedAudio|VoiceActivityDetector|InputAudioBuffer.*append|processFrames|epoll_wait|sys_read|tcp_sendmsg' \
    | head -30 > "$OUT/profile-steps.txt" || true
  rm -f "$OUT/perf.data"
fi
stop server || true
echo "bench-calls: steal (vmstat st) over the run: $(steal)"
echo "bench-calls: reports in $OUT"
