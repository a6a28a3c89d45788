#!/usr/bin/env bash
# make bench-live: GPT-Live (/v1/live/sessions) beside the Realtime API (/v1/realtime) on one
# release server with its defaults (issue 53): what a session of each kind costs (sessions that
# send nothing, live microphones with no speech; bench-density.sh's load), and the turn latency
# (the same questions in four voices and speeds, alternated; `parley-load live-turns`).
#   COUNTS (20 200), SECONDS_HELD (20), ROUNDS (3), PARLEY_BIN (.build/release/parley),
#   PARLEY_LOAD (parley-load beside PARLEY_BIN)
set -euo pipefail
PARLEY_BIN=${PARLEY_BIN:-.build/release/parley}
. "$(dirname "$0")/../lib/harness.sh"
LOAD=${PARLEY_LOAD:-$(dirname "$PARLEY_BIN")/parley-load}
[ -x "$LOAD" ] || die "$LOAD is missing; run 'swift build -c release'" 2

echo "== sessions held (bench-density.sh's load, Realtime and Live side by side)"
PARLEY_BIN="$PARLEY_BIN" PARLEY_LOAD="$LOAD" KINDS="text live-text mic live-mic" COUNTS="${COUNTS:-20 200}" SECONDS_HELD="${SECONDS_HELD:-20}" \
    scripts/benchmarks/bench-density.sh

echo "== turn latency: the last word to the reply's first audio (semantic_vad, voice marin, the builtin agent)"
speech=()
for voice_speed in en-us:150 en-gb+f3:135 en-us+m3:170 en-gb-x-rp:160; do
    voice=${voice_speed%%:*}; speed=${voice_speed##*:}
    pcm_speech "What is twelve times seven?" "$WORK/q-$voice.pcm" "$voice" "$speed"
    speech+=("$WORK/q-$voice.pcm")
done
start_parley server serve 0 --log-level warning
wait_speech_helper server "http://127.0.0.1:$port"
vmstat 5 > "$WORK/vmstat" &
vm=$!
"$LOAD" live-turns --url "ws://127.0.0.1:$port" --rounds "${ROUNDS:-3}" "${speech[@]}"
kill "$vm" 2>/dev/null || true
awk 'NR > 2 { st += $17; n++ } END { if (n) printf "steal (vmstat st) over the turns: %.1f %%\n", st / n }' "$WORK/vmstat"
stop server
