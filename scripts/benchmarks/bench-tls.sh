#!/usr/bin/env bash
# TLS figures, each beside its plain-WebSocket twin in the same run: resident memory per idle wss
# session at 10,000 sessions; echo throughput and latency over wss and ws at 100 and 1,000
# connections; and full handshakes (TCP + TLS + WebSocket upgrade) per second of server CPU, with an
# ECDSA P-256 and an RSA-2048 certificate, on one loop (one core).
# Loopback only; every run is bounded. The load client shares the cores with the server (and does
# its own half of every handshake): its CPU is reported beside each figure.
#
#   HOLD=10000 ECHO_SECONDS=10 HANDSHAKES=5000 PORT=9300 scripts/benchmarks/bench-tls.sh [OUT_DIR]
set -euo pipefail
PORT="${PORT:-9300}"
HOLD="${HOLD:-10000}"
ECHO_SECONDS="${ECHO_SECONDS:-10}"
HANDSHAKES="${HANDSHAKES:-5000}"
LOOPS="${LOOPS:-2}"
OUT="${1:-LoadTests/reports/tls-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
mkdir -p "$OUT/certs"

# Self-signed certificates for 127.0.0.1; the load client trusts them through --ca.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$OUT/certs/ec.key" -out "$OUT/certs/ec.pem" >/dev/null 2>&1
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$OUT/certs/rsa.key" -out "$OUT/certs/rsa.pem" >/dev/null 2>&1

# echo_run NAME SERVER_PID options...: an echo run, then the server's CPU seconds over it (warm-up
# included): with the client's CPU, it shows who used the two cores.
echo_run() {
  local name=$1 server=$2; shift 2
  local before after
  before=$(cpu "$server")
  run "$name" echo "$@" || true
  after=$(cpu "$server")
  awk -v a="$after" -v b="$before" -v name="$name" \
    'BEGIN { printf "%s: server CPU %.2f s over the run\n", name, a - b }' | tee -a "$OUT/$name.txt" "$OUT/server-cpu.txt"
}

ec=(--tls-cert "$OUT/certs/ec.pem" --tls-key "$OUT/certs/ec.key")

# Idle sessions and echo: a wss server and a ws server, two loops each, one after the other.
start_parley wss serve "$PORT" --loops "$LOOPS" "${ec[@]}"
wss=$pid
run "hold-wss-$HOLD" hold "$HOLD" --url "wss://127.0.0.1:$PORT/echo" --ca "$OUT/certs/ec.pem" --hold-seconds 5 || true
sleep 2
echo_run echo-wss-100 "$wss" --url "wss://127.0.0.1:$PORT/echo" --ca "$OUT/certs/ec.pem" --connections 100 --duration "$ECHO_SECONDS"
echo_run echo-wss-1000 "$wss" --url "wss://127.0.0.1:$PORT/echo" --ca "$OUT/certs/ec.pem" --connections 1000 --duration "$ECHO_SECONDS"
stop wss || true

start_parley ws serve "$((PORT + 1))" --loops "$LOOPS"
ws=$pid
run "hold-ws-$HOLD" hold "$HOLD" --url "ws://127.0.0.1:$((PORT + 1))/echo" --hold-seconds 5 || true
sleep 2
echo_run echo-ws-100 "$ws" --url "ws://127.0.0.1:$((PORT + 1))/echo" --connections 100 --duration "$ECHO_SECONDS"
echo_run echo-ws-1000 "$ws" --url "ws://127.0.0.1:$((PORT + 1))/echo" --connections 1000 --duration "$ECHO_SECONDS"
stop ws || true

# Handshakes per core: one loop, so the server uses at most one core; the figure is handshakes
# divided by the server's CPU seconds over the run (connect, upgrade and close of each).
: > "$OUT/handshakes.txt"
for key in ec rsa; do
  port=$((PORT + 2))
  start_parley "handshake-$key" serve "$port" --loops 1 --tls-cert "$OUT/certs/$key.pem" --tls-key "$OUT/certs/$key.key"
  before=$(cpu "$pid")
  run "handshakes-$key" hold "$HANDSHAKES" --url "wss://127.0.0.1:$port/echo" --ca "$OUT/certs/$key.pem" \
    --hold-seconds 0 --rate 20000 || true
  after=$(cpu "$pid")
  handshake_rate "$key" "$HANDSHAKES" "$before" "$after" | tee -a "$OUT/handshakes.txt"
  stop "handshake-$key" || true
done
echo "bench-tls: reports in $OUT"
