#!/usr/bin/env bash
# Calls out (issue 54, its first part): a Parley server places phone calls through a trunk, over
# SIP, to pjsua2 callees (scripts/tests/sip_callee.py, PyPI's pjsua2-python): an application
# (scripts/tests/sip_dial_out.py) posts each call to /v1/realtime/calls with a SIP transport and
# watches it on its sideband. One callee answers and says hello, and the session answers it; one is
# busy (486); one never answers (cancelled at its ring timeout); one is a voicemail, which the
# answering-machine detection finds (the person is found human). SIPp (Debian's sip-tester) plays
# the trunks that misbehave, one scenario each (scripts/tests/sipp/trunk-*.xml): a digest challenge
# SIPp checks the answer to, 401 forever, 503 with Retry-After, a BYE during early media, a callee
# that never sends RTP. Refusals and /metrics checked too. Issue 73: callees that answer at once
# (a sideband attached seconds after the 201 hears the call's story first; 30 sidebands opened as
# the call is answered, six rounds, none closed), a call that fails at once (its sideband, late,
# hears why), and a trunk that never answers (unreachable at timer B, no CANCEL sent). The trunks are the callees' own SIP
# ports on loopback (no proxy in between yet). Run by `make test`.
#
# Environment: PARLEY_BIN (.build/debug/parley).
# Exit status: 0 passed; 1 a check failed; 2 setup failed.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

scripts/tools/install-deps.sh || die "the packages could not be installed" 2
venv_sdk
venv_sip

espeak-ng -v en-gb -s 150 -w "$WORK/espeak.wav" "Hello? Who is this?" || die "espeak-ng failed" 2
sox "$WORK/espeak.wav" -r 8000 -c 1 -b 16 "$WORK/hello.wav" || die "sox failed" 2
# A voicemail: its greeting in another voice, then a beep of half a second at 1 kHz.
espeak-ng -v en-us+f3 -s 160 -w "$WORK/espeak.wav" "Hi, you have reached the voicemail of Jane Smith. Please leave a message after the tone." || die "espeak-ng failed" 2
sox "$WORK/espeak.wav" -r 8000 -c 1 -b 16 "$WORK/greeting.wav" || die "sox failed" 2
sox -n -r 8000 -c 1 -b 16 "$WORK/beep.wav" synth 0.5 sine 1000 vol 0.3 || die "sox failed" 2
sox "$WORK/greeting.wav" "$WORK/beep.wav" "$WORK/voicemail.wav" || die "sox failed" 2

command -v sipp >/dev/null || die "no sipp (Debian: apt-get install sip-tester)" 2
# The trunk that challenges checks the answer against credentials made for this run (in a file only).
TRUNK_PASSWORD="pw-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sed -e "s/TRUNK_USER/parley-out/; s/TRUNK_PASSWORD/$TRUNK_PASSWORD/" scripts/tests/sipp/trunk-auth.xml > "$WORK/trunk-auth.xml"
# The trunk that refuses every answer is given credentials too: it gets one answer, then gives up.
printf 'auth:parley-out:%s\nunauthorized:parley-out:not-%s\n' "$TRUNK_PASSWORD" "$TRUNK_PASSWORD" > "$WORK/trunk-credentials"
trunks=""
for scenario in auth unauthorized 503 early-bye silent; do
    file=scripts/tests/sipp/trunk-$scenario.xml
    [[ $scenario == auth ]] && file=$WORK/trunk-auth.xml
    trunk_port=$(free_port)
    start "sipp-$scenario" timeout 90 sipp -sf "$file" -i 127.0.0.1 -p "$trunk_port" -mp "$(free_port 4)" -m 1 -nostdin \
        -trace_err -error_file "$WORK/sipp-$scenario.errors" -trace_msg -message_file "$WORK/sipp-$scenario.messages"
    trunks+=",${scenario}=sip:+15557654321@127.0.0.1:$trunk_port"
done

start callee timeout 120 .venv-sip/bin/python scripts/tests/sip_callee.py --hello "$WORK/hello.wav" --voicemail "$WORK/voicemail.wav" --log "$WORK/pjsua.log" --seconds 90
wait_until callee "its SIP port said" grep -q '^port ' "$LOGS/callee.log"
callee_port=$(grep -m1 '^port ' "$LOGS/callee.log" | cut -d' ' -f2)

# Trunks with limits, from the trunks file: one call at once (to a port where nothing answers, so
# the call it admits rings on), and one call a minute.
cat > "$WORK/outbound-trunks.json" <<JSON
{"one-at-a-time": {"uri": "sip:127.0.0.1:$(free_port)", "max_calls": 1},
 "one-a-minute": {"uri": "sip:127.0.0.1:$(free_port)", "calls_per_second": 0.0167}}
JSON
# A trunk that takes INVITEs and never answers (sip_dial_out.py listens on its port): unreachable at
# timer B, and no CANCEL sent (issue 73).
blackhole=$(free_port)
trunks+=",blackhole=sip:+15557654321@127.0.0.1:$blackhole"
sip=$(free_port)
start_parley server serve 0 --loops 1 --sip-port "$sip" --sip-host 127.0.0.1 --sip-media-timeout 3 \
    --sip-trunk "test=sip:+15557654321@127.0.0.1:$callee_port$trunks" --sip-trunk-credentials-file "$WORK/trunk-credentials" \
    --sip-outbound-trunks "$WORK/outbound-trunks.json"
wait_speech_helper server "http://127.0.0.1:$port"

status=0
timeout 120 .venv-sdk/bin/python scripts/tests/sip_dial_out.py --url "http://127.0.0.1:$port" --blackhole-port "$blackhole" || status=$?
finish callee || status=$?
grep -E '^(ok|FAIL|note)' "$LOGS/callee.log" >&2 || true
for scenario in auth unauthorized 503 early-bye silent; do
    sipp_status=0
    finish "sipp-$scenario" || sipp_status=$?
    if [[ $sipp_status -eq 0 ]]; then
        echo "ok   SIPp's trunk-$scenario scenario ran to its end" >&2
    else
        echo "FAIL SIPp's trunk-$scenario scenario did not end as written (exit $sipp_status): $(tail -3 "$WORK/sipp-$scenario.errors" 2>/dev/null | tr '\n' ' ')" >&2
        grep -E "^(SIP/2.0|[A-Z]+ sip:|CSeq|-----)" "$WORK/sipp-$scenario.messages" >&2 || true
        status=1
    fi
done
# The message Parley left on the voicemail, as the recogniser hears it in the callee's recording.
if [[ $status -eq 0 ]]; then
    left=$(timeout 120 .venv-speech/bin/python scripts/tests/recognise.py "$WORK/pjsua.log.heard.wav.5.wav" | tr '[:upper:]' '[:lower:]')
    if [[ "$left" == *order* && "$left" == *call* ]]; then
        echo "ok   the recogniser hears the message left after the beep (\"$left\")" >&2
    else
        echo "FAIL the recogniser heard \"$left\" in the voicemail's recording" >&2
        status=1
    fi
fi
grep -qF "$TRUNK_PASSWORD" "$LOGS/server.log" && die "the trunk's password reached the server's log"
if [[ $status -ne 0 ]]; then
    logs server
    die "calls out failed (see the FAIL lines above)"
fi
stop server
say "passed: calls placed through a trunk: answered and talked to, busy, unanswered"
