#!/usr/bin/env bash
# make bench-cork: what corking buys on the many-small-streams load. Each server given is run in
# turn under the same paced echo load, CONNECTIONS connections × RATE frames/s each (2,000 × 50 by
# default, one 32-byte text frame at a time), and again with the frames sent BATCH at a time (one
# client write every BATCH/RATE s, so the server reads several frames at once and may answer with
# one write or several). For each run it prints, over fixed windows of WINDOW seconds once every
# connection is open and WARMUP seconds have passed:
#
#   syscalls/msg   the server's system calls (perf stat on raw_syscalls:sys_enter, all threads)
#                  over the messages echoed while perf counted; a second window, so that perf's own
#                  cost does not touch the CPU figure; the writes and reads among them, by name
#   server µs/msg  server CPU (user+sys from /proc/PID/stat) over the messages echoed
#   client         the load client's CPU in the same window, as a share of one core
#   steal, busy    vmstat's st and 100-id over the window: the machine's contention
#
# Messages in a window are counted from the kernel's side: the bytes the server's sockets sent and
# had acknowledged in it (tcp_info's bytes_acked, summed by ss over every connection) over the size
# of one echoed frame (FRAME_BYTES, 34 for the 32-byte text frames sent here): what the server
# wrote in the window, the same count for every server, whatever it reports itself. The client's
# own summary (p99, errors) is kept too.
#
#   scripts/benchmarks/bench-cork.sh BEFORE_DIR AFTER_DIR [UWS_ECHO]
#
# BEFORE_DIR and AFTER_DIR hold a `parley` binary each (a release build of main and of this
# branch, say); UWS_ECHO is an optional uWebSockets echo server taking its port as its only
# argument (docs/benchmarks.md says how the one measured was built). parley-load comes from LOAD
# (default .build/release/parley-load; it needs --rate). Every process is bounded and stopped.
#
#   CONNECTIONS=2000 RATE=50 BATCHES="1 5" WARMUP=3 WINDOW=5 LOOPS=1 PORT=9300 scripts/benchmarks/bench-cork.sh ...
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

