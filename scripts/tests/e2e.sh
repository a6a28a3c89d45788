#!/usr/bin/env bash
# make e2e (and make test): the browser client end to end. Makes the fake microphone's audio with
# espeak-ng (the sentence, then silence so that VAD ends the turn), starts two `parley serve` (the
# defaults: pocketsphinx, the built-in agent, espeak-ng) on free loopback ports, one in developer
# mode (no keys) and one with an API key made up here, and runs scripts/tests/e2e.py against both in
# headless Chromium (what it checks on each: its docstring; on the first, also that the page resumes
# its session after its socket is closed under it).
#   SCREENSHOT=docs/screenshot.png scripts/tests/e2e.sh     # also save a picture of the page
set -euo pipefail
cd "$(dirname "$0")/../.."

PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"   # make e2e builds it
[ -x "$PARLEY_BIN" ] || { echo "e2e: no server binary at $PARLEY_BIN (build it with: swift build)" >&2; exit 2; }
# Keys from the caller's environment would put the developer-mode server behind them.
unset PARLEY_API_KEY PARLEY_API_KEYS PARLEY_API_KEYS_FILE PARLEY_CONFIG
WORK="$(mktemp -d)"
open_pid="" keyed_pid=""
# The key for the second server. It goes through the environment only (never a command line, which
# the process list shows); its "+", as in base64 keys, is one the page must keep (URLSearchParams
# alone reads it as a space).
random="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
key="sk-e2e+$random"
say() { echo "e2e: $*"; }
die() { echo "e2e: $1" >&2; exit "${2:-1}"; }
logs() {  # the servers' logs, for a failure; they hold no key or secret, but are masked all the same
    for name in open keyed; do
        echo "e2e: the $name server's log:"
        tail -20 "$WORK/$name.log" | sed -E "s/$random/<masked>/g; s/ek_[A-Za-z0-9_.-]+/ek_<masked>/g"
    done
}
# shellcheck source=scripts/lib/sdk-common.sh
source scripts/lib/sdk-common.sh   # stop, wait_listening
trap 'stop "$open_pid"; stop "$keyed_pid"; rm -rf "$WORK"' EXIT

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
"$PARLEY_BIN" serve --host 127.0.0.1 --port 0 --resume-grace-seconds 30 > "$WORK/open.out" 2> "$WORK/open.log" &
open_pid=$!
PARLEY_API_KEY="$key" "$PARLEY_BIN" serve --host 127.0.0.1 --port 0 > "$WORK/keyed.out" 2> "$WORK/keyed.log" &
keyed_pid=$!
listening='^parley listening on http://127\.0\.0\.1:([0-9]+)/'
wait_listening "$open_pid" "$WORK/open.out" "$listening" "the developer-mode server"
open_url="http://127.0.0.1:$PORT"
wait_listening "$keyed_pid" "$WORK/keyed.out" "$listening" "the server with a key"
keyed_url="http://127.0.0.1:$PORT"

args=(--url "$open_url" --keyed-url "$keyed_url" --wav "$WORK/mic.wav")
[ -n "${SCREENSHOT:-}" ] && args+=(--screenshot "$SCREENSHOT")
status=0
PARLEY_API_KEY="$key" python3 scripts/tests/e2e.py "${args[@]}" || status=$?
[ "$status" -eq 0 ] || logs
exit "$status"
