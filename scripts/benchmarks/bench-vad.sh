#!/usr/bin/env bash
# What Silero VAD costs: `parley-load vad` (a release build) on espeak-ng speech, at 16 kHz and at
# 8 kHz, 20 sessions interleaved, 10 CPU-seconds each (about 30 s in all). It prints the machine's
# state first (vmstat: a busy machine or steal time inflates the figures), then per-frame and
# per-window CPU and the speakers one core carries. make bench-vad runs it after make release.
#   SECONDS_EACH (10), STREAMS (20)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(scripts/tools/speech-models.sh)
wav=$(mktemp --suffix=.wav)
trap 'rm -f "$wav"' EXIT
espeak-ng -v en-us -s 150 -w "$wav" "Could you book me a table for two tomorrow evening, somewhere quiet near the river, if that is possible?"
echo "machine: $(nproc) cores; vmstat 1 3 (r: runnable, us/sy/id/st: CPU %):"
vmstat 1 3 | tail -2
for rate in 16000 8000; do
  echo "+ .build/release/parley-load vad --input speech.wav --model-dir $dir --rate $rate --streams ${STREAMS:-20} --seconds ${SECONDS_EACH:-10}"
  .build/release/parley-load vad --input "$wav" --model-dir "$dir" --rate "$rate" --streams "${STREAMS:-20}" --seconds "${SECONDS_EACH:-10}"
done
