#!/usr/bin/env bash
# Secure trunks (issue 54, its fourth part) and calls out over TCP and TLS: a Parley server with a
# certificate (its TLS port for SIP, https for its API) and --sip-srtp required, and pjsua2 phones
# (PyPI's pjsua2-python, with its own TLS and SRTP: scripts/tests/sip_secure.py) on loopback. Parley
# calls one phone through a TCP trunk and one through a TLS trunk with SRTP (a phone that takes
# SRTP only); a phone with SRTP calls Parley over TLS and hears its greeting; a plain offer over TLS
# and SDES keys over UDP are refused 488. The certificates are made here (openssl), signed by a CA
# each side verifies the other against. Run by `make test`.
#
# Environment: PARLEY_BIN (.build/debug/parley).
# Exit status: 0 passed; 1 a check failed; 2 setup failed.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

scripts/tools/install-deps.sh || die "the packages could not be installed" 2
venv_sip

espeak-ng -v en-us -s 140 -w "$WORK/espeak.wav" "Hello? Who is calling?" || die "espeak-ng failed" 2
sox "$WORK/espeak.wav" -r 8000 -c 1 -b 16 "$WORK/hello.wav" || die "sox failed" 2

# A CA, and one certificate for 127.0.0.1 that Parley and the phones both present (RSA: the
# phones' OpenSSL 1.0.2 and Parley's agree on it at TLS 1.2).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=SIP test CA" -keyout "$WORK/ca.key" -out "$WORK/ca.pem" >/dev/null 2>&1 \
    || die "openssl could not make the test CA" 2
openssl req -new -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$WORK/server.key" -out "$WORK/server.csr" >/dev/null 2>&1 || die "openssl could not make the key" 2
openssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial -days 1 \
    -copy_extensions copyall -out "$WORK/server.pem" >/dev/null 2>&1 || die "openssl could not sign the certificate" 2
export CURL_CA_BUNDLE="$WORK/ca.pem"

sip=$(free_port)
sip_tls=$(free_port)
start phones timeout 180 .venv-sip/bin/python scripts/tests/sip_secure.py --ca "$WORK/ca.pem" \
    --cert "$WORK/server.pem" --key "$WORK/server.key" --sip-tls-port "$sip_tls" --sip-port "$sip" --hello "$WORK/hello.wav" \
    --log "$WORK/pjsua.log" --ports-file "$WORK/phone-ports" --go-file "$WORK/go"
wait_until phones "its TCP and TLS ports said" test -s "$WORK/phone-ports"
read -r tcp_port tls_port < "$WORK/phone-ports"
cat > "$WORK/trunks.json" <<JSON
{"tcp": {"uri": "sip:+15557654321@127.0.0.1:$tcp_port;transport=tcp"},
 "tls": {"uri": "sip:+15557654321@127.0.0.1:$tls_port;transport=tls", "ca_file": "$WORK/ca.pem", "srtp": true}}
JSON
start_parley server serve 0 --loops 1 --tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key" \
    --sip-port "$sip" --sip-tls-port "$sip_tls" --sip-host 127.0.0.1 --sip-srtp required \
    --sip-outbound-trunks "$WORK/trunks.json" --sip-greeting "Hello, this is Parley on a secure line. How can I help you today?"
wait_speech_helper server "https://127.0.0.1:$port"
# The phones learn the API's port last (the server chose it).
echo "$port" > "$WORK/go.tmp" && mv "$WORK/go.tmp" "$WORK/go"

status=0
finish phones || status=$?
grep -E '^(ok|FAIL|note)' "$LOGS/phones.log" >&2 || true
srtp_failures=$(curl -s "https://127.0.0.1:$port/metrics" | sed -n 's/^parley_sip_rtp_dropped_total{reason="srtp"} //p')
if [[ ${srtp_failures:-0} -gt 5 ]]; then
    echo "FAIL SRTP packets that failed their check: $srtp_failures" >&2
    status=1
fi
if [[ $status -ne 0 ]]; then
    grep -E "SRTP|RX pt|TX pt|total .*pkt" "$WORK/pjsua.log" | tail -20 >&2 || true
    logs server
    die "secure calls failed (see the FAIL lines above)"
fi
stop server
say "passed: calls out over TCP and TLS, SRTP both ways, plain offers refused"
