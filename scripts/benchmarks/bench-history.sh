#!/usr/bin/env bash
# make bench-history: what a session's conversation history costs, against the text it holds.
# Each server given (a directory holding a `parley` binary: a build of an older commit, say, and
# this one) is started in turn with one loop and no speech, SESSIONS sessions are opened, each
# given MESSAGES text items of BYTES bytes (no responses), and the server's resident memory and
# accounted bytes are read against the same sessions idle (`parley-load history`, from LOAD: the
# parley-load of the first DIR by default). Prints a line per server, with vmstat's steal over the run.
#
#   SESSIONS=1000 MESSAGES=64 BYTES=94 PORT=9350 scripts/benchmarks/bench-history.sh DIR [DIR...]
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
[ $# -ge 1 ] || usage
LOAD="${LOAD:-$1/parley-load}"
[ -x "$LOAD" ] || die "$LOAD is missing; run 'swift build -c release' (or give LOAD)" 2
SESSIONS="${SESSIONS:-1000}"; MESSAGES="${MESSAGES:-64}"; BYTES="${BYTES:-94}"; PORT="${PORT:-9350}"
for dir in "$@"; do
  PARLEY_BIN="$dir/parley" start_parley server serve "$PORT" --loops 1 --transcriber none --synthesizer none --turn-model none \
    --vad energy --log-level warning
  server=$pid
  start vmstat vmstat 1 30
  figures=$("$LOAD" history "$SESSIONS" --messages "$MESSAGES" --bytes "$BYTES" --url "ws://127.0.0.1:$PORT/v1/realtime" --server-pid "$server")
  stop vmstat || true
  steal=$(awk 'NR>3 {s+=$17; n++} END {printf "%.1f", n ? s/n : 0}' "$LOGS/vmstat.log")
  echo "$dir: $figures steal=$steal%"
  stop server || true
done
