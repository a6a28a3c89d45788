#!/usr/bin/env bash
# Calls that survive: SESSIONS resumable Realtime sessions in conversation (a text turn every
# INTERVAL s each, against `parley mock-llm`) through HAProxy in front of 3 nodes sharing a Redis
# store, while every node is restarted in turn (SIGTERM, drain, start again) and then one is
# killed with -9 and restarted. `parley-load survive` resumes every drop and at the end asks for
# every item it was told was done. Redis's CPU and bytes are read before and after, per turn.
# Then the same load, shorter, on one node with --store sqlite:PATH, killed -9 once, for SQLite's
# cost per turn (parley_store_write_seconds and bytes from /metrics). Loopback only; bounded.
#
#   SESSIONS=3000 INTERVAL=10 DURATION=150 SQLITE_DURATION=60 scripts/benchmarks/bench-survive.sh [OUT_DIR]
set -euo pipefail
SESSIONS="${SESSIONS:-3000}"
INTERVAL="${INTERVAL:-10}"
DURATION="${DURATION:-150}"
SQLITE_DURATION="${SQLITE_DURATION:-60}"
SQLITE="${SQLITE:-1}"
OUT="${1:-LoadTests/reports/survive-$(date -u +%Y%m%dT%H%M%SZ)}"
scripts/tools/install-deps.sh haproxy redis-server redis-tools
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat
ulimit -n "$(ulimit -Hn)"


# The mock model every node talks to.
start_parley mock-llm mock-llm "$(free_port)" --first-token-ms 50 --tokens-per-second 50 --reply-tokens 20
MP=$port

declare -a node_pid node_port node_args node_name node_starts
scrape=0
# start_node I: starts node I on its port (the same one after a restart), waits for /readyz. Each
# incarnation has its log: nodeI-N.log.
start_node() {
  local i=$1
  node_starts[$i]=$(( ${node_starts[$i]:-0} + 1 ))
  node_name[$i]="node$i-${node_starts[$i]}"
  # shellcheck disable=SC2086
  OPENAI_API_KEY=sk-bench start_parley "${node_name[$i]}" serve "${node_port[$i]}" --loops 1 ${node_args[$i]} \
    --llm openai --llm-base-url "http://127.0.0.1:$MP/v1" --llm-model m --transcriber none --synthesizer none \
    --drain-seconds 5 --log-level warning
  node_pid[$i]=$pid
  wait_healthy "${node_name[$i]}" "http://127.0.0.1:${node_port[$i]}/readyz"
}
# survive_load NAME URL SECONDS: the load client in the background, resuming every drop; its report in
# $OUT/NAME.txt and NAME.json once `finish NAME` has waited for it.
survive_load() {
  cmd=(survive "$SESSIONS" --url "$2" --turn-interval "$INTERVAL" --duration "$3")
  echo "\$ parley-load ${cmd[*]}" > "$OUT/$1.txt"
  start "$1" timeout $(($3 + 300)) "$BIN/parley-load" "${cmd[@]}" --json "$OUT/$1.json"
}
# load_done NAME: waits for the load client NAME, its output appended to its report.
load_done() { finish "$1" || true; cat "$OUT/$1.log" >> "$OUT/$1.txt"; rm -f "$OUT/$1.log"; }
# scrape_node I: keeps node I's /metrics (its counters die with it).
scrape_node() {
  scrape=$((scrape + 1))
  curl -fsS "http://127.0.0.1:${node_port[$1]}/metrics" > "$OUT/metrics-node$1-$scrape.txt" 2>/dev/null || true
}
# The last scrape of each incarnation: the sum over every kept file of one metric line's value.
sum_metric() { # PATTERN FILES...
  local pattern=$1; shift
  cat "$@" 2>/dev/null | awk -v p="$pattern" 'index($0, p) == 1 { s += $NF } END { printf "%.6f\n", s + 0 }'
}
vmstat_line() { wc -l < "$OUT/vmstat.log"; }

# ---------------------------------------------------------------- 3 nodes, Redis, HAProxy
RP=$(free_port)
start_redis redis "$RP"
redis=$pid

for i in 1 2 3; do
  node_port[$i]=$(free_port)
  node_args[$i]="--store redis://127.0.0.1:$RP"
  start_node "$i"
done
FRONT=$(free_port)
STATS_PORT=$(free_port) scripts/tools/haproxy-config.sh "$FRONT" "${node_port[1]}" "${node_port[2]}" "${node_port[3]}" > "$OUT/haproxy.cfg"
start haproxy haproxy -f "$OUT/haproxy.cfg" -db
wait_healthy haproxy "http://127.0.0.1:$FRONT/readyz"
log "redis :$RP (pid $redis), nodes :${node_port[1]} :${node_port[2]} :${node_port[3]}, haproxy :$FRONT, mock-llm :$MP"

redis-cli -p "$RP" INFO stats > "$OUT/redis-stats-before.txt"
redis-cli -p "$RP" INFO commandstats > "$OUT/redis-commandstats-before.txt"
redis_cpu_before=$(cpu "$redis")
declare -a node_cpu
vm_from=$(vmstat_line)
survive_load survive "ws://127.0.0.1:$FRONT/v1/realtime?resume=1" "$DURATION"
log "load client pid $pid"
sleep 20

# Rolling restart: each node drained (SIGTERM), started again on its port, ready, then the next.
for i in 1 2 3; do
  scrape_node "$i"
  node_cpu[$i]=$(cpu "${node_pid[$i]}")
  log "SIGTERM node$i (pid ${node_pid[$i]})"
  stop "${node_name[$i]}" 30 || log "node$i exited with status $? (137: still running after 30 s, so kill -9)"
  log "node$i exited"
  start_node "$i"
  log "node$i ready again (pid ${node_pid[$i]})"
  sleep 10