[ $# -ge 2 ] || usage
BEFORE="$1"; AFTER="$2"; UWS="${3:-}"
LOAD="${LOAD:-.build/release/parley-load}"
CONNECTIONS="${CONNECTIONS:-2000}"
RATE="${RATE:-50}"
BATCHES="${BATCHES:-1 5}"
WARMUP="${WARMUP:-3}"
WINDOW="${WINDOW:-5}"
LOOPS="${LOOPS:-1}"  # uWebSockets runs one thread; so does Parley here, unless told
PORT="${PORT:-9300}"
OUT="LoadTests/reports/bench-cork-$(date -u +%Y%m%dT%H%M%SZ)"
LOGS="$OUT"
mkdir -p "$OUT"

for binary in "$BEFORE/parley" "$AFTER/parley" "$LOAD" ${UWS:+"$UWS"}; do
  [ -x "$binary" ] || die "$binary is missing or not executable" 2
done
command -v perf >/dev/null || die "perf is missing (apt-get install linux-perf)" 2
command -v vmstat >/dev/null || die "vmstat is missing (apt-get install procps)" 2

ticks=$(getconf CLK_TCK)
# user+sys ticks of process $1, all threads
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
established() { ss -Htn state established "( sport = :$1 )" | wc -l; }
FRAME_BYTES="${FRAME_BYTES:-34}"
# bytes sent and acknowledged so far by every established connection on server port $1
sent() { ss -Hti state established "( sport = :$1 )" | grep -o 'bytes_acked:[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }'; }

# One run: server command in "$@", label $1, port $2, batch $3.
run() {
  local label=$1 port=$2 batch=$3; shift 3
  local log="$OUT/$label-batch$batch"
  start "$label-batch$batch.server" "$@"
  local server=$pid
  wait_port "$label-batch$batch.server" "$port"
  # The load measures from the end of its warm-up for two windows and a margin; the windows here
  # start once every connection is open and the warm-up has passed, so they fall inside its own.
  local duration=$((2 * WINDOW + 3))
  start "$label-batch$batch.load" "$LOAD" echo --url "ws://127.0.0.1:$port/echo" --connections "$CONNECTIONS" --rate "$RATE" \
    --batch "$batch" --warmup "$WARMUP" --duration "$duration" --connect-timeout 30 --server-pid "$server" --json "$log.json"
  local load=$pid
  for _ in $(seq 300); do
    [ "$(established "$port")" -ge "$CONNECTIONS" ] && break
    sleep 0.1
  done
  sleep "$WARMUP"; sleep 0.5

  # Window A: CPU (server and client) and the machine's steal, nothing attached to the server.
  local s0 c0 s1 c1 a0 a1 b0 b1 tb0 tb1
  a0=$(sent "$port"); s0=$(cpu_ticks "$server"); c0=$(cpu_ticks "$load")
  vmstat 1 "$((WINDOW + 1))" > "$log.vmstat" &
  sleep "$WINDOW"
  s1=$(cpu_ticks "$server"); c1=$(cpu_ticks "$load"); a1=$(sent "$port")
  wait $! || true
  b0=$(sent "$port"); tb0=$(date +%s.%N)
  # Window B: system calls, by perf's tracepoint counters (in-kernel counts, no ptrace stops).
  perf stat -x, -p "$server" \
    -e raw_syscalls:sys_enter,syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_ctl \
    -- sleep "$WINDOW" 2> "$log.perf" || true
  b1=$(sent "$port"); tb1=$(date +%s.%N)

  finish "$label-batch$batch.load" || true
  stop "$label-batch$batch.server" || true

  python3 - "$log" "$label" "$batch" "$WINDOW" "$ticks" "$s0" "$s1" "$c0" "$c1" "$CONNECTIONS" "$RATE" \
    "$((a1 - a0))" "$((b1 - b0))" "$FRAME_BYTES" "$tb0" "$tb1" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
log, label, batch, window, ticks, s0, s1, c0, c1, connections, rate, bytes_a, bytes_b, frame, tb0, tb1 = sys.argv[1:]
window, ticks = float(window), float(ticks)
messages_a = float(bytes_a) / float(frame)  # the CPU window
# perf counts while its `sleep WINDOW` runs, which starts only once perf has attached (a few hundred
# ms after tb0): the messages of that window are the rate between tb0 and tb1 times WINDOW.
messages_b = float(bytes_b) / float(frame) / (float(tb1) - float(tb0)) * window
try:
    summary = json.load(open(log + ".json"))
    client_rate = summary["result"]["messages_per_second"]
    p99 = summary["latency_ns"]["p99"] / 1e6
    errors = summary["errors"]
except Exception as e:
    client_rate, p99, errors = 0.0, float("nan"), "no summary (%s)" % e
counts = {}
for line in open(log + ".perf"):
    parts = line.strip().split(",")
    if len(parts) > 2 and parts[0].replace(".", "").isdigit():
        counts[parts[2].split(":")[-1].replace("sys_enter_", "")] = float(parts[0])
rows = [l.split() for l in open(log + ".vmstat") if l.split() and l.split()[0].isdigit()][1:]  # the first row is since boot
steal = sum(float(r[16]) for r in rows) / len(rows) if rows else float("nan")
busy = sum(100 - float(r[14]) for r in rows) / len(rows) if rows else float("nan")
server_us = (float(s1) - float(s0)) / ticks * 1e6
client_cores = (float(c1) - float(c0)) / ticks / window
per = lambda n: n / messages_b if messages_b else float("nan")
total = counts.get("raw_syscalls:sys_enter", counts.get("sys_enter", 0))
writes = sum(counts.get(k, 0) for k in ("write", "writev", "sendto", "sendmsg"))
reads = sum(counts.get(k, 0) for k in ("read", "recvfrom"))
waits = sum(counts.get(k, 0) for k in ("epoll_wait", "epoll_pwait"))
print("%-6s batch %-2s %7.0f msg/s (target %d)  syscalls/msg %4.2f (writes %4.2f, reads %4.2f, epoll_wait %4.2f, epoll_ctl %4.2f)  server %5.2f µs/msg  client %4.2f cores  steal %4.1f%%  busy %3.0f%%  p99 %.2f ms  errors %s"
      % (label, batch, messages_a / window, int(connections) * int(rate), per(total), per(writes), per(reads), per(waits), per(counts.get("epoll_ctl", 0)),
         server_us / messages_a if messages_a else float("nan"), client_cores, steal, busy, p99, errors))
EOF
}

echo "bench-cork: $CONNECTIONS connections × $RATE frames/s, batches: $BATCHES; windows of $WINDOW s after $WARMUP s; parley --loops $LOOPS; $(nproc) cores; $OUT"
for batch in $BATCHES; do
  run before "$PORT" "$batch" "$BEFORE/parley" serve --host 127.0.0.1 --port "$PORT" --loops "$LOOPS"
  run after "$((PORT + 1))" "$batch" "$AFTER/parley" serve --host 127.0.0.1 --port "$((PORT + 1))" --loops "$LOOPS"
  if [ -n "$UWS" ]; then
    run uws "$((PORT + 2))" "$batch" "$UWS" "$((PORT + 2))"
  fi
done
