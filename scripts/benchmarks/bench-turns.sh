#!/usr/bin/env bash
# Turn-taking, three pipelines side by side: three release servers on free loopback ports, one with
# the energy detector and semantic_vad ending turns by silence (--vad energy --turn-model none), one
# with Silero VAD and Smart Turn alone (--turn-words none), and one with the defaults (Silero, Smart
# Turn and the words Whisper decodes as the user goes quiet), every other flag the same; then
# `parley-load turn-taking` speaks its scenarios to all three, the servers alternating case by case,
# and prints one table (the JSON and the servers' logs beside it). Every run is bounded: the client
# by `timeout`, the servers stopped at the end whatever happens. make bench-turns runs it after
# make release; about 70 minutes with the defaults below.
#   REPEAT (1), VOICES (joe,joe-1.25,en-us,en-gb+f3,slt,rms), SCENARIOS (end,pause,backchannel,interruption),
#   PAUSES (800,1000), BIN (.build/release), OUT (LoadTests/reports/turns-<UTC time>), LIMIT (minutes, 120)
set -euo pipefail
OUT="${OUT:-LoadTests/reports/turns-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"

serve_speech energy-silence --vad energy --turn-model none
energy=$port
serve_speech smart-turn-alone --turn-words none
alone=$port
serve_speech smart-turn-and-words
words=$port

machine_state | tee "$OUT/turns.txt"
args=(turn-taking --url "ws://127.0.0.1:$energy" --label "energy, silence" --url "ws://127.0.0.1:$alone" --label "Smart Turn alone"
      --url "ws://127.0.0.1:$words" --label "Smart Turn + words" --repeat "${REPEAT:-1}" --voices "${VOICES:-joe,joe-1.25,en-us,en-gb+f3,slt,rms}"
      --scenarios "${SCENARIOS:-end,pause,backchannel,interruption}" --pauses "${PAUSES:-800,1000}")
echo "\$ parley-load $(printf '%q ' "${args[@]}")" | tee -a "$OUT/turns.txt"
timeout "$(( ${LIMIT:-120} * 60 ))" "$BIN/parley-load" "${args[@]}" --json "$OUT/turns.json" | tee -a "$OUT/turns.txt"
vmstat 1 2 | tail -1 | sed 's/^/vmstat after: /' | tee -a "$OUT/turns.txt"
# Smart Turn's decision alone, in the helper's own process: features and model, one at a time on
# one thread, wall and CPU time, on a finished sentence in Piper's voice (2 s).
echo "What is the weather like in Paris today?" | .venv-speech/bin/piper -m .venv-speech/piper-voice/en_US-joe-medium.onnx -f "$OUT/decision.wav" 2>/dev/null
sox "$OUT/decision.wav" -r 16000 "$OUT/decision-16k.wav" 2>/dev/null
echo "Smart Turn decision (helpers/parley_speech.py --bench-turn, 200 decisions):" | tee -a "$OUT/turns.txt"
.venv-speech/bin/python helpers/parley_speech.py --socket "$OUT/unused.sock" --smart-turn .venv-speech/smart-turn/smart-turn-v3.2-cpu.onnx \
  --bench-turn "$OUT/decision-16k.wav" --bench-count 200 | tee -a "$OUT/turns.txt"
echo "bench-turns: $OUT/turns.txt, turns.json and the servers' logs"
