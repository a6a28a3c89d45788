#!/usr/bin/env bash
# `swift test` with its arguments, and, when it fails, the issues it recorded repeated as its last
# lines: CI shows a log's tail, and a failure in a run of a thousand tests scrolls out of it.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

log=$WORK/swift-test.log
status=0
"${SWIFT:-swift}" test "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
  echo "swift-test: FAILED (status $status); the issues recorded, each cut at 800 characters:" >&2
  grep -E '^✘ Test .* recorded an issue|error: |Fatal error|crashed' "$log" | cut -c1-800 | head -40 >&2 || true
fi
exit "$status"
