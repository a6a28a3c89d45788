#!/usr/bin/env bash
# What Silero VAD costs: `parley-load vad` (a release build) on espeak-ng speech, at 16 kHz and at
# 8 kHz, 20 sessions interleaved, 10 CPU-seconds each (about 30 s in all). It prints the machine's
# state first (vmstat: a busy machine or steal time inflates the figures), then per-frame and
# per-window CPU and the speakers one core carries, kept in OUT (LoadTests/reports/vad-<UTC time>).
# make bench-vad runs it after make release.
#   SECONDS_EACH (10), STREAMS (20), BIN (.build/release)
set -euo pipefail
OUT="${OUT:-LoadTests/reports/vad-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
dir=$(scripts/tools/speech-models.sh)
wav="$OUT/speech.wav"
espeak-ng -v en-us -s 150 -w "$wav" "Could you book me a table for two tomorrow evening, somewhere quiet near the river, if that is possible?"
machine_state | tee "$OUT/machine.txt"
for rate in 16000 8000; do
  echo "+ $BIN/parley-load vad --input speech.wav --model-dir $dir --rate $rate --streams ${STREAMS:-20} --seconds ${SECONDS_EACH:-10}" | tee "$OUT/vad-$rate.txt"
  "$BIN/parley-load" vad --input "$wav" --model-dir "$dir" --rate "$rate" --streams "${STREAMS:-20}" --seconds "${SECONDS_EACH:-10}" | tee -a "$OUT/vad-$rate.txt"
done
say "reports in $OUT"