done
# A crash: kill -9 node 2 and start it again.
sleep 5
scrape_node 2
log "kill -9 node2 (pid ${node_pid[2]})"
kill -9 "${node_pid[2]}"
stop "${node_name[2]}" 5 || true
start_node 2
log "node2 ready again (pid ${node_pid[2]})"

load_done survive
log "load client finished"
vm_to=$(vmstat_line)
redis_cpu_after=$(cpu "$redis")
redis-cli -p "$RP" INFO stats > "$OUT/redis-stats-after.txt"
redis-cli -p "$RP" INFO commandstats > "$OUT/redis-commandstats-after.txt"
redis-cli -p "$RP" INFO memory > "$OUT/redis-memory-after.txt"
for i in 1 2 3; do scrape_node "$i"; done
cat "$OUT/survive.txt"

turns=$(json_field "$OUT/survive.json" turns_completed)
stat() { grep "^$1:" "$2" | cut -d: -f2 | tr -d '\r'; }
in_bytes=$(( $(stat total_net_input_bytes "$OUT/redis-stats-after.txt") - $(stat total_net_input_bytes "$OUT/redis-stats-before.txt") ))
out_bytes=$(( $(stat total_net_output_bytes "$OUT/redis-stats-after.txt") - $(stat total_net_output_bytes "$OUT/redis-stats-before.txt") ))
commands=$(( $(stat total_commands_processed "$OUT/redis-stats-after.txt") - $(stat total_commands_processed "$OUT/redis-stats-before.txt") ))
metrics=("$OUT"/metrics-node*.txt)
{
  echo "turns completed: $turns"
  awk -v b="$redis_cpu_before" -v a="$redis_cpu_after" -v t="$turns" -v i="$in_bytes" -v o="$out_bytes" -v c="$commands" 'BEGIN {
    if (t == 0) t = 1
    printf "redis: %.2f s CPU, %.1f µs per turn; %d bytes in (%.0f per turn), %d bytes out (%.0f per turn); %d commands (%.1f per turn)\n", a - b, (a - b) * 1e6 / t, i, i / t, o, o / t, c, c / t }'
  echo "redis commandstats after the run (before it: $OUT/redis-commandstats-before.txt):"
  grep '^cmdstat' "$OUT/redis-commandstats-after.txt" | tr -d '\r' | sed 's/^/  /'
  for r in memory store refused out_of_range; do
    echo "server resumes $r: $(sum_metric "parley_sessions_resumed_total{result=\"$r\"}" "${metrics[@]}")"
  done
  echo "server sessions expired: $(sum_metric parley_sessions_expired_total "${metrics[@]}")"
  echo "redis store writes (nodes' /metrics): $(sum_metric 'parley_store_writes_total{store="redis",result="ok"}' "${metrics[@]}"), bytes $(sum_metric 'parley_store_bytes_written_total{store="redis"}' "${metrics[@]}")"
  echo "steal (vmstat st) over the run: $(steal "$vm_from" "$vm_to")"
  echo "(resume counts: the sum of each node incarnation's last /metrics: before its SIGTERM or kill -9, and at the end)"
} | tee "$OUT/redis-summary.txt"

for i in 1 2 3; do kill -TERM "${node_pid[$i]}" 2>/dev/null || true; done
for i in 1 2 3; do stop "${node_name[$i]}" 15 || true; done

# ---------------------------------------------------------------- 1 node, SQLite
if [ "$SQLITE" = 1 ]; then
  node_port[4]=$(free_port)
  node_args[4]="--store sqlite:$OUT/store.db"
  start_node 4
  vm_from=$(vmstat_line)
  survive_load survive-sqlite "ws://127.0.0.1:${node_port[4]}/v1/realtime?resume=1" "$SQLITE_DURATION"
  sleep $((SQLITE_DURATION / 2))
  scrape_node 4
  log "sqlite: kill -9 node4 (pid ${node_pid[4]})"
  kill -9 "${node_pid[4]}"
  stop "${node_name[4]}" 5 || true
  start_node 4
  log "sqlite: node4 ready again (pid ${node_pid[4]})"
  load_done survive-sqlite
  vm_to=$(vmstat_line)
  scrape_node 4
  cat "$OUT/survive-sqlite.txt"
  turns=$(json_field "$OUT/survive-sqlite.json" turns_completed)
  m4=("$OUT"/metrics-node4-*.txt)
  {
    echo "sqlite turns completed: $turns"
    writes=$(sum_metric 'parley_store_writes_total{store="sqlite",result="ok"}' "${m4[@]}")
    bytes=$(sum_metric 'parley_store_bytes_written_total{store="sqlite"}' "${m4[@]}")
    seconds=$(sum_metric 'parley_store_write_seconds_sum{store="sqlite"}' "${m4[@]}")
    awk -v t="$turns" -v w="$writes" -v b="$bytes" -v s="$seconds" 'BEGIN { if (t == 0) t = 1
      printf "sqlite: %d writes (%.1f per turn), %.0f bytes (%.0f per turn), %.3f s writing (%.1f µs per turn, %.1f µs per write)\n", w, w / t, b, b / t, s, s * 1e6 / t, (w > 0 ? s * 1e6 / w : 0) }'
    for r in memory store refused out_of_range; do
      echo "server resumes $r: $(sum_metric "parley_sessions_resumed_total{result=\"$r\"}" "${m4[@]}")"
    done
    echo "database file: $(du -k "$OUT/store.db" | cut -f1) KiB"
    echo "steal (vmstat st) over the run: $(steal "$vm_from" "$vm_to")"
  } | tee "$OUT/sqlite-summary.txt"
  stop "${node_name[4]}" 15 || true
fi
echo "bench-survive: reports in $OUT"
