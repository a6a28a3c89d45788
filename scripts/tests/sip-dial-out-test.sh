#!/usr/bin/env bash
# Calls out (issue 54, its first part): a Parley server places phone calls through a trunk, over
# SIP, to pjsua2 callees (scripts/tests/sip_callee.py, PyPI's pjsua2-python): an application
# (scripts/tests/sip_dial_out.py) posts each call to /v1/realtime/calls with a SIP transport and
# watches it on its sideband. One callee answers and says hello, and the session answers it; one is
# busy (486); one never answers (cancelled at its ring timeout). Refusals and /metrics checked too.
# The trunk is the callees' own SIP port on loopback (no proxy in between yet). Run by `make test`.
#
# Environment: PARLEY_BIN (.build/debug/parley).
# Exit status: 0 passed; 1 a check failed; 2 setup failed.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

scripts/tools/install-deps.sh || die "the packages could not be installed" 2
pinned_venv "$ROOT/.venv-sdk" "openai[realtime]==3.54.0 websockets==15.0.1"
pinned_venv "$ROOT/.venv-sip" "pjsua2-python==2.15.1"

espeak-ng -v en-gb -s 150 -w "$WORK/espeak.wav" "Hello? Who is this?" || die "espeak-ng failed" 2
sox "$WORK/espeak.wav" -r 8000 -c 1 -b 16 "$WORK/hello.wav" || die "sox failed" 2

start callee timeout 120 .venv-sip/bin/python scripts/tests/sip_callee.py --hello "$WORK/hello.wav" --log "$WORK/pjsua.log" --seconds 90
wait_until callee "its SIP port said" grep -q '^port ' "$LOGS/callee.log"
callee_port=$(grep -m1 '^port ' "$LOGS/callee.log" | cut -d' ' -f2)

sip=$(free_port)
start_parley server serve 0 --loops 1 --sip-port "$sip" --sip-host 127.0.0.1 --sip-trunk "test=sip:+15557654321@127.0.0.1:$callee_port"
wait_speech_helper server "http://127.0.0.1:$port"

status=0
timeout 120 .venv-sdk/bin/python scripts/tests/sip_dial_out.py --url "http://127.0.0.1:$port" || status=$?
finish callee || status=$?
grep -E '^(ok|FAIL|note)' "$LOGS/callee.log" >&2 || true
if [[ $status -ne 0 ]]; then
    logs server
    die "calls out failed (see the FAIL lines above)"
fi
stop server
say "passed: calls placed through a trunk: answered and talked to, busy, unanswered"
