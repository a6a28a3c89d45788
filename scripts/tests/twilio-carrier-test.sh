#!/usr/bin/env bash
# A phone call through Twilio Media Streams, played by a simulated carrier (scripts/tests/twilio_carrier.py,
# written from Twilio's published messages) against `parley serve` on loopback with its defaults:
# the speech helper's Whisper hears espeak-ng speech sent as 8 kHz µ-law at real-time pace, the
# built-in agent answers, Piper speaks the reply back as µ-law in 20 ms chunks with marks;
# barge-in, keys, bad input, the signature. Run by `make test`.
#
#   scripts/tests/twilio-carrier-test.sh          # uses .build/debug/parley
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
# The same pinned venv as realtime-sdk-test.sh (websockets is the openai SDK's realtime extra).
VENV="$ROOT/.venv-sdk"
venv_sdk
# KEEP_LOG=FILE keeps the server's log.
[[ -z "${KEEP_LOG:-}" ]] || on_exit 'cp "$LOGS/server.log" "$KEEP_LOG"'

# The caller's question: espeak-ng at its own rate, converted by sox to what a phone line carries.
ulaw_speech "What is the weather like in Paris" "$WORK/said.ulaw"

# A random auth token, in the environment only (never on a command line, never printed).
TWILIO_AUTH_TOKEN="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export TWILIO_AUTH_TOKEN
start_parley server serve 0 --log-level debug
# The calls once the speech helper is up: begun while it loaded (7 s on a slow machine), the
# greeting was still going when the keys came, and their reply missed its 20 s (2026-11-26).
wait_speech_helper server "http://127.0.0.1:$port"

# Twilio signs the URL it was given: wss:// and the host, which the server rebuilds from Host.
"$VENV/bin/python" scripts/tests/twilio_carrier.py --url "ws://127.0.0.1:$port/twilio" --signed-url "wss://127.0.0.1:$port/twilio" \
    --speech "$WORK/said.ulaw" --metrics "http://127.0.0.1:$port/metrics" | tee "$WORK/carrier.out" || { logs server; die "the carrier's checks failed"; }
grep -q "all checks passed" "$WORK/carrier.out" || { logs server; die "the carrier's checks failed"; }

# GPT-Live over the same stream (<Parameter name="api" value="live">), watched and hung up by the SDK.
OPENAI_API_KEY=test "$VENV/bin/python" scripts/tests/twilio_live.py --url "ws://127.0.0.1:$port/twilio" --signed-url "wss://127.0.0.1:$port/twilio" \
    --api "http://127.0.0.1:$port/v1" --speech "$WORK/said.ulaw" || { logs server; die "GPT-Live over the Twilio stream failed"; }

# What the server made of it: the transcript (at debug level), and the reply cut where the caller stopped hearing it.
# Recognition of narrowband synthetic speech is not exact (pocketsphinx, this test's recogniser
# once, heard "would it not with like it every"); the question is asked twice, and one of its
# words must come through.
grep -Eqi 'msg=transcript.*text="[^"]*\b(what|weather|like|paris)\b' "$LOGS/server.log" \
    || { logs server; die "no transcript with a word of the question in the server's log"; }
# The reply is cut where the phone stopped playing it: the last mark echoed before the clear, so
# never past what the carrier played, and behind it by a chunk (20 ms) and the phone's timer and
# the loops' scheduling (200 ms allows for a loaded machine; on a quiet one it is under 20).
# (A pipeline that finds nothing must reach the check below, not end the script unexplained.)
heard=$(grep -m1 -o 'msg="reply interrupted".*' "$LOGS/server.log" | grep -o 'heard_ms=[0-9]*' | cut -d= -f2 || true)
played=$(grep -o 'reply_heard_ms=[0-9]*' "$WORK/carrier.out" | cut -d= -f2 || true)
[[ -n "$heard" && -n "$played" ]] || { logs server; die "the barge-in did not cut the reply"; }
(( heard <= played && played - heard <= 200 )) || { logs server; die "the server cut the reply at $heard ms; the caller heard $played ms"; }
say "barge-in: the history keeps $heard ms of the reply; the phone played $played ms"
grep -qF "$TWILIO_AUTH_TOKEN" "$LOGS/server.log" && die "the auth token reached the server's log"
say "transcripts: $(grep -o 'msg=transcript.*' "$LOGS/server.log" | grep -o 'text="[^"]*"' | tr '\n' ' ')"
say "passed"
