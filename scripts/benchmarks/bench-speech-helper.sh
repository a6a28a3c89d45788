#!/usr/bin/env bash
# The speech helper's cost per box (docs/benchmarks.md, "The speech helper per box"):
# (a) the bytes on its socket per second of speech: one server, its helper run behind
#     scripts/benchmarks/speech-helper-meter.py (a relay that counts what crosses each way), one
#     `parley-load talkers` talker of TURNS turns in Piper's joe voice under semantic_vad (so Smart
#     Turn, Whisper and Piper all work), divided by the seconds of speech in those sentences;
# (b) the helpers' memory with `parley serve --workers WORKERS`: RSS and PSS from
#     /proc/PID/smaps_rollup summed over every helper process of the box, once up and after
#     SESSIONS talkers of one turn each (spread over the workers by SO_REUSEPORT).
# Servers on free loopback ports, one at a time, stopped at the end whatever happens; the clients
# bounded by their --duration. make bench-speech-helper runs it after make release.
#   BIN (.build/release), HELPER (helpers/parley_speech.py; another version's to measure that one,
#   e.g. `git show d08586a:helpers/parley_speech.py`), TURNS (4), WORKERS (4), SESSIONS (16),
#   OUT (LoadTests/reports/bench-speech-helper-<UTC time>); SKIP_BYTES or SKIP_WORKERS leave out
#   (a) or (b).
set -euo pipefail
. "$(dirname "$0")/../lib/bench.sh"
TURNS="${TURNS:-4}" WORKERS="${WORKERS:-4}" SESSIONS="${SESSIONS:-16}"
speech_python=.venv-speech/bin/python
descendants() { local p; for p in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$p"; descendants "$p"; done; }
helpers() { for p in $(descendants "$1"); do tr "\0" " " < /proc/"$p"/cmdline 2>/dev/null | grep -q "python.*parley_speech" && echo "$p"; done; true; }
# talkers NAME ARGS...: a `parley-load talkers` run of Piper's joe voice, no barge-ins, against
# $port; its output in $OUT/NAME.txt and .json only.
talkers() { local name=$1; shift; run "$name" talkers --url "ws://127.0.0.1:$port" --barge-in-every 0 --voices joe "$@" > /dev/null; }

if [ -z "${SKIP_BYTES:-}" ]; then
# (a) bytes per second of speech, one process, the helper behind scripts/benchmarks/speech-helper-meter.py.
export METER_OUT="$OUT/meter.txt" METER_HELPER="${HELPER:-helpers/parley_speech.py}"
rm -f "$METER_OUT"
serve_speech bytes --speech-helper scripts/benchmarks/speech-helper-meter.py
talkers talkers --talkers 1 --turns-per-talker "$TURNS" --stagger-ms 0
sleep 1
read -r to from < "$METER_OUT"
if [ -z "${HELPER:-}" ]; then
  # This build's helper: its counters (`stats`), on its own socket, past the meter.
  socket=$(tr '\0' '\n' < /proc/"$(helpers "$server" | head -1)"/cmdline | grep -A1 -- '--socket' | tail -1)
  "$speech_python" scripts/benchmarks/speech_helper_bench.py stats "$socket"
fi
stop bytes || true
speech=$("$speech_python" scripts/benchmarks/speech_helper_bench.py speech "$TURNS")
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
    echo "  helper $p: RSS $r kB, PSS $q kB, CPU $(cpu "$p") s"
    rss=$((rss + r)); pss=$((pss + q)); n=$((n + 1))
  done
  echo "$1: helpers: $n; RSS $((rss / 1024)) MiB, PSS $((pss / 1024)) MiB in all"
}
serve_speech workers --workers "$WORKERS" --speech-helper "${HELPER:-helpers/parley_speech.py}"
sleep 5
helper_memory "--workers $WORKERS, up"
talkers talkers-workers --talkers "$SESSIONS" --turns-per-talker 1 --stagger-ms 2000 --duration 60 || true
grep -E "turns in|without reply" "$OUT/talkers-workers.txt" || true
helper_memory "--workers $WORKERS, after $SESSIONS talkers"
stop workers || true
