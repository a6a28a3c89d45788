#!/usr/bin/env bash
# Calls out through a trunk nobody here wrote (issue 54): Kamailio (Debian's kamailio, configured
# by scripts/tests/kamailio/trunk.cfg) as the registrar and trunk on loopback. Parley registers at
# it (--sip-outbound-trunks with register_seconds: a digest challenge answered), places a call
# through it (its INVITE challenged 407 and answered) to a pjsua2 phone registered there, which
# hears the agent answer its hello; a phone's call to Parley's number is routed by Kamailio to
# Parley's registered contact and hears the greeting (scripts/tests/sip_kamailio.py). The agent's
# answer is then heard back by the recogniser (Whisper tiny.en, recognise.py). Run by `make test`.
#
# Environment: PARLEY_BIN (.build/debug/parley).
# Exit status: 0 passed; 1 a check failed; 2 setup failed.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

scripts/tools/install-deps.sh kamailio || die "the packages could not be installed" 2
venv_sip
[[ -x .venv-speech/bin/python ]] || die "no .venv-speech (the speech helper's venv, made as the server first starts)" 2

espeak-ng -v en-gb+f2 -s 150 -w "$WORK/espeak.wav" "Hello? Who is this?" || die "espeak-ng failed" 2
sox "$WORK/espeak.wav" -r 8000 -c 1 -b 16 "$WORK/hello.wav" || die "sox failed" 2

secret() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
parley_password="pw-$(secret)"
phone_password="pw-$(secret)"
number=+15557654321
kamailio_port=$(free_port)
sed -e "s/PORT/$kamailio_port/; s/PARLEY_USER/$number/g; s/PARLEY_PASSWORD/$parley_password/g; s/PHONE_PASSWORD/$phone_password/" \
    scripts/tests/kamailio/trunk.cfg > "$WORK/kamailio.cfg"
kamailio -c -f "$WORK/kamailio.cfg" >"$WORK/kamailio-check.log" 2>&1 || { cat "$WORK/kamailio-check.log" >&2; die "Kamailio refused its configuration" 2; }
start kamailio kamailio -f "$WORK/kamailio.cfg" -DD -E -m 32 -M 4 -P "$WORK/kamailio.pid" -Y "$WORK"
wait_until kamailio "listening" grep -q "INFO" "$LOGS/kamailio.log"

cat > "$WORK/trunks.json" <<JSON
{"kamailio": {"uri": "sip:$number@127.0.0.1:$kamailio_port", "username": "$number", "password": "$parley_password", "register_seconds": 120}}
JSON
sip=$(free_port)
start_parley server serve 0 --loops 1 --sip-port "$sip" --sip-host 127.0.0.1 --sip-outbound-trunks "$WORK/trunks.json" \
    --sip-greeting "Hello, this is Parley. You reached me through Kamailio. How can I help?"
wait_speech_helper server "http://127.0.0.1:$port"

status=0
timeout 120 .venv-sip/bin/python scripts/tests/sip_kamailio.py --url "http://127.0.0.1:$port" --kamailio-port "$kamailio_port" \
    --parley-number "$number" --phone-password "$phone_password" --hello "$WORK/hello.wav" --log "$WORK/pjsua.log" || status=$?
if [[ $status -eq 0 ]]; then
    # What the phone heard of the agent, and the caller of the greeting, as words.
    mapfile -t heard < <(timeout 120 .venv-speech/bin/python scripts/tests/recognise.py "$WORK/pjsua.log.callee.wav" "$WORK/pjsua.log.caller.wav" | tr '[:upper:]' '[:lower:]')
    if [[ "${heard[1]:-}" == *kamailio* || "${heard[1]:-}" == *help* ]] && [[ $(wc -w <<<"${heard[0]:-}") -ge 3 ]]; then
        echo "ok   the recogniser hears the agent's answer (\"${heard[0]}\") and the greeting (\"${heard[1]}\")" >&2
    else
        echo "FAIL the recogniser heard \"${heard[0]:-}\" from the agent and \"${heard[1]:-}\" of the greeting" >&2
        status=1
    fi
fi
# Kamailio let Parley's INVITE through only once it answered the proxy challenge.
if grep -q "routing INVITE from $number" "$LOGS/kamailio.log"; then
    echo "ok   Kamailio routed Parley's INVITE once its 407 was answered" >&2
else
    echo "FAIL Kamailio never routed an authenticated INVITE from Parley" >&2
    status=1
fi
grep -qF "$parley_password" "$LOGS/server.log" && die "the trunk's password reached the server's log"
if [[ $status -ne 0 ]]; then
    logs kamailio
    logs server
    die "calls through Kamailio failed (see the FAIL lines above)"
fi
stop server
stop kamailio
say "passed: registered at Kamailio, a call out through it and a call in from it"
