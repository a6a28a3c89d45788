#!/usr/bin/env bash
# make bench-history: what a session's conversation history costs, against the text it holds.
# Each server given (a directory holding a `parley` binary: a build of an older commit, say, and
# this one) is started in turn with one loop and no speech, SESSIONS sessions are opened, each
# given MESSAGES text items of BYTES bytes (no responses), and the server's resident memory and
# accounted bytes are read against the same sessions idle (scripts/benchmarks/bench_history.py). Prints a
# line per server, with vmstat's steal over the run.
#
#   SESSIONS=1000 MESSAGES=64 BYTES=94 PORT=9350 scripts/benchmarks/bench-history.sh DIR [DIR...]
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
SESSIONS="${SESSIONS:-1000}"; MESSAGES="${MESSAGES:-64}"; BYTES="${BYTES:-94}"; PORT="${PORT:-9350}"
for dir in "$@"; do
  "$dir/parley" serve --host 127.0.0.1 --port "$PORT" --loops 1 --transcriber none --synthesizer none --turn-model none \
    --vad energy --log-level warning > /tmp/bench-history.log 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT
  for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  vmstat 1 30 > /tmp/bench-history.vmstat &
  vm=$!
  figures=$(SERVER_PID=$pid python3 scripts/benchmarks/bench_history.py "$PORT" "$SESSIONS" "$MESSAGES" "$BYTES")
  kill $vm 2>/dev/null || true
  steal=$(awk 'NR>3 {s+=$17; n++} END {printf "%.1f", n ? s/n : 0}' /tmp/bench-history.vmstat)
  echo "$dir: $figures steal=$steal%"
  kill $pid; wait $pid 2>/dev/null || true
done
