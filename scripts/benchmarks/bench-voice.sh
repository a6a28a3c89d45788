#!/usr/bin/env bash
# The reply voice, float32 against int8 (docs/benchmarks.md, "The speech helper's memory at start"):
# (a) the speech helper with its defaults (Smart Turn, Whisper, Piper, 2 workers) started with each
#     voice, its RSS once it says ready (its models loaded and each run once), twice each;
# (b) each voice alone (scripts/benchmarks/voice_bench.py): the memory it adds, CPU a sentence, and
#     Whisper's word error rate on 20 sentences in it, in PROCESSES (3) processes each, since Piper's
#     noise is seeded once a process. The voices: the original (float32), the default (int8 but the
#     decoder, helpers/piper_voice_int8.py) and, to show why not, the whole voice at int8, made here;
# (c) why the decoder stays float32: the voice with only its decoder at int8 against the original,
#     without Piper's noise, so that the two differ only in the waveform the decoder makes.
# No server, no network; about 4 minutes. make bench-voice runs it.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
scripts/tools/speech-models.sh > /dev/null
venv=.venv-speech
python=$venv/bin/python
float=$venv/piper-voice/en_US-joe-medium.onnx
int8=$venv/voice-int8/en_US-joe-medium-int8.ort
whole=$WORK/en_US-joe-medium-whole-int8.onnx
decoder=$WORK/en_US-joe-medium-decoder-int8.onnx
"$python" - "$float" "$whole" "$decoder" <<'PY' 2>/dev/null
import shutil, sys
import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic
source, whole, decoder = sys.argv[1:]
quantize_dynamic(source, whole, op_types_to_quantize=["Conv", "MatMul"], weight_type=QuantType.QUInt8)
others = [node.name for node in onnx.load(source).graph.node if not node.name.startswith("/dec/")]
quantize_dynamic(source, decoder, op_types_to_quantize=["Conv", "ConvTranspose", "MatMul"], weight_type=QuantType.QUInt8,
                 nodes_to_exclude=others)
for made in (whole, decoder):
    shutil.copyfile(source + ".json", made + ".json")
PY

# helper_rss VOICE: the helper's RSS in MiB once ready.
helper_rss() {
    local socket=$WORK/helper.sock pid rss
    rm -f "$socket"
    coproc HELPER { exec "$python" helpers/parley_speech.py --socket "$socket" --smart-turn "$venv/smart-turn/smart-turn-v3.2-cpu.onnx" \
        --whisper "$venv/whisper-tiny.en" --piper "$1" --exit-with-stdin 2>/dev/null; }
    pid=$HELPER_PID
    local line
    while IFS= read -r -t 120 line <&"${HELPER[0]}"; do [[ "$line" == *ready* ]] && break; done
    sleep 2
    rss=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' /proc/"$pid"/status)
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    echo "$rss"
}
machine_line() { echo "cores $(nproc); $(vmstat 1 2 | tail -1 | awk '{ print "idle " $15 " %, steal " $17 " %" }')"; }

echo "bench-voice: $(machine_line)"
echo "(a) the helper's RSS at start, MiB, two starts each"
for voice in "$float" "$int8"; do
    echo "  $(basename "$voice"): $(helper_rss "$voice") $(helper_rss "$voice")"
done
echo "(b) each voice alone, ${PROCESSES:-3} processes each"
for voice in "$float" "$int8" "$whole"; do
    for _ in $(seq "${PROCESSES:-3}"); do "$python" scripts/benchmarks/voice_bench.py "$voice" 2>/dev/null | sed 's/^/  /'; done
done
echo "(c) the decoder alone at int8"
echo "  $("$python" scripts/benchmarks/voice_bench.py snr "$float" "$decoder" 2>/dev/null)"
echo "bench-voice: $(machine_line)"
