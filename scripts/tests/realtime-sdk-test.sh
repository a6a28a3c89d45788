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

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"
PYTHON3="${PYTHON3:-python3}"
SDK_TIMEOUT="${SDK_TIMEOUT:-10}"

# The newest openai release at the time of writing; websockets is its `realtime` extra, pinned too.
OPENAI_VERSION="3.54.0"
WEBSOCKETS_VERSION="15.0.1"
VENV="$ROOT/.venv-sdk"
PINS="openai[realtime]==$OPENAI_VERSION websockets==$WEBSOCKETS_VERSION"

say() { echo "realtime-sdk-test: $*"; }
die() { echo "realtime-sdk-test: FAILED: $1" >&2; exit "${2:-1}"; }

# shellcheck source=scripts/lib/sdk-common.sh
source scripts/lib/sdk-common.sh

pinned_venv "$VENV" "$PINS"

# --- the server -----------------------------------------------------------------------------------
[[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build)" 2

WORK="$(mktemp -d)"
SERVER_PID=""
MOCK_PID=""
stop_server() { stop "$SERVER_PID"; SERVER_PID=""; }
cleanup() { stop_server; stop "$MOCK_PID"; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

server_log() { echo "--- server stdout:"; cat "$WORK/server.out"; echo "--- server stderr:"; cat "$WORK/server.err"; } >&2
logs() { server_log; }

# round_trip SCHEME [client options] -- [serve options]: starts a server, waits for it, runs the
# SDK clients against it, stops it. SCHEME is http or https (the server's listening line and the
# health check follow it).
round_trip() {
    local scheme=$1; shift
    local client_options=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do client_options+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    "$PARLEY_BIN" serve --host 127.0.0.1 --port 0 --loops 1 "$@" > "$WORK/server.out" 2> "$WORK/server.err" &
    SERVER_PID=$!

    wait_listening "$SERVER_PID" "$WORK/server.out" "^parley listening on $scheme://127\\.0\\.0\\.1:([0-9]+)/" "$PARLEY_BIN"
    local port=$PORT
    wait_healthy "$scheme" "$port"
    say "$PARLEY_BIN serving $scheme on 127.0.0.1:$port"

    local status=0
    timeout 120 "$VENV/bin/python" scripts/tests/realtime_sdk_client.py --base-url "$scheme://127.0.0.1:$port/v1" \
        --timeout "$SDK_TIMEOUT" "${client_options[@]}" || status=$?
    if [[ $status -ne 0 ]]; then
        server_log
        [[ $status -eq 124 ]] && die "the SDK client did not finish within 120 s ($scheme)"
        die "SDK round trip against Parley over $scheme failed (exit $status; see the FAIL lines above)"
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || { server_log; die "the server died during the $scheme run"; }
    stop_server
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
mock_port=$MOCK_PORT
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
