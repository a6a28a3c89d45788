#!/usr/bin/env bash
# The example eval scripts (LoadTests/evals/*.eval) run by `parley-load eval` against a real
# `parley serve` with the embedded pipeline (Silero and Smart Turn, Whisper, the built-in agent,
# Piper), speech made by Piper and espeak-ng in several voices; then a script that must fail, to
# show a failed expectation fails the run and its JUnit case. Run by `make test`.
#
#   scripts/tests/eval-test.sh                 # uses .build/debug/parley and parley-load
#   JUNIT=eval.xml scripts/tests/eval-test.sh  # keeps the JUnit XML
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
LOAD_BIN="${LOAD_BIN:-.build/debug/parley-load}"
[[ -x "$PARLEY_BIN" && -x "$LOAD_BIN" ]] || die "no binaries at $PARLEY_BIN and $LOAD_BIN (build them with: swift build)" 2

# The server waits for its speech helper (Whisper, Piper, Smart Turn) before it listens.
WAIT_SECONDS=60 start_parley server serve 0
grep -q 'speech: whisper in' "$LOGS/server.log" || say "note: the server is not hearing with Whisper: $(grep -m1 'listening on' "$LOGS/server.log")"

JUNIT="${JUNIT:-$WORK/eval.xml}"
"$LOAD_BIN" eval LoadTests/evals/*.eval --url "ws://127.0.0.1:$port" --junit "$JUNIT" | tee "$WORK/eval.out" \
    || { logs server; die "an example eval failed (above)"; }
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
if "$LOAD_BIN" eval "$WORK/wrong.eval" --url "ws://127.0.0.1:$port" --junit "$WORK/wrong.xml" > "$WORK/wrong.out"; then
    cat "$WORK/wrong.out"; die "a false expectation passed the run"
fi
cat "$WORK/wrong.out"
grep -q '^eval: 1 passed, 1 failed$' "$WORK/wrong.out" || die "the false expectation was not the one failure"
grep -q '<failure message="replied &quot;2 plus 2 is 4.&quot;"/>' "$WORK/wrong.xml" || die "the JUnit failure does not say what was replied"
say "all checks passed"
