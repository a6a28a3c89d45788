#!/usr/bin/env bash
# A real round trip with the official openai Python SDK's realtime clients (GA, and beta while the
# SDK has it) against a Parley server started here on loopback, over ws and then over wss (with a
# CA made here by the openssl CLI), and a spoken one in G.711 µ-law. Run by `make test` after the
# Swift tests; the checks themselves are in scripts/tests/realtime_sdk_client.py.
#
# Usage:
#   scripts/tests/realtime-sdk-test.sh                               # uses .build/debug/parley
#   PARLEY_BIN=.build-sdk/debug/parley scripts/tests/realtime-sdk-test.sh
#
# Environment:
#   PARLEY_BIN    server binary (default: .build/debug/parley; build it with `swift build`)
#   PYTHON3       Python 3 for the venv (default: python3)
#   SDK_TIMEOUT   seconds for each wait in the client (default: 10)
#
# The venv .venv-sdk is made once and reused while its marker file names the same pinned versions.
# Exit status: 0 all checks passed; 1 a check failed; 2 setup failed (venv, PyPI, server start).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

SDK_TIMEOUT="${SDK_TIMEOUT:-10}"

# The newest openai release at the time of writing, with its `realtime` extra (scripts/lib/venvs.sh).
VENV="$ROOT/.venv-sdk"
venv_sdk

# round_trip SCHEME [client options] -- [serve options]: starts a server, waits for it, runs the
# SDK clients against it, stops it. SCHEME is http or https (what the server must say it serves).
round_trip() {
    local want=$1; shift
    local client_options=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do client_options+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    start_parley server serve 0 --loops 1 "$@"
    [[ "$scheme" == "$want" ]] || { logs server; die "the server listens on $scheme, not $want" 2; }
    say "$PARLEY_BIN serving $scheme on 127.0.0.1:$port"
    # Rounds that speak: their turns would queue behind the models' loading on a busy machine.
    if [[ " ${client_options[*]} " == *" --g711 "* || " ${client_options[*]} " == *" --transcription "* ]]; then
        wait_speech_helper server "$scheme://127.0.0.1:$port"
    fi

    local status=0
    timeout 120 "$VENV/bin/python" scripts/tests/realtime_sdk_client.py --base-url "$scheme://127.0.0.1:$port/v1" \
        --timeout "$SDK_TIMEOUT" "${client_options[@]}" || status=$?
    if [[ $status -ne 0 ]]; then
        logs server
        [[ $status -eq 124 ]] && die "the SDK client did not finish within 120 s ($scheme)"
        die "SDK round trip against Parley over $scheme failed (exit $status; see the FAIL lines above)"
    fi
    kill -0 "$pid" 2>/dev/null || { logs server; die "the server died during the $scheme run"; }
    stop server
}

# --- the clients, over ws and then over wss -------------------------------------------------------
round_trip http

# TLS: a CA and a server certificate it signed for 127.0.0.1, made here with the openssl CLI; the
# SDK's websockets client verifies the server against that CA.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=SDK test CA" \
    -keyout "$WORK/ca.key" -out "$WORK/ca.pem" >/dev/null 2>&1 || die "openssl could not make the test CA" 2
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$WORK/server.key" -out "$WORK/server.csr" >/dev/null 2>&1 \
    || die "openssl could not make the server key" 2
openssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial -days 1 \
    -copy_extensions copyall -out "$WORK/server.pem" >/dev/null 2>&1 || die "openssl could not sign the server certificate" 2
round_trip https --ca "$WORK/ca.pem" -- --tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key"

# Ephemeral client secrets: a server holding the SDK's key mints one; a client with only the secret
# opens a session that keeps the pinned instructions.
export PARLEY_API_KEY=sk-parley-sdk-test
round_trip http --client-secret
unset PARLEY_API_KEY

# Function calling: the server's model is parley mock-llm (started here), which calls a declared
# tool when the prompt names it and answers with the tool's output, in the OpenAI chat format and
# then in Anthropic's.
start_mock
round_trip http --tools -- --llm openai --llm-base-url "http://127.0.0.1:$mock_port/v1" --llm-model mock
# ... and the same with the model upstream speaking Anthropic's Messages API (tool_use, tool_result).
round_trip http --tools -- --llm anthropic --llm-base-url "http://127.0.0.1:$mock_port/v1" --llm-model mock

# Telephone audio: espeak-ng's speech as 8 kHz µ-law (sox), through the SDK in audio/pcmu both ways
# at real-time pace, against the server's defaults (pocketsphinx hears it, espeak-ng answers).
ulaw_speech "Good morning" "$WORK/said.ulaw"
round_trip http --g711 "$WORK/said.ulaw"
# A transcription session (?intent=transcription) on the same speech: transcripts, no response.
round_trip http --transcription "$WORK/said.ulaw"

say "passed over ws and wss, tools, G.711 and a transcription session included (openai $OPENAI_VERSION)"
