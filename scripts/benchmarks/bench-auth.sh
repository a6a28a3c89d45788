#!/usr/bin/env bash
# What authentication costs at the upgrade, side by side in one run: no auth, an API key
# (SHA-256 and a constant-time compare), an ES256 JWT presented again (its signature remembered:
# a digest and a lookup), and an ES256 JWT verified every time (--jwt-cache 0: an ECDSA P-256
# verification per upgrade, as for tokens each used once).
#  - Handshakes per core: one loop, HANDSHAKES Realtime sessions opened and closed; the figure is
#    sessions divided by the server's CPU seconds over the run (connect, upgrade, session.created).
#  - The 10,000-session connect rate: two loops, the client as fast as it goes, RUNS rounds with the
#    three servers in turn (a fresh server for each run).
# Loopback only; every run is bounded. The client shares the two cores: its CPU is in each report,
# and vmstat (for steal, `st`) runs throughout.
#
#   HANDSHAKES=10000 SESSIONS=10000 RUNS=2 PORT=9650 scripts/benchmarks/bench-auth.sh [OUT_DIR]
set -euo pipefail
PORT="${PORT:-9650}"
HANDSHAKES="${HANDSHAKES:-10000}"
SESSIONS="${SESSIONS:-10000}"
RUNS="${RUNS:-2}"
OUT="${1:-LoadTests/reports/auth-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat

# The credentials: a key, and an ES256 key pair with a token for tenant "bench" (no limits, so
# only the signature and claim checks are measured). Kept out of the reports.
CREDS="$WORK"
KEY="sk-bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"$BIN/parley" token --new-key es256 --key "$CREDS/jwt.pem" > /dev/null
TOKEN="$("$BIN/parley" token --key "$CREDS/jwt.pem" --sub bench --ttl 3600)"

common=(--log-level warning --transcriber none --synthesizer none)
# serve MODE NAME PORT LOOPS: a server for MODE (none, key, jwt, jwt-uncached); sets $pid and $credential.
serve() {
  local mode=$1 name=$2 port=$3 loops=$4
  case "$mode" in
    none) credential=""; start_parley "$name" serve "$port" --loops "$loops" "${common[@]}" ;;
    key) credential="$KEY"; PARLEY_API_KEY="$KEY" start_parley "$name" serve "$port" --loops "$loops" "${common[@]}" ;;
    jwt) credential="$TOKEN"; start_parley "$name" serve "$port" --loops "$loops" "${common[@]}" --jwt-public-key "$CREDS/jwt.pub.pem" ;;
    jwt-uncached) credential="$TOKEN"; start_parley "$name" serve "$port" --loops "$loops" "${common[@]}" --jwt-public-key "$CREDS/jwt.pub.pem" --jwt-cache 0 ;;
  esac
}

: > "$OUT/summary.txt"
for mode in none key jwt jwt-uncached; do
  port=$((PORT + 1))
  serve "$mode" "handshake-$mode" "$port" 1
  before=$(cpu "$pid")
  PARLEY_LOAD_API_KEY="$credential" run "handshakes-$mode" hold "$HANDSHAKES" --url "ws://127.0.0.1:$port/v1/realtime" --hold-seconds 0 --rate 20000 || true
  after=$(cpu "$pid")
  handshake_rate "handshakes $mode" "$HANDSHAKES" "$before" "$after" | tee -a "$OUT/summary.txt"
  stop "handshake-$mode" || true
done

for round in $(seq "$RUNS"); do
  for mode in none key jwt jwt-uncached; do
    port=$((PORT + 2))
    serve "$mode" "connect-$mode-$round" "$port" 2
    PARLEY_LOAD_API_KEY="$credential" run "connect-$mode-$round" hold "$SESSIONS" --url "ws://127.0.0.1:$port/v1/realtime" --hold-seconds 2 --rate 50000 || true
    grep -m1 "connect rate" "$OUT/connect-$mode-$round.txt" | sed "s/^/connect $mode run $round: /" | tee -a "$OUT/summary.txt"
    grep -m1 "client CPU" "$OUT/connect-$mode-$round.txt" | sed "s/^/connect $mode run $round: /" >> "$OUT/summary.txt"
    stop "connect-$mode-$round" || true
    sleep 1
  done
done
# Nothing secret in what is kept.
grep -rlF -e "$KEY" -e "$TOKEN" "$OUT" && die "a credential reached the reports"
echo "bench-auth: steal (vmstat st) over the run: $(steal)" | tee -a "$OUT/summary.txt"
echo "bench-auth: reports in $OUT"
