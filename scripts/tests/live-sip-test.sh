#!/usr/bin/env bash
# GPT-Live over SIP: a pjsua2 phone calls `parley serve --sip-webhook-api live`; the application
# (the openai SDK, scripts/tests/live_sip_application.py) takes `live.transport.incoming`, accepts
# the call as a Live session, watches it on a sideband, answers the caller's delegated task with
# commentary the caller hears, plays a fixture (a tone the caller hears) through the sideband, and hangs up. The voice front's model is `parley mock-llm`.
#
# Usage: scripts/tests/live-sip-test.sh      (PARLEY_BIN: the server, default .build/debug/parley)
# Exit status: 0 all checks passed; 1 a check failed; 2 setup failed.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

scripts/tools/install-deps.sh || die "the packages could not be installed" 2
venv_sdk
venv_sip
API_KEY="sk-live-sip-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
WEBHOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64 | tr -d "\n" | tr "+/" "AB")"
echo "$WEBHOOK_SECRET" > "$WORK/webhook-secret"
MASK="s/$API_KEY/<KEY>/g; s#${WEBHOOK_SECRET#whsec_}#<SECRET>#g"

espeak-ng -v en-us -s 140 -w "$WORK/espeak.wav" "Please delegate checking the weather in Paris." || die "espeak-ng failed" 2
sox "$WORK/espeak.wav" -r 8000 -c 1 -b 16 "$WORK/request.wav" || die "sox failed" 2

start_mock
sip=$(free_port)
webhook_port=$(free_port)
PARLEY_API_KEY="$API_KEY" start_parley server serve 0 --loops 1 --log-level debug --sip-port "$sip" --sip-host 127.0.0.1 --sip-allow 127.0.0.1/32 \
    --sip-webhook "http://127.0.0.1:$webhook_port/" --sip-webhook-secret-file "$WORK/webhook-secret" --sip-webhook-api live \
    --llm openai --llm-base-url "http://127.0.0.1:$mock_port/v1" --llm-model mock
wait_speech_helper server "http://127.0.0.1:$port"
OPENAI_API_KEY="$API_KEY" start app timeout 150 .venv-sdk/bin/python scripts/tests/live_sip_application.py --base-url "http://127.0.0.1:$port/v1" \
    --port "$webhook_port" --secret-file "$WORK/webhook-secret"
wait_port app "$webhook_port"

status=0
timeout 150 .venv-sip/bin/python - "$sip" "$WORK/request.wav" "$WORK/pjsua.log" <<'PY' || status=$?
import sys, time
sys.path.insert(0, "scripts/tests")
from sip_phone import Phone, wav_seconds
sip, request, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
phone = Phone(log=log)
caller = phone.account("caller")
# Recorded: the call's port then carries what came from the line (its level is what is heard).
# Recorded: the call's port then carries what came from the line (its level is what is heard).
call = phone.call(caller, f"sip:live@127.0.0.1:{sip}", "live", record=log + ".reply.wav")
phone.wait("the call is answered (the application accepted it)", lambda: call.confirmed and call.audio is not None, timeout=30)
print("ok   the call is answered after the application's accept", flush=True)
phone.pump(1.0)  # the line settles (Parley's first RTP, its playout)
phone.pump(call.play(request) + 0.5)
started = time.monotonic()
phone.wait("the application's hangup", lambda: call.ended, timeout=90)
heard = call.heard_ms(since=started)
print(("ok   " if heard >= 1500 else "FAIL ") + f"the caller heard the answer ({heard} ms of speech)", flush=True)
print("ok   the call ended with the application's hangup", flush=True)
phone.close()
# The fixture the application played: 20 ms frames of the reply's recording that are a 1 kHz tone
# (Goertzel's power at 1 kHz over the frame's, near 1 for a tone, low for speech).
import struct, wave
with wave.open(log + ".reply.wav") as w:
    rate, data = w.getframerate(), w.readframes(w.getnframes())
samples = struct.unpack(f"<{len(data) // 2}h", data)
n, tone = rate // 50, 0
coefficient = 2 * __import__("math").cos(2 * __import__("math").pi * 1000 / rate)
for start in range(0, len(samples) - n, n):
    frame = samples[start:start + n]
    energy = sum(x * x for x in frame)
    s1 = s2 = 0.0
    for x in frame:
        s1, s2 = x + coefficient * s1 - s2, s1
    power = (s1 * s1 + s2 * s2 - coefficient * s1 * s2) * 2 / n
    if energy > n * 300 * 300 and power > 0.7 * energy:
        tone += 20
print(("ok   " if tone >= 500 else "FAIL ") + f"the caller heard the application's fixture ({tone} ms of its 1 kHz tone)", flush=True)
import os
os._exit(0 if heard >= 1500 and tone >= 500 else 1)  # pjsua2's calls must not be collected after close
PY
finish app || status=$?
sed -E "$MASK" "$LOGS/app.log" | grep -E '^(ok|FAIL|note|live sip)' >&2 || true
if [[ $status -ne 0 ]]; then
    logs server
    die "GPT-Live over SIP failed (see the FAIL lines above)"
fi
grep -qF "$API_KEY" "$LOGS/server.log" && die "the API key reached the server's log"
stop server
say "passed: a SIP call announced by live.transport.incoming, accepted, watched, answered and hung up through the SDK"
