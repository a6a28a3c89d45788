#!/usr/bin/env bash
# The speech helper's cost per box (docs/benchmarks.md, "The speech helper per box"):
# (a) the bytes on its socket per second of speech: one server, its helper run behind
#     scripts/speech-helper-meter.py (a relay that counts what crosses each way), one
#     `parley-load talkers` talker of TURNS turns in Piper's joe voice under semantic_vad (so Smart
#     Turn, Whisper and Piper all work), divided by the seconds of speech in those sentences;
# (b) the helpers' memory with `parley serve --workers WORKERS`: RSS and PSS from
#     /proc/PID/smaps_rollup summed over every helper process of the box, once up and after
#     SESSIONS talkers of one turn each (spread over the workers by SO_REUSEPORT).
# BIN (.build/release), HELPER (helpers/parley_speech.py; another version's to measure that one,
# e.g. `git show d08586a:helpers/parley_speech.py`), TURNS (4), WORKERS (4), SESSIONS (16),
# OUT (/tmp/bench-speech-helper); SKIP_BYTES or SKIP_WORKERS leave out (a) or (b).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-.build/release}"
OUT="${OUT:-/tmp/bench-speech-helper}"
mkdir -p "$OUT"
started=()
trap 'for pid in "${started[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
free_port() { .venv-speech/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
descendants() { local p; for p in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$p"; descendants "$p"; done; }
helpers() { for p in $(descendants "$1"); do tr "\0" " " < /proc/"$p"/cmdline 2>/dev/null | grep -q "python.*parley_speech" && echo "$p"; done; true; }
serve() {
  port=$(free_port)
  "$BIN/parley" serve --host 127.0.0.1 --port "$port" "$@" > "$OUT/serve.log" 2>&1 &
  server=$!; started+=("$server")
  for _ in $(seq 600); do
    curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^parley_speech_helper_up [1-9]' && return 0
    kill -0 "$server" 2>/dev/null || { cat "$OUT/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "not ready" >&2; cat "$OUT/serve.log" >&2; exit 1
}
stop() { kill -TERM "$server"; wait "$server" || true; }

if [ -z "${SKIP_BYTES:-}" ]; then
# (a) bytes per second of speech, one process, the helper behind scripts/speech-helper-meter.py.
export METER_OUT="$OUT/meter.txt" METER_HELPER="${HELPER:-helpers/parley_speech.py}"
rm -f "$METER_OUT"
serve --speech-helper scripts/speech-helper-meter.py
timeout 600 "$BIN/parley-load" talkers --url "ws://127.0.0.1:$port" --talkers 1 --turns-per-talker "${TURNS:-4}" --barge-in-every 0 \
  --voices joe --stagger-ms 0 --json "$OUT/talkers.json" > "$OUT/talkers.txt"
sleep 1
read -r to from < "$METER_OUT"
if [ -z "${HELPER:-}" ]; then
  # This build's helper: its counters (`stats`), on its own socket, past the meter.
  socket=$(tr '\0' '\n' < /proc/"$(helpers "$server" | head -1)"/cmdline | grep -A1 -- '--socket' | tail -1)
  .venv-speech/bin/python - "$socket" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
for header in ({"op": "hello", "id": 0, "version": 2}, {"op": "stats", "id": 1}):
    body = json.dumps(header).encode()
    s.sendall(struct.pack("<II", len(body), 0) + body)
data = b""
while True:
    data += s.recv(65536)
    frames, rest = [], data
    while len(rest) >= 8:
        h, p = struct.unpack("<II", rest[:8])
        if len(rest) < 8 + h + p:
            break
        frames.append(json.loads(rest[8:8 + h]))
        rest = rest[8 + h + p:]
    stats = [f for f in frames if f.get("id") == 1]
    if stats:
        print("helper stats:", json.dumps(stats[0]))
        break
PY
fi
stop
# The seconds of speech: the talker's sentences (parley-load talkers' first TURNS, in Piper's joe
# at its own pace, as the talker makes them), not its silences between them.
speech=$(.venv-speech/bin/python - "${TURNS:-4}" <<'PY'
import sys
from piper import PiperVoice
voice = PiperVoice.load(".venv-speech/piper-voice/en_US-joe-medium.onnx")
sentences = ["Could you please tell me what twelve times seven is?",
             "I was wondering, what is three hundred and forty five plus one hundred and twenty?",
             "How many words are in the sentence, the quick brown fox jumps over the lazy dog?",
             "Thank you very much, that was really helpful for my trip to Paris.",
             "If I had nine boxes with twelve apples in each, what is nine times twelve?",
             "What is one thousand divided by eight?"]
print(round(sum(sum(len(c.audio_int16_bytes) for c in voice.synthesize(t)) / 2 / voice.config.sample_rate
                for t in sentences[: int(sys.argv[1])]), 2))
PY
)
awk -v to="$to" -v from="$from" -v s="$speech" 'BEGIN { printf "bytes to the helper: %d (%.0f a second of speech); from it: %d (%.0f a second of speech); %.2f s of speech\n", to, to / s, from, from / s, s }'
grep -E "turns in|without reply" "$OUT/talkers.txt" || true
fi

[ -n "${SKIP_WORKERS:-}" ] && exit 0

# (b) the helpers' memory with --workers, once up and again after SESSIONS talkers of one turn each
# (Smart Turn, Whisper and Piper all used), spread over the workers by SO_REUSEPORT; each helper's
# CPU time shows it served.
helper_memory() {
  local rss=0 pss=0 n=0 p r q
  for p in $(helpers "$server"); do
    r=$(awk '/^Rss:/ { print $2 }' /proc/"$p"/smaps_rollup); q=$(awk '/^Pss:/ { print $2 }' /proc/"$p"/smaps_rollup)
    echo "  helper $p: RSS $r kB, PSS $q kB, CPU $(awk '{ print ($14 + $15) / 100 }' /proc/"$p"/stat) s"
    rss=$((rss + r)); pss=$((pss + q)); n=$((n + 1))
  done
  echo "$1: helpers: $n; RSS $((rss / 1024)) MiB, PSS $((pss / 1024)) MiB in all"
}
serve --workers "${WORKERS:-4}" --speech-helper "${HELPER:-helpers/parley_speech.py}"
sleep 5
helper_memory "--workers ${WORKERS:-4}, up"
timeout 600 "$BIN/parley-load" talkers --url "ws://127.0.0.1:$port" --talkers "${SESSIONS:-16}" --turns-per-talker 1 --barge-in-every 0 \
  --voices joe --stagger-ms 2000 --duration 60 > "$OUT/talkers-workers.txt" || true
grep -E "turns in|without reply" "$OUT/talkers-workers.txt" || true
helper_memory "--workers ${WORKERS:-4}, after ${SESSIONS:-16} talkers"
stop
