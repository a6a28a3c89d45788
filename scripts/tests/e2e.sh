#!/usr/bin/env bash
# make e2e (and make test): the browser client end to end. Makes the fake microphone's audio with
# espeak-ng (the sentence, then silence so that VAD ends the turn), starts two `parley serve` (the
# defaults: pocketsphinx, the built-in agent, espeak-ng) on free loopback ports, one in developer
# mode (no keys) and one with an API key made up here, and runs scripts/tests/e2e.py against both in
# headless Chromium: the page as a WebRTC call (its default) and on the WebSocket (?transport=ws),
# a call hung up and one dropped, the WebSocket resuming its session after its socket is closed
# under it, and a failed offer falling back to the WebSocket (what it checks: its docstring).
#   SCREENSHOT=docs/screenshot.png scripts/tests/e2e.sh     # also save a picture of the page
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
# Keys from the caller's environment would put the developer-mode server behind them.
unset PARLEY_API_KEY PARLEY_API_KEYS PARLEY_API_KEYS_FILE PARLEY_CONFIG
# The key for the second server. It goes through the environment only (never a command line, which
# the process list shows); its "+", as in base64 keys, is one the page must keep (URLSearchParams
# alone reads it as a space).
random="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
key="sk-e2e+$random"
# The servers' logs, shown on a failure, hold no key or secret, but are masked all the same.
MASK="s/$random/<masked>/g; s/ek_[A-Za-z0-9_.-]+/ek_<masked>/g"

espeak-ng -v en-us -s 140 -w "$WORK/said.wav" "What is the weather like in Paris"
python3 - "$WORK/said.wav" "$WORK/mic.wav" <<'PY'
import sys, wave
with wave.open(sys.argv[1]) as w:
    params, frames = w.getparams(), w.readframes(w.getnframes())
with wave.open(sys.argv[2], "wb") as out:
    out.setparams(params)
    silence = b"\0" * params.sampwidth * params.framerate
    out.writeframes(silence + frames + silence * 4)  # 1 s before, 4 s after: one turn, then quiet
PY

# Port 0: the kernel picks a free port, which each server prints once it listens.
start_parley open serve 0 --resume-grace-seconds 30
open_url="http://127.0.0.1:$port"
PARLEY_API_KEY="$key" start_parley keyed serve 0
keyed_url="http://127.0.0.1:$port"

# Chromium only once both servers' speech helpers have loaded their models (about 7 s of CPU
# each): started beside the pages, on two cores, the helpers' first decodes queued past the
# server's 10 s wait and every turn of the run failed to transcribe (seen here, 2 of 2 runs).
wait_speech_helper open "$open_url"
wait_speech_helper keyed "$keyed_url"

args=(--url "$open_url" --keyed-url "$keyed_url" --wav "$WORK/mic.wav")
[ -n "${SCREENSHOT:-}" ] && args+=(--screenshot "$SCREENSHOT")
status=0
PARLEY_API_KEY="$key" python3 scripts/tests/e2e.py "${args[@]}" || status=$?
[ "$status" -eq 0 ] || LOG_LINES=20 logs open keyed
exit "$status"
