#!/usr/bin/env bash
# Parley's operating point for semantic_vad (issue 52, item 2): release servers side by side, each
# at one operating point of auto (--turn-complete-at, --turn-finished-wait-ms, --turn-question-wait-ms), beside Smart Turn
# alone (--turn-words none) and silence alone (--vad energy --turn-model none); `parley-load
# turn-taking` speaks its finished sentences and its sentences paused mid-thought to all of them,
# the servers alternating case by case. Per server: the wait from the last word to speech_stopped
# for the finished sentences (median, p90), and the pauses answered (premature ends). Bounded: the
# client by `timeout`, the servers stopped at the end whatever happens.
#   POINTS (complete:finished:question, "0.8:1200:600 0.8:1200:1200 0.8:800:800 0.5:500:500"), VOICES (joe,en-gb+f3,rms), PAUSES (1000), REPEAT (1), ALONE (1: Smart Turn alone and silence alone beside them; 0: not),
#   BIN (.build/release), OUT (LoadTests/reports/operating-point-<UTC time>), LIMIT (minutes, 90)
set -euo pipefail
OUT="${OUT:-LoadTests/reports/operating-point-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"

args=(turn-taking --scenarios end,pause --pauses "${PAUSES:-1000}" --voices "${VOICES:-joe,en-gb+f3,rms}" --repeat "${REPEAT:-1}")
for point in ${POINTS:-0.8:1200:600 0.8:1200:1200 0.8:800:800 0.5:500:500}; do
    IFS=: read -r complete finished question <<< "$point"
    serve_speech "auto-${point//:/-}" --turn-complete-at "$complete" --turn-finished-wait-ms "$finished" --turn-question-wait-ms "${question:-$finished}"
    args+=(--url "ws://127.0.0.1:$port" --label "complete at $complete, finished words $finished ms, questions ${question:-$finished} ms")
done
if [ "${ALONE:-1}" = 1 ]; then
    serve_speech smart-turn-alone --turn-words none
    args+=(--url "ws://127.0.0.1:$port" --label "Smart Turn alone")
    serve_speech silence-alone --vad energy --turn-model none
    args+=(--url "ws://127.0.0.1:$port" --label "silence alone (500 ms)")
fi

machine_state | tee "$OUT/operating-point.txt"
echo "\$ parley-load $(printf '%q ' "${args[@]}")" | tee -a "$OUT/operating-point.txt"
timeout "$(( ${LIMIT:-90} * 60 ))" "$BIN/parley-load" "${args[@]}" --json "$OUT/operating-point.json" | tee -a "$OUT/operating-point.txt"
vmstat 1 2 | tail -1 | sed 's/^/vmstat after: /' | tee -a "$OUT/operating-point.txt"
echo "turn-operating-point: $OUT/operating-point.txt, operating-point.json and the servers' logs"
