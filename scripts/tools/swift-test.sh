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

# Shards (issue 50): Swift Testing runs a process's tests on the cooperative pool, one thread a
# core, so on two cores two tests run at once, and a test that waits (a server starting, a helper
# answering) holds one of the two while the cores idle: measured, 343 s of wall time for 257 s of
# CPU. SHARDS processes (default 4) each run every SHARDS-th suite, so that up to 2 × SHARDS tests
# run at once: the phase took 242 s in three and 210 s in four, the same day (2026-11-27). A run
# given --filter or --skip is one process.
shards=${SHARDS:-4}
case " $* " in *" --filter "*|*" --skip "*) shards=1 ;; esac
case " $* " in *" --skip-build "*) ;; *) shards=1 ;; esac

status=0
if [ "$shards" -le 1 ]; then
  log=$LOGS/swift-test.log
  "${SWIFT:-swift}" test "$@" 2>&1 | tee "$log" || status=$?
  logs=("$log")
else
  mapfile -t suites < <("${SWIFT:-swift}" test list "$@" 2>/dev/null | sed -E 's#/.*##' | sort -u)
  if [ "${#suites[@]}" -eq 0 ]; then
    echo "swift-test: swift test list found no suites (is the build there?)" >&2
    exit 1
  fi
  pids=() logs=()
  for ((i = 0; i < shards; i++)); do
    pattern=""
    for ((j = i; j < ${#suites[@]}; j += shards)); do pattern+="${pattern:+|}${suites[j]//./\\.}"; done
    logs+=("$LOGS/swift-test-$i.log")
    # --ignore-lock: SwiftPM holds .build's lock for a whole `swift test`, so the shards would run
    # one after another; with --skip-build none of them writes there.
    "${SWIFT:-swift}" test "$@" --ignore-lock --filter "^($pattern)/" > "$LOGS/swift-test-$i.log" 2>&1 &
    pids+=($!)
  done
  say "${#suites[@]} suites in $shards processes"
  for ((i = 0; i < shards; i++)); do
    shard_status=0
    wait "${pids[i]}" || shard_status=$?
    summary=$(grep -E '^. Test run with' "${logs[i]}" | tail -1)
    echo "swift-test: shard $((i + 1)) of $shards: ${summary:-no summary (status $shard_status)}"
    [ "$shard_status" -eq 0 ] || status=$shard_status
  done
fi
if [ "$status" -ne 0 ]; then
  echo "swift-test: FAILED (status $status); the issues recorded, each cut at 800 characters:" >&2
  cat "${logs[@]}" | grep -E '^✘ Test .* recorded an issue|error: |Fatal error|crashed' | cut -c1-800 | head -40 >&2 || true
  for log in "${logs[@]}"; do
    grep -qE '^✘|error: |Fatal error|crashed' "$log" && { echo "--- the last lines of $log:" >&2; tail -20 "$log" >&2; }
  done
fi
exit "$status"
