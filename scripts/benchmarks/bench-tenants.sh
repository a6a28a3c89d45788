#!/usr/bin/env bash
# What counting a tenant's sessions beyond the process costs at session open, side by side in one
# run: the process alone (its ledger: a lock), the workers' shared table (--workers 2: a lock in
# shared memory), and Redis (--store redis://: one script before the 101, one at the close).
# Every server has API-key auth naming the tenant `bench` and --tenant-max-sessions far above the
# run, so each upgrade is counted and none refused. The client opens SESSIONS Realtime sessions at
# RATE a second, holds them HOLD seconds, and reports the handshake's p50 and p99 (connect to
# session.created) with its own CPU; RUNS rounds with the three in turn, a fresh server each.
# Loopback only; every run is bounded; vmstat (for steal, `st`) runs throughout.
#
#   SESSIONS=5000 RATE=1000 HOLD=2 RUNS=2 PORT=9680 scripts/benchmarks/bench-tenants.sh [OUT_DIR]
set -euo pipefail
PORT="${PORT:-9680}"
SESSIONS="${SESSIONS:-5000}"
RATE="${RATE:-1000}"
HOLD="${HOLD:-2}"
RUNS="${RUNS:-2}"
OUT="${1:-LoadTests/reports/tenants-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat
scripts/tools/install-deps.sh redis-server >/dev/null

CREDS="$WORK"
KEY="sk-bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "bench $KEY" > "$CREDS/keys"
REDIS_PORT=$((PORT + 9))
start_redis redis "$REDIS_PORT"

# Redis's own CPU seconds so far (user + system, from INFO).
redis_cpu() { redis-cli -p "$REDIS_PORT" info cpu | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { print s }'; }

common=(--log-level warning --transcriber none --synthesizer none --turn-model none --vad energy --api-keys "$CREDS/keys" --tenant-max-sessions 1000000)
: > "$OUT/summary.txt"
for round in $(seq "$RUNS"); do
  for mode in process workers redis; do
    port=$((PORT + 1))
    case "$mode" in
      process) start_parley "$mode-$round" serve "$port" --loops 1 "${common[@]}" ;;
      workers) start_parley "$mode-$round" serve "$port" --loops 1 "${common[@]}" --workers 2 ;;
      redis) redis-cli -p "$REDIS_PORT" flushall > /dev/null; start_parley "$mode-$round" serve "$port" --loops 1 "${common[@]}" --store "redis://127.0.0.1:$REDIS_PORT" ;;
    esac
    redis_before=$(redis_cpu)
    PARLEY_LOAD_API_KEY="$KEY" run "$mode-$round" hold "$SESSIONS" --url "ws://127.0.0.1:$port/v1/realtime" --hold-seconds "$HOLD" --rate "$RATE" --processes 1 || true
    # The shared count answered throughout (1; absent for the process alone), and nothing was refused.
    shared=$(metric "$port" parley_tenant_shared_count_up)
    for line in "connect to 101" "server refused" "client CPU"; do
      { grep -m1 "$line" "$OUT/$mode-$round.txt" || echo "  $line: missing"; } | sed "s/^/$mode run $round: /" | tee -a "$OUT/summary.txt"
    done
    echo "$mode run $round:   shared count up: ${shared:-n/a}; Redis CPU over the run: $(awk -v a="$(redis_cpu)" -v b="$redis_before" 'BEGIN { printf "%.2f s", a - b }')" | tee -a "$OUT/summary.txt"
    stop "$mode-$round" || true
    sleep 1
  done
done
grep -rlF -e "$KEY" "$OUT" && die "a credential reached the reports"
echo "bench-tenants: steal (vmstat st) over the run: $(steal)" | tee -a "$OUT/summary.txt"
echo "bench-tenants: reports in $OUT"
