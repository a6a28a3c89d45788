#!/usr/bin/env bash
# `swift test` with its arguments, and, when it fails, the issues it recorded repeated as its last
# lines: CI shows a log's tail, and a failure in a run of a thousand tests scrolls out of it.
#
# One speech helper for the run (issue 50): `parley serve --speech-helper-only` loads the default
# models once, and every `parley serve` a suite starts is given its socket (ServerProcess, unless
# the test needs a helper of its own), where each server used to load them again. SHARED_HELPER=0
# leaves every server its own; a helper that cannot start is said, and the servers start their own.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

shared_helper_said() { grep -m1 -oE 'parley speech helper at /[^ ]+' "$LOGS/speech-helper.log" 2>/dev/null | sed 's/^parley speech helper at //'; }
if [ "${SHARED_HELPER:-1}" = 1 ] && [ -z "${PARLEY_TEST_SPEECH_HELPER_SOCKET:-}" ]; then
  parley="$("${SWIFT:-swift}" build --show-bin-path)/parley"
  if [ -x "$parley" ]; then
    start speech-helper "$parley" serve --speech-helper-only --speech-capacity 0 --log-level warning
    deadline=$((SECONDS + 120))
    socket=""
    while ((SECONDS < deadline)) && kill -0 "$pid" 2>/dev/null; do
      socket=$(shared_helper_said) && [ -n "$socket" ] && break
      sleep 0.2
    done
    if [ -n "$socket" ]; then
      export PARLEY_TEST_SPEECH_HELPER_SOCKET=$socket
      say "one speech helper for the run at $socket"
    else
      say "the shared speech helper did not start within 120 s; each server starts its own"
      logs speech-helper
    fi
  fi
fi

log=$WORK/swift-test.log
status=0
"${SWIFT:-swift}" test "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
  echo "swift-test: FAILED (status $status); the issues recorded, each cut at 800 characters:" >&2
  grep -E '^✘ Test .* recorded an issue|error: |Fatal error|crashed' "$log" | cut -c1-800 | head -40 >&2 || true
fi
exit "$status"
