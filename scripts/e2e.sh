#!/usr/bin/env bash
# make e2e (and make test): the browser client end to end. Starts `parley serve` (the defaults:
# pocketsphinx, the built-in agent, espeak-ng) on a free loopback port, makes the fake
# microphone's audio with espeak-ng (the sentence, then silence so that VAD ends the turn), and
# runs scripts/e2e.py against it in headless Chromium.
#   SCREENSHOT=docs/screenshot.png scripts/e2e.sh     # also save a picture of the page
set -euo pipefail
cd "$(dirname "$0")/.."

PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"   # make e2e builds it
[ -x "$PARLEY_BIN" ] || { echo "e2e: no server binary at $PARLEY_BIN (build it with: swift build)" >&2; exit 2; }
PORT="${PORT:-9700}"
WORK="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$WORK"' EXIT

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

"$PARLEY_BIN" serve --host 127.0.0.1 --port "$PORT" > "$WORK/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

args=(--url "http://127.0.0.1:$PORT" --wav "$WORK/mic.wav")
[ -n "${SCREENSHOT:-}" ] && args+=(--screenshot "$SCREENSHOT")
status=0
python3 scripts/e2e.py "${args[@]}" || status=$?
[ "$status" -eq 0 ] || { echo "e2e: the server's log:"; tail -20 "$WORK/server.log"; }
exit "$status"
