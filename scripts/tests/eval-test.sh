#!/usr/bin/env bash
# The example eval scripts (LoadTests/evals/*.eval) run by `parley-load eval` against a real
# `parley serve` with the embedded pipeline (Silero and Smart Turn, Whisper, the built-in agent,
# Piper), speech made by Piper and espeak-ng in several voices; then a script that must fail, to
# show a failed expectation fails the run and its JUnit case. Run by `make test`.
#
#   scripts/tests/eval-test.sh                 # uses .build/debug/parley and parley-load
#   JUNIT=eval.xml scripts/tests/eval-test.sh  # keeps the JUnit XML
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"
LOAD_BIN="${LOAD_BIN:-.build/debug/parley-load}"
say() { echo "eval-test: $*"; }
die() { echo "eval-test: FAILED: $1" >&2; exit "${2:-1}"; }
# shellcheck source=scripts/lib/sdk-common.sh
source scripts/lib/sdk-common.sh
[[ -x "$PARLEY_BIN" && -x "$LOAD_BIN" ]] || die "no binaries at $PARLEY_BIN and $LOAD_BIN (build them with: swift build)" 2

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() { stop "$SERVER_PID"; rm -rf "$WORK"; }
trap cleanup EXIT
logs() { echo "--- server log (last 40 lines):"; tail -40 "$WORK/server.err"; } >&2

# The server waits for its speech helper (Whisper, Piper, Smart Turn) before it listens.
"$PARLEY_BIN" serve --host 127.0.0.1 --port 0 > "$WORK/server.out" 2> "$WORK/server.err" &
SERVER_PID=$!
wait_listening "$SERVER_PID" "$WORK/server.out" '^parley listening on http://127\.0\.0\.1:([0-9]+)' "parley serve" 60
grep -q 'speech: whisper in' "$WORK/server.out" || say "note: the server is not hearing with Whisper: $(head -n 1 "$WORK/server.out")"

JUNIT="${JUNIT:-$WORK/eval.xml}"
"$LOAD_BIN" eval LoadTests/evals/*.eval --url "ws://127.0.0.1:$PORT" --junit "$JUNIT" | tee "$WORK/eval.out" \
    || { logs; die "an example eval failed (above)"; }
grep -Eq '^eval: [1-9][0-9]* passed, 0 failed$' "$WORK/eval.out" || die "the evals did not all pass"
grep -q '<testsuites name="parley-load eval"' "$JUNIT" || die "no JUnit XML in $JUNIT"
[[ "$(grep -c '<testsuite ' "$JUNIT")" == "$(ls LoadTests/evals/*.eval | wc -l)" ]] || die "a suite is missing from the JUnit XML"

# A script whose expectation is false must fail the run, and say what it saw.
cat > "$WORK/wrong.eval" <<'SCRIPT'
name An expectation that cannot hold
session {"output_modalities": ["text"]}
user types What is 2 plus 2?
expect reply contains 4|four
expect reply contains five
SCRIPT
if "$LOAD_BIN" eval "$WORK/wrong.eval" --url "ws://127.0.0.1:$PORT" --junit "$WORK/wrong.xml" > "$WORK/wrong.out"; then
    cat "$WORK/wrong.out"; die "a false expectation passed the run"
fi
cat "$WORK/wrong.out"
grep -q '^eval: 1 passed, 1 failed$' "$WORK/wrong.out" || die "the false expectation was not the one failure"
grep -q '<failure message="replied &quot;2 plus 2 is 4.&quot;"/>' "$WORK/wrong.xml" || die "the JUnit failure does not say what was replied"
say "all checks passed"
