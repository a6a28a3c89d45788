#!/usr/bin/env bash
# A real round trip with the official openai Python SDK's realtime clients (GA, and beta while the
# SDK has it) against a Parley server started here on loopback. Run by `make test` after the
# Swift tests; the checks themselves are in scripts/realtime_sdk_client.py.
#
# Usage:
#   scripts/realtime-sdk-test.sh                               # uses .build/debug/parley
#   PARLEY_BIN=.build-sdk/debug/parley scripts/realtime-sdk-test.sh
#
# Environment:
#   PARLEY_BIN    server binary (default: .build/debug/parley; build it with `swift build`)
#   PYTHON3       Python 3 for the venv (default: python3)
#   SDK_TIMEOUT   seconds for each wait in the client (default: 10)
#
# The venv .venv-sdk is made once and reused while its marker file names the same pinned versions.
# Exit status: 0 all checks passed; 1 a check failed; 2 setup failed (venv, PyPI, server start).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"
PYTHON3="${PYTHON3:-python3}"
SDK_TIMEOUT="${SDK_TIMEOUT:-10}"

# The newest openai release at the time of writing; websockets is its `realtime` extra, pinned too.
OPENAI_VERSION="3.54.0"
WEBSOCKETS_VERSION="15.0.1"
VENV="$ROOT/.venv-sdk"
MARKER="$VENV/.parley-sdk-pins"
PINS="openai[realtime]==$OPENAI_VERSION websockets==$WEBSOCKETS_VERSION"

say() { echo "realtime-sdk-test: $*"; }
die() { echo "realtime-sdk-test: FAILED: $1" >&2; exit "${2:-1}"; }

# --- the venv, cached -----------------------------------------------------------------------------
if [[ ! -x "$VENV/bin/python" || "$(cat "$MARKER" 2>/dev/null)" != "$PINS" ]]; then
    say "installing $PINS into .venv-sdk (once)"
    rm -rf "$VENV"
    "$PYTHON3" -m venv "$VENV" || die "could not create the venv with $PYTHON3 -m venv (Debian: apt-get install python3-venv)" 2
    # shellcheck disable=SC2086
    pip_status=0
    timeout 300 "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINS || pip_status=$?
    if [[ $pip_status -ne 0 ]]; then
        rm -rf "$VENV"
        [[ $pip_status -eq 124 ]] && die "pip install $PINS did not finish within 300 s (is PyPI reachable from this machine?)" 2
        die "pip could not install $PINS from PyPI (exit $pip_status; is PyPI reachable from this machine? see pip's message above)" 2
    fi
    echo "$PINS" > "$MARKER"
fi

# --- the server -----------------------------------------------------------------------------------
[[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build)" 2

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$PARLEY_BIN" serve --host 127.0.0.1 --port 0 --loops 1 > "$WORK/server.out" 2> "$WORK/server.err" &
SERVER_PID=$!

server_log() { echo "--- server stdout:"; cat "$WORK/server.out"; echo "--- server stderr:"; cat "$WORK/server.err"; } >&2

PORT=""
for _ in $(seq 100); do   # up to 10 s for the first line
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then server_log; die "$PARLEY_BIN exited before listening" 2; fi
    line="$(head -n 1 "$WORK/server.out")"
    if [[ "$line" =~ ^parley\ listening\ on\ http://127\.0\.0\.1:([0-9]+)/ ]]; then PORT="${BASH_REMATCH[1]}"; break; fi
    sleep 0.1
done
[[ -n "$PORT" ]] || { server_log; die "no 'parley listening on http://127.0.0.1:PORT/' line from the server within 10 s" 2; }

healthy=""
for _ in $(seq 50); do   # up to about 10 s
    if curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then healthy=1; break; fi
    sleep 0.1
done
[[ -n "$healthy" ]] || { server_log; die "http://127.0.0.1:$PORT/healthz did not answer 200" 2; }
say "$PARLEY_BIN serving on 127.0.0.1:$PORT"

# --- the clients ----------------------------------------------------------------------------------
status=0
timeout 120 "$VENV/bin/python" scripts/realtime_sdk_client.py --base-url "http://127.0.0.1:$PORT/v1" --timeout "$SDK_TIMEOUT" \
    || status=$?
if [[ $status -ne 0 ]]; then
    server_log
    [[ $status -eq 124 ]] && die "the SDK client did not finish within 120 s"
    die "SDK round trip against Parley failed (exit $status; see the FAIL lines above)"
fi
kill -0 "$SERVER_PID" 2>/dev/null || { server_log; die "the server died during the run"; }
say "passed (openai $OPENAI_VERSION)"
