#!/usr/bin/env bash
# A phone call through Twilio Media Streams, played by a simulated carrier (scripts/tests/twilio_carrier.py,
# written from Twilio's published messages) against `parley serve` on loopback: pocketsphinx hears
# espeak-ng speech sent as 8 kHz µ-law at real-time pace, the built-in agent answers, espeak-ng
# speaks the reply back as µ-law in 20 ms chunks with marks; barge-in, keys, bad input, the
# signature. Run by `make test`.
#
#   scripts/tests/twilio-carrier-test.sh          # uses .build/debug/parley
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"
PYTHON3="${PYTHON3:-python3}"
# The same pinned venv as realtime-sdk-test.sh (websockets is the openai SDK's realtime extra).
VENV="$ROOT/.venv-sdk"
PINS="openai[realtime]==3.54.0 websockets==15.0.1"

say() { echo "twilio-carrier-test: $*"; }
die() { echo "twilio-carrier-test: FAILED: $1" >&2; exit "${2:-1}"; }
# shellcheck source=scripts/lib/sdk-common.sh
source scripts/lib/sdk-common.sh
pinned_venv "$VENV" "$PINS"
[[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build)" 2

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() { stop "$SERVER_PID"; [[ -n "${KEEP_LOG:-}" ]] && cp "$WORK/server.err" "$KEEP_LOG"; rm -rf "$WORK"; }
trap cleanup EXIT
logs() { echo "--- server log (last 40 lines):"; tail -40 "$WORK/server.err"; } >&2

# The caller's question: espeak-ng at its own rate, converted by sox to what a phone line carries.
espeak-ng -v en-us -s 140 -w "$WORK/said.wav" "What is the weather like in Paris"
sox "$WORK/said.wav" -r 8000 -c 1 -e u-law -t raw "$WORK/said.ulaw"

# A random auth token, in the environment only (never on a command line, never printed).
TWILIO_AUTH_TOKEN="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export TWILIO_AUTH_TOKEN
"$PARLEY_BIN" serve --host 127.0.0.1 --port 0 --log-level debug > "$WORK/server.out" 2> "$WORK/server.err" &
SERVER_PID=$!
wait_listening "$SERVER_PID" "$WORK/server.out" '^parley listening on http://127\.0\.0\.1:([0-9]+)' "parley serve"
wait_healthy http "$PORT"

# Twilio signs the URL it was given: wss:// and the host, which the server rebuilds from Host.
"$VENV/bin/python" scripts/tests/twilio_carrier.py --url "ws://127.0.0.1:$PORT/twilio" --signed-url "wss://127.0.0.1:$PORT/twilio" \
    --speech "$WORK/said.ulaw" --metrics "http://127.0.0.1:$PORT/metrics" | tee "$WORK/carrier.out" || { logs; die "the carrier's checks failed"; }
grep -q "all checks passed" "$WORK/carrier.out" || { logs; die "the carrier's checks failed"; }

# What the server made of it: the transcript (at debug level), and the reply cut where the caller stopped hearing it.
# pocketsphinx on narrowband synthetic speech is far from exact ("would it not with like it
# every" for the whole question, "what is the weather" for the barge-in's first second, in
# three runs of three); the question is asked twice, and one of its words must come through.
grep -Eqi 'msg=transcript.*text="[^"]*\b(what|weather|like|paris)\b' "$WORK/server.err" \
    || { logs; die "no transcript with a word of the question in the server's log"; }
# The reply is cut where the phone stopped playing it: the last mark echoed before the clear, so
# never past what the carrier played, and behind it by a chunk (20 ms) and the phone's timer and
# the loops' scheduling (200 ms allows for a loaded machine; on a quiet one it is under 20).
heard=$(grep -m1 -o 'msg="reply interrupted".*' "$WORK/server.err" | grep -o 'heard_ms=[0-9]*' | cut -d= -f2)
played=$(grep -o 'reply_heard_ms=[0-9]*' "$WORK/carrier.out" | cut -d= -f2)
[[ -n "$heard" && -n "$played" ]] || { logs; die "the barge-in did not cut the reply"; }
(( heard <= played && played - heard <= 200 )) || { logs; die "the server cut the reply at $heard ms; the caller heard $played ms"; }
say "barge-in: the history keeps $heard ms of the reply; the phone played $played ms"
grep -qF "$TWILIO_AUTH_TOKEN" "$WORK/server.err" "$WORK/server.out" && die "the auth token reached the server's log"
say "transcripts: $(grep -o 'msg=transcript.*' "$WORK/server.err" | grep -o 'text="[^"]*"' | tr '\n' ' ')"
say "passed"
